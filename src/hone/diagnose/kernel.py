"""Where a process's on-CPU time in the kernel goes: the network stack, files, memory, the rest.

A server such as nginx under load spends most of its CPU in system calls and the softirqs they
trigger; its hottest function is a kernel one, and rebuilding the program with other compiler
flags changes none of it. What can change it depends on the part of the kernel: network
sysctls, interrupt placement and the server's own settings (sendfile, keep-alive, worker
count) for the network stack; fewer opens and stats (a cache of open files) for files; fewer
page faults for memory.

Each on-CPU sample whose innermost frame is the kernel's is put in one group by the kernel
frames on its stack (frame-pointer stacks include them): any network frame makes it
`network` (a write to a socket passes through vfs_writev first), `unix` when the only socket
family on the stack is the Unix domain's (a local client: psql and pgbench through
PostgreSQL's socket, php-fpm behind nginx, redis-cli -s), whose time no TCP or NIC setting
touches, else a page fault or mapping
frame `memory`, else an interrupt that came while the process ran in user space `interrupts`
(timer ticks and their softirqs, preemption; perf's own sampling interrupts at a high -F: not
the process's doing), else the scheduler switching the process out and back in `switch` (a
call that blocked: epoll_wait, a futex wait; the switch runs with interrupts off, so a sample
due meanwhile is taken as it ends, in finish_task_switch), else a file system frame or a file
system call `files`, else `other`.
The system call is named by the kernel frame right under the syscall entry (`__x64_sys_openat`
-> openat), or `page fault`, `softirq`, `interrupt` when the kernel ran without one."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from hone.diagnose.fold import Frame, is_kernel
from hone.diagnose.profile import Profile

GROUPS = ("network", "unix", "files", "memory", "interrupts", "switch", "other")

_NETWORK = re.compile(
    r"^_*(tcp|udp|inet6?|ipv6|ip6?|sock|sk|skb|netif|napi|unix|dev_queue|dev_hard|neigh|nf|net|"
    r"sys_send|sys_recv|sys_accept|sys_connect)(_|$)"
)
#: The IP stack and the devices under it: a socket frame with none of these on its stack is a
#: Unix-domain socket's (unix_stream_sendmsg, unix_dgram_recvmsg, ...), if a unix_ frame says so.
_INET = re.compile(
    r"^_*(tcp|udp|inet6?|ipv6|ip6?|netif|napi|dev_queue|dev_hard|neigh|nf|net_rx|sctp)(_|$)|"
    r"^(raw|rawv6|packet)_(sendmsg|recvmsg|rcv)"
)
_UNIX = re.compile(r"^_*unix_")
_MEMORY = re.compile(
    r"^(asm_)?exc_page_fault$|^handle_mm_fault$|^__handle_mm_fault$|^do_(anonymous|wp|"
    r"huge_pmd_anonymous|read|fault|swap)_page|^do_mmap$|^__vm_munmap$|^do_brk|^__do_sys_brk$|"
    r"^__x64_sys_(mmap|munmap|brk|madvise|mprotect)$"
)
_FILES = re.compile(
    r"^_*(vfs|ext4|xfs|btrfs|filemap|generic_file|iomap|path|link_path|do_filp|dput|d_alloc|"
    r"lookup|do_sys_open|alloc_file|fsnotify|fput)|^__x64_sys_(openat2?|open|close|newfstatat|"
    r"newfstat|newstat|statx|read|pread64|write|pwrite64|getdents64|lseek|fsync|fdatasync|"
    r"sendfile64)$|^__do_sys_(newfstatat|newfstat|newstat|statx)$"
)
_ENTRY = ("do_syscall_64", "x64_sys_call")
_INTERRUPT = ("asm_sysvec_", "sysvec_", "asm_common_interrupt", "common_interrupt", "irq_")
_PREFIXES = ("__x64_sys_", "__do_sys_", "__se_sys_", "__sys_", "ksys_", "do_")


@dataclass
class KernelTime:
    """The kernel's share of the on-CPU samples, by group and by system call."""

    samples: int = 0  # every on-CPU sample
    kernel: int = 0  # those whose innermost frame is the kernel's
    groups: dict[str, int] = field(default_factory=dict)  # group -> samples
    calls: dict[str, dict[str, int]] = field(default_factory=dict)  # group -> {syscall: n}
    functions: dict[str, int] = field(default_factory=dict)  # kernel leaf -> samples

    @property
    def share(self) -> float:
        return self.kernel / self.samples if self.samples else 0.0

    def group_share(self, group: str) -> float:
        return self.groups.get(group, 0) / self.samples if self.samples else 0.0

    def top_calls(self, group: str, n: int = 3) -> list[tuple[str, float]]:
        """The system calls (or `softirq`, `page fault`) of a group, as shares of all samples."""
        calls = Counter(self.calls.get(group, {})).most_common(n)
        return [(name, count / self.samples) for name, count in calls]


def _group(frames: tuple[Frame, ...]) -> str:
    names = [f.function for f in frames if is_kernel(f.module)]
    if any(_NETWORK.search(n) for n in names):
        if any(_UNIX.search(n) for n in names) and not any(_INET.search(n) for n in names):
            return "unix"
        return "network"
    if any(_MEMORY.search(n) for n in names):
        return "memory"
    if names and names[0].startswith(_INTERRUPT) and not any(n in _ENTRY for n in names):
        return "interrupts"
    if any(n == "__schedule" or n.startswith("finish_task_switch") for n in names):
        return "switch"
    if any(_FILES.search(n) for n in names):
        return "files"
    return "other"


def _call(frames: tuple[Frame, ...]) -> str:
    """The system call the stack entered, by the kernel frame under the syscall entry; UNNAMED
    names a stack that stops in the entry, the exit or the dispatch of an unnamed call."""
    names = [f.function for f in frames]
    entries = [i for i, name in enumerate(names[:-1]) if name in _ENTRY]
    if entries:
        call = names[entries[-1] + 1]
        if call.startswith(("exit_to_user_mode", "syscall_exit")):
            return "syscall return"
        for prefix in _PREFIXES:
            if call.startswith(prefix):
                return call[len(prefix) :]
        return call
    if names[-1] in _ENTRY or any(n.startswith("entry_SYSCALL") for n in names):
        return "syscall entry"
    if any("page_fault" in n for n in names):
        return "page fault"
    if any("softirq" in n or n == "net_rx_action" for n in names):
        return "softirq"
    if any(n.startswith(_INTERRUPT) for n in names):
        return "interrupt"
    return "kernel"


#: What `_call` answers for a sample inside a system call whose stack does not name it: the
#: entry (the stack stops in do_syscall_64), the return to user space, or kernel code reached
#: from a user frame whose callers the frame pointers lost (a retpoline thunk under `write`).
UNNAMED = frozenset({"syscall entry", "syscall return", "kernel", "x64_sys_call",
                     "syscall_trace_enter", "syscall_exit_work"})  # fmt: skip
#: The groups a system call's samples are charged to together.
_CALL_GROUPS = ("network", "unix", "files", "switch", "other")


def _unnamed(call: str) -> bool:
    """Whether a sample's call is not named by its stack (UNNAMED, or an interrupt that came
    during the entry: its frame is the one under do_syscall_64)."""
    return call in UNNAMED or call.startswith(_INTERRUPT)


def _caller(thread: str, frames: tuple[Frame, ...]) -> tuple:
    """The user-space stack a sample entered the kernel from (with its thread)."""
    user = [f for f in frames if not is_kernel(f.module)]
    return (thread, *user)


def _charged(samples: list[tuple[tuple, str, str, int]]) -> list[tuple[str, str, int]]:
    """Each sample's (group, call), charged to the system call it belongs to. The samples of
    one call from one user stack go to one group, the one most of them show: a 1-byte write
    spends its time in the entry and exit (`do_syscall_64` alone on the stack), `fdget_pos`
    and `vfs_write`, and only the last is a file system frame, so `write` was split between
    files and other work. A sample that stops in the entry or the exit, or whose stack lost
    the call, is charged to the call that the same user stack made most."""
    known: dict[tuple, Counter] = {}
    votes: dict[tuple, Counter] = {}  # (caller, call) -> the groups its named samples show
    for caller, group, call, count in samples:
        if not _unnamed(call):
            known.setdefault(caller, Counter())[call] += count
            if group in _CALL_GROUPS:
                votes.setdefault((caller, call), Counter())[group] += count
    charged = []
    for caller, group, call, count in samples:
        if _unnamed(call) and caller in known:
            call = known[caller].most_common(1)[0][0]
        if group in _CALL_GROUPS and (caller, call) in votes:
            group = votes[(caller, call)].most_common(1)[0][0]
        charged.append((group, call, count))
    return charged


#: The kernel's syscall slow path: taken by every call of every process while a syscall
#: tracepoint is enabled (hone's lock recorder enables the futex ones, its call counter
#: raw_syscalls:sys_enter), whatever the call.
SLOW_PATH = ("syscall_trace_enter", "syscall_exit_work")
#: The code that runs a tracepoint for perf: the probes perf attaches (`perf_trace_sched_switch`,
#: `perf_syscall_enter`) and what they call.
_TRACING = ("perf_", "__perf", "trace_", "__trace", "ftrace_", "__bpf_trace")


def traced(frames: tuple[Frame, ...]) -> bool:
    """Whether a sample is the tracing's own cost: in a tracepoint probe of perf's, or in the
    syscall slow path itself (its leaf, or its callee tracing code; seccomp or audit work under
    it is the process's)."""
    names = [f.function for f in frames if is_kernel(f.module)]
    if any(n.startswith(("perf_trace_", "perf_syscall_")) for n in names):
        return True
    slow = [i for i, n in enumerate(names) if n in SLOW_PATH]
    if not slow:
        return False
    after = names[slow[-1] + 1 :]
    return not after or after[0].startswith(_TRACING)


def without_tracing(profile: Profile) -> tuple[Profile, int]:
    """The profile without the tracing's own samples, and how many those were: the cost of
    the measurement is not the process's time."""
    kept = {key: n for key, n in profile.stacks.items() if not traced(key[1])}
    cut = profile.total - sum(kept.values())
    if not cut:
        return profile, 0
    return Profile(stacks=kept, event=profile.event, frequency_hz=profile.frequency_hz,
                   duration_s=profile.duration_s, target=profile.target), cut  # fmt: skip


def split(profile: Profile) -> KernelTime:
    """Count the profile's samples in the kernel by group, system call and leaf function."""
    result = KernelTime(samples=profile.total)
    calls: dict[str, Counter] = {}
    groups: Counter = Counter()
    functions: Counter = Counter()
    samples = []
    for (thread, frames), count in profile.stacks.items():
        if not frames or not is_kernel(frames[-1].module):
            continue
        result.kernel += count
        samples.append((_caller(thread, frames), _group(frames), _call(frames), count))
        functions[frames[-1].function] += count
    for group, call, count in _charged(samples):
        groups[group] += count
        calls.setdefault(group, Counter())[call] += count
    result.groups = dict(groups)
    result.calls = {g: dict(c) for g, c in calls.items()}
    result.functions = dict(functions)
    return result
