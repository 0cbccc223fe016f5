/* Tiny system calls in a loop: `write` (1-byte writes to /dev/null), `getppid`, or `pipe`
   (a child writes a pipe full of bytes, the parent reads them one at a time).
   Usage: sys_loop MODE SECONDS */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "write";
    double end = now() + (argc > 2 ? atof(argv[2]) : 5);
    long calls = 0;
    char byte = 'x';
    if (strcmp(mode, "pipe") == 0) {
        int fds[2];
        if (pipe(fds) != 0) return 1;
        if (fork() == 0) {
            char block[4096];
            memset(block, 'x', sizeof block);
            close(fds[0]);
            while (write(fds[1], block, sizeof block) > 0) {}
            _exit(0);
        }
        close(fds[1]);
        while (now() < end)
            for (int i = 0; i < 10000; i++, calls++)
                if (read(fds[0], &byte, 1) != 1) return 1;
        return 0;
    }
    int fd = open("/dev/null", O_WRONLY);
    while (now() < end) {
        for (int i = 0; i < 10000; i++, calls++) {
            if (mode[0] == 'w') {
                if (write(fd, &byte, 1) != 1) return 1;
            } else {
                syscall(SYS_getppid);
            }
        }
    }
    printf("%ld calls\n", calls);
    return 0;
}
