"""Applying profiles changes real sysctl, sysfs and limits.conf values as a transaction;
rollback restores them; a rejected value, a bad key or a kill in the middle leaves nothing
changed once rolled back."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from profiles_live import DIRTY, LIMITS, SWAPPINESS, THP, read_live, selected

from hone.errors import HoneError
from hone.journal import Journal
from hone.profiles import (
    ProfileLibrary,
    active_profile,
    apply,
    apply_profile,
    check,
    check_profile,
    rollback,
)


def test_apply_check_and_rollback(folder: Path, live) -> None:
    profile = ProfileLibrary().load("web")
    values = {(i.section, i.key): i.value for i in profile.items}
    assert values["sysctl", "vm.swappiness"] == "17"  # the including profile wins
    result = apply_profile(profile)
    statuses = {(o.item.section, o.item.key): o.status for o in result.outcomes}
    assert statuses["sysctl", "vm.swappiness"] == "set"
    assert statuses["tip", "use fewer threads"] == "advice"
    assert statuses["bootloader.grub2", "hugepages"] == "skipped"  # no GRUB on this machine
    assert SWAPPINESS.read_text().strip() == "17" and DIRTY.read_text().strip() == "7"
    assert selected(THP) != live[2]
    assert active_profile() == "web"
    outcomes = check_profile(profile)
    assert {o.status for o in outcomes if o.item.section in ("sysctl", "sysfs")} == {"matches"}
    rollback()
    assert read_live() == live
    assert active_profile() is None
    assert {o.status for o in check_profile(profile) if o.item.section == "sysctl"} == {"differs"}


def test_rollback_says_which_later_change_it_overwrote(folder: Path, live) -> None:
    apply("web")
    SWAPPINESS.write_text("23")  # an administrator's change since
    restored = rollback()
    assert read_live() == live
    changed = [line for line in restored if "overwrote a change" in line]
    assert changed == [
        f"sysctl:vm.swappiness = {live[0].strip()} (overwrote a change: it held '23', not the"
        " '17' hone had left: changed since)"
    ]


def test_applying_another_profile_rolls_back_the_first(folder: Path, live) -> None:
    (folder / "second.conf").write_text("[sysctl]\nvm.dirty_background_ratio = 6\n")
    apply("web")
    result = apply("second")
    assert result.previous == "web" and len(result.restored) == 3
    assert SWAPPINESS.read_text() == live[0] and selected(THP) == live[2]
    assert DIRTY.read_text().strip() == "6"
    rollback()
    assert read_live() == live


def test_already_set_values_are_left_alone(folder: Path, live) -> None:
    (folder / "same.conf").write_text(f"[sysctl]\nvm.swappiness = {live[0].strip()}\n")
    result = apply("same")
    assert [o.status for o in result.outcomes] == ["unchanged"]
    assert Journal.for_profiles().originals() == {}
    rollback()


def test_rejected_value_rolls_back_everything(folder: Path, live) -> None:
    (folder / "bad.conf").write_text(
        "[sysctl]\nvm.swappiness = 21\nvm.dirty_background_ratio = 7\n"
        "[sysfs]\nkernel/mm/transparent_hugepage/defrag = bogus\n"
    )
    with pytest.raises(HoneError, match=r"bogus: cannot set .*rolled back"):
        apply("bad")
    assert read_live() == live
    assert active_profile() is None


def test_a_failing_profile_leaves_the_previous_one_active(folder: Path, live) -> None:
    """The failed apply rolls back its own changes and applies the profile it replaced."""
    (folder / "bad.conf").write_text(
        "[sysctl]\nvm.dirty_background_ratio = 9\n"
        "[sysfs]\nkernel/mm/transparent_hugepage/defrag = bogus\n"
    )
    apply("web")
    web = read_live()
    with pytest.raises(HoneError, match="rolled back"):
        apply("bad")
    assert active_profile() == "web"
    assert read_live() == web
    rollback()
    assert read_live() == live


def test_bad_key_fails_before_any_change(folder: Path, live) -> None:
    (folder / "typo.conf").write_text("[sysctl]\nvm.swappiness = 22\nvm.swapiness = 1\n")
    with pytest.raises(HoneError, match=r"vm\.swapiness: cannot read.*nothing was changed"):
        apply("typo")
    assert read_live() == live
    assert Journal.for_profiles().records() == []  # not even a journal was started
    (folder / "limit.conf").write_text("[ulimit]\nroot.soft.nofiles = 10\n")
    with pytest.raises(HoneError, match="unknown limit 'nofiles'"):
        apply("limit")


def test_an_included_profiles_bad_item_is_named_where_it_is(folder: Path, live) -> None:
    """The error names the file and line of the item, not the profile that includes it: the
    user looked in the including file for a key that is not there."""
    base = folder / "include" / "typo.conf"
    base.write_text("[sysctl]\nvm.swappiness = 22\n\n# the typo\nvm.swapiness = 1\n")
    (folder / "outer.conf").write_text("[main]\ninclude = include-typo\n[sysctl]\n"
                                       "vm.dirty_background_ratio = 7\n")  # fmt: skip
    with pytest.raises(HoneError) as error:
        apply("outer")
    assert (error.value.file, error.value.line) == (str(base), 5)
    assert str(error.value).startswith(f"{base}:5: [sysctl] vm.swapiness: cannot read")
    base.write_text("[sysfs]\nkernel/mm/transparent_hugepage/defrag = bogus\n")
    with pytest.raises(HoneError, match="rolled back") as error:
        apply("outer")
    assert (error.value.file, error.value.line) == (str(base), 2)
    assert read_live() == live


def test_a_scheduler_setting_newer_kernels_moved_is_skipped_not_fatal(folder: Path, live) -> None:
    """A-Tune's throughput profiles set kernel.sched_min_granularity_ns, which Linux 5.13 moved
    to debugfs: the rest of the profile applies, and the outcome says why that one did not."""
    moved = Path("/proc/sys/kernel/sched_min_granularity_ns")
    (folder / "sched.conf").write_text(
        "[sysctl]\nkernel.sched_min_granularity_ns = 10000000\nvm.swappiness = 23\n"
    )
    statuses = {o.item.key: (o.status, o.detail) for o in apply("sched").outcomes}
    assert statuses["vm.swappiness"][0] == "set" and SWAPPINESS.read_text().strip() == "23"
    if moved.exists():  # a kernel before 5.13 still has it, and it is set like any other
        assert statuses["kernel.sched_min_granularity_ns"][0] in ("set", "unchanged")
    else:
        assert statuses["kernel.sched_min_granularity_ns"] == (
            "skipped",
            "not in this kernel: Linux 5.13 moved it to /sys/kernel/debug/sched",
        )
    rollback()
    assert read_live() == live


def test_missing_include_and_unknown_section(folder: Path) -> None:
    (folder / "lost.conf").write_text("[main]\ninclude = include-nowhere\n")
    with pytest.raises(HoneError, match="include 'include-nowhere': no profile named"):
        ProfileLibrary().load("lost")
    (folder / "odd.conf").write_text("[sysctl]\nvm.swappiness = 1\n\n[sysclt]\nvm.a = 1\n")
    with pytest.raises(HoneError, match=r"unknown section \[sysclt\]") as error:
        ProfileLibrary().load("odd")
    assert error.value.line == 4  # the header's line, in the user's file
    (folder / "loop.conf").write_text("[main]\ninclude = loop\n")
    with pytest.raises(HoneError, match="includes itself"):
        ProfileLibrary().load("loop")


def test_an_indented_line_is_refused_not_joined_to_the_value_above(folder: Path) -> None:
    """configparser takes an indented line as more of the value above: the profile would set
    vm.swappiness to "10\nvm.dirty_ratio = 5". The line is named instead."""
    (folder / "indented.conf").write_text(
        "[sysctl]\nvm.swappiness = 10\n\n# dirty pages\n\tvm.dirty_ratio = 5\n"
    )
    with pytest.raises(HoneError, match="indented line continues this value") as error:
        ProfileLibrary().load("indented")
    assert (error.value.line, error.value.key) == (5, "vm.swappiness")


def test_ulimit_script_systemctl_and_grub_sections(
    folder: Path, live, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scripts = tmp_path / "scripts" / "swappiness"
    scripts.mkdir(parents=True)
    (scripts / "get.sh").write_text("cat /proc/sys/vm/swappiness\n")
    (scripts / "set.sh").write_text('echo "$1" > /proc/sys/vm/swappiness\n')
    monkeypatch.setenv("HONE_SCRIPT_PATH", str(tmp_path / "scripts"))
    dropin = tmp_path / "grub.d" / "hone.cfg"
    monkeypatch.setenv("HONE_GRUB_DROPIN", str(dropin))
    limits_before = LIMITS.read_bytes()
    (folder / "mixed.conf").write_text(
        "[ulimit]\n{user}.soft.nofile = 54321\n"
        "[script]\nswappiness = 31\nprefetch = off\n"
        "[systemctl]\nhone-no-such-service = stop\n"
        "[bootloader.grub2]\nhugepages = 10\n"
        "[kernel_config]\nCONFIG_HZ = 100\n"
    )
    result = apply("mixed")
    statuses = {(o.item.section, o.item.key): o.status for o in result.outcomes}
    assert statuses == {
        ("ulimit", "root.soft.nofile"): "set",
        ("script", "swappiness"): "set",
        ("script", "prefetch"): "skipped",  # A-Tune's helper script is not here
        ("systemctl", "hone-no-such-service"): "unchanged",  # not running: already stopped
        ("bootloader.grub2", "hugepages"): "staged",
        ("kernel_config", "CONFIG_HZ"): result.outcomes[-1].status,
    }
    assert result.outcomes[-1].status in ("matches", "differs", "unknown")
    assert result.placeholders["user"] == ("root", "default")
    assert "root\tsoft\tnofile\t54321" in LIMITS.read_text()
    assert SWAPPINESS.read_text().strip() == "31"
    assert "hugepages=10" in dropin.read_text()
    staged = [o for o in check() if o.item.section == "bootloader.grub2"]
    assert staged[0].status == "staged"
    rollback()
    assert LIMITS.read_bytes() == limits_before
    assert read_live() == live
    assert not dropin.exists()


def test_what_can_never_be_written_is_refused_before_any_change(folder: Path, live) -> None:
    """A service to start where no systemd runs, a read-only sysctl, a state that is neither
    start nor stop: the items before them were set, then undone; the plan now refuses them, as
    a tuning run refuses such a knob before its baseline."""
    for name, body, reason in (
        ("svc", "[systemctl]\nhone-no-such-service = start\n", "systemd is not running"),
        ("ro", "[sysctl]\nkernel.ostype = Hone\n", "is read-only here"),
        ("state", "[systemctl]\nhone-no-such-service = restart\n", "is not start or stop"),
    ):
        (folder / f"{name}.conf").write_text(f"[sysctl]\nvm.swappiness = 23\n{body}")
        with pytest.raises(HoneError, match=f"{reason}.*nothing was changed"):
            apply(name)
        assert read_live() == live
        assert Journal.for_profiles().records() == []  # not even a journal was started


def test_kill_9_in_the_middle_then_rollback(folder: Path, live, hone_home: Path) -> None:
    (folder / "slow.conf").write_text(
        "[sysctl]\nvm.dirty_background_ratio = 9\nvm.swappiness = 25\n"
        "[sysfs]\nkernel/mm/transparent_hugepage/defrag = never\n"
    )
    code = (  # every set takes a second, so the kill lands between the first and the second
        "import time\nfrom hone.knobs.sysctl import SysctlActuator\n"
        "original = SysctlActuator.set\n"
        "def slow(self, value):\n    original(self, value)\n    time.sleep(1.0)\n"
        "SysctlActuator.set = slow\n"
        "from hone.profiles import apply\n"
        "apply('slow')\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code], env={**os.environ, "HONE_HOME": str(hone_home)}
    )
    deadline = time.monotonic() + 20
    while DIRTY.read_text().strip() != "9" and time.monotonic() < deadline:
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert DIRTY.read_text().strip() == "9"  # it had started changing things
    assert Journal.for_profiles().unfinished() is not None
    assert active_profile() == "slow"
    restored = rollback()
    assert restored == ["sysctl:vm.dirty_background_ratio = " + live[1].strip()]
    assert read_live() == live
    assert Journal.for_profiles().unfinished() is None


def _scheduler() -> Path | None:
    """The first disk whose queue offers mq-deadline and none (a virtio or NVMe disk)."""
    for path in sorted(Path("/sys/block").glob("*/queue/scheduler")):
        words = path.read_text().replace("[", " ").replace("]", " ").split()
        if {"mq-deadline", "none"} <= set(words):
            return path
    return None


def test_the_old_name_of_a_disk_scheduler_is_the_one_it_reads_back(folder: Path, live) -> None:
    """`deadline` (A-Tune's hpc-gatk4 profile, tuned's) selects mq-deadline, which the queue
    then reads: the profile applies and matches instead of failing its read-back and rolling
    back; a scheduler the kernel does not have is refused naming the ones it has."""
    path = _scheduler()
    assert path is not None, "no disk offers mq-deadline and none (this machine's vda does)"
    disk, original = path.parts[3], selected(path)
    try:
        path.write_text("none")
        (folder / "gatk.conf").write_text(
            f"[sysfs]\nblock/{disk}/queue/scheduler = deadline\n[sysctl]\nvm.swappiness = 23\n"
        )
        result = apply("gatk")
        first = result.outcomes[0]
        assert (first.status, first.detail) == ("set", "was none")
        assert selected(path) == "mq-deadline"
        assert {o.status for o in check()} == {"matches"}
        rollback()
        assert selected(path) == "none" and read_live() == live
        path.write_text("mq-deadline")
        assert apply("gatk").outcomes[0].status == "unchanged"  # nothing to journal or set
        rollback()
        path.write_text("none")
        (folder / "cfq.conf").write_text(f"[sysfs]\nblock/{disk}/queue/scheduler = cfq\n")
        with pytest.raises(HoneError, match=r"cannot set 'cfq': .*\(it offers: none mq-deadline"):
            apply("cfq")
        assert selected(path) == "none"
    finally:
        path.write_text(original)


def test_a_limit_without_a_line_is_shown_as_not_set(folder: Path, live) -> None:
    """A limit limits.conf has no line for reads empty: check said `live: ` and apply
    `(was )`."""
    (folder / "nofile.conf").write_text("[ulimit]\n@hone-probe.soft.nofile = 4096\n")
    (outcome,) = check("nofile")
    assert (outcome.status, outcome.detail) == ("differs", "live: not set")
    (outcome,) = apply("nofile").outcomes
    assert (outcome.status, outcome.detail) == ("set", "was not set")
    rollback()
    assert "@hone-probe" not in LIMITS.read_text()


def test_a_disks_scheduler_is_set_first_and_its_kind_of_settings_skipped(
    folder: Path, live
) -> None:
    """A-Tune's dfsio, spark, mysql and ceph profiles (16 of 64) were refused on a virtio disk:
    it has no device/queue_depth (a SCSI disk's), the scheduler it runs has no
    iosched/slice_idle (bfq's, which the same profile chooses), and Linux 5.13 moved
    kernel/debug/sched_features. And choosing the scheduler after nr_requests reset it: the
    apply said `set`, check said `differs`, and a rollback that put the scheduler back last
    left nr_requests at the scheduler's default, not the user's value."""
    queue = Path("/sys/block/loop0/queue")
    assert queue.is_dir() and "bfq" in (queue / "scheduler").read_text(), "loop0 offers bfq"
    scheduler, requests = selected(queue / "scheduler"), (queue / "nr_requests").read_text()
    try:
        (queue / "scheduler").write_text("mq-deadline")
        (queue / "nr_requests").write_text("64")  # the user's own, not mq-deadline's default
        (folder / "include" / "dfsio.conf").write_text(
            "[sysfs]\nblock/loop0/queue/nr_requests = 512\nblock/loop0/queue/iosched/slice_idle"
            " = 12\nblock/loop0/device/queue_depth = 32\nkernel/debug/sched_features = NO_X\n"
        )
        (folder / "dfsio.conf").write_text(
            "[main]\ninclude = include-dfsio\n[sysfs]\nblock/loop0/queue/scheduler = bfq\n"
        )
        outcomes = {o.item.key: (o.status, o.detail) for o in apply("dfsio").outcomes}
        assert outcomes["block/loop0/queue/scheduler"] == ("set", "was mq-deadline")
        assert outcomes["block/loop0/queue/nr_requests"] == ("set", "was 64")
        assert outcomes["block/loop0/queue/iosched/slice_idle"][0] == "set"
        depth = "loop0 has no queue depth to set (a SCSI or SATA disk's setting)"
        assert outcomes["block/loop0/device/queue_depth"] == ("skipped", depth)
        if not Path("/sys/kernel/debug/sched_features").exists():
            assert outcomes["kernel/debug/sched_features"][0] == "skipped"
        assert (queue / "nr_requests").read_text().strip() == "512"
        checked = {o.item.key: o.status for o in check()}
        assert checked["block/loop0/queue/nr_requests"] == "matches"
        assert checked["block/loop0/device/queue_depth"] == "skipped"
        restored = rollback()
        assert not [line for line in restored if "overwrote" in line]
        assert selected(queue / "scheduler") == "mq-deadline"
        assert (queue / "nr_requests").read_text().strip() == "64"
        (folder / "typo.conf").write_text("[sysfs]\nblock/loop0/queue/nr_request = 9\n")
        with pytest.raises(HoneError, match=r"nr_request: cannot read.*nothing was changed"):
            apply("typo")  # a key no disk has is still a typo
    finally:
        (queue / "scheduler").write_text(scheduler)
        (queue / "nr_requests").write_text(requests)


def test_a_write_only_trigger_is_skipped_not_fatal(folder: Path, live) -> None:
    """A-Tune's tomcat profile sets vm.drop_caches = 3, a trigger no one may read (root
    included): the profile was refused, `cannot read: Permission denied`. It holds no value to
    journal or roll back; it is skipped saying how to run it, and the rest applies."""
    (folder / "trigger.conf").write_text(
        "[sysctl]\nvm.drop_caches = 3\nvm.dirty_background_ratio = 7\n"
    )
    outcomes = {o.item.key: (o.status, o.detail) for o in apply("trigger").outcomes}
    assert outcomes["vm.dirty_background_ratio"][0] == "set"
    status, detail = outcomes["vm.drop_caches"]
    assert status == "skipped" and "run `sysctl -w vm.drop_caches=3`" in detail
    assert {o.item.key: o.status for o in check()}["vm.drop_caches"] == "skipped"
    rollback()
    assert read_live() == live


def test_a_device_named_in_the_environment_that_is_not_here_is_named(
    folder: Path, live, monkeypatch: pytest.MonkeyPatch
) -> None:
    """HONE_DISK=sdz on a machine without it: every item naming {disk} failed as a missing
    file (`block/sdz/queue/read_ahead_kb: cannot read`), which reads as the profile's fault.
    Shown (`info`), the profile may name another machine's devices."""
    (folder / "disk.conf").write_text("[sysfs]\nblock/{disk}/queue/read_ahead_kb = 64\n")
    for value in ("sdz", "../../etc"):
        monkeypatch.setenv("HONE_DISK", value)
        with pytest.raises(HoneError, match=rf"HONE_DISK={re.escape(value)}: no such disk here \("):
            apply("disk")
    monkeypatch.setenv("HONE_NETWORK", "eth-none")
    (folder / "net.conf").write_text("[script]\nethtool = -L {network} combined 2\n")
    with pytest.raises(HoneError, match="HONE_NETWORK=eth-none: no such interface here"):
        apply("net")
    assert ProfileLibrary().load("net").placeholders["network"] == ("eth-none", "from HONE_NETWORK")
    assert read_live() == live


def test_a_queue_depth_past_the_device_s_says_why(folder: Path, live) -> None:
    """A-Tune's mysql-ssd profile chooses no scheduler and 2048 requests: a virtio disk takes
    at most its own depth then, and the refusal said only `Invalid argument`."""
    queue = Path("/sys/block/loop0/queue")
    assert (queue.parent / "mq" / "0" / "nr_tags").exists(), "loop0 has a blk-mq queue"
    scheduler, requests = selected(queue / "scheduler"), (queue / "nr_requests").read_text()
    depth = (queue.parent / "mq" / "0" / "nr_tags").read_text().strip()
    (folder / "ssd.conf").write_text(
        "[sysctl]\nvm.swappiness = 23\n[sysfs]\nblock/loop0/queue/scheduler = none\n"
        f"block/loop0/queue/nr_requests = {int(depth) * 16}\n"
    )
    try:
        with pytest.raises(HoneError) as error:
            apply("ssd")
        assert f"(with scheduler none, a queue takes at most the device's depth, {depth})" in (
            str(error.value)
        )
        assert "every change of this profile was rolled back" in str(error.value)
        assert read_live() == live
    finally:
        (queue / "scheduler").write_text(scheduler)
        (queue / "nr_requests").write_text(requests)


def test_sigterm_in_the_middle_rolls_back_like_ctrl_c(folder: Path, live, hone_home: Path) -> None:
    """`timeout 5 hone profile apply NAME` or a `kill` in the middle left the profile half
    applied (Python's default for SIGTERM ends the process where it stands); Ctrl-C rolled
    it back, and left no profile active where one had been. Both now leave the machine as a
    failed apply does, the previous profile applied again; SIGTERM exits 143."""
    (folder / "slow.conf").write_text(
        "[sysctl]\nvm.dirty_background_ratio = 9\nvm.swappiness = 25\n"
    )
    apply("web")  # active before: it is what the stopped apply leaves, as a failed one does
    web = read_live()
    code = (  # the first set takes a second, so the signal lands between it and the second
        "import sys, time\nfrom hone.knobs.sysctl import SysctlActuator\n"
        "original = SysctlActuator.set\n"
        "def slow(self, value):\n    original(self, value)\n"
        "    if value == '9':\n        time.sleep(1.0)\n"
        "SysctlActuator.set = slow\n"
        "sys.argv = ['hone', 'profile', 'apply', 'slow']\n"
        "from hone.cli.main import run\nrun()\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code], env={**os.environ, "HONE_HOME": str(hone_home)},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    deadline = time.monotonic() + 20
    while DIRTY.read_text().strip() != "9" and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=20)
    assert proc.returncode == 143, err
    assert err.strip() == "hone: stopped by SIGTERM"
    assert (active_profile(), read_live()) == ("web", web)
    rollback()
    assert read_live() == live
