/* A program that is mostly off the CPU: it sleeps in short naps and syncs writes to a file,
   for hone diagnose's off-CPU test. Usage: wait_sleep SECONDS FILE */
#include <fcntl.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

__attribute__((noinline)) static void nap_between_requests(void) {
    struct timespec ts = {0, 20 * 1000 * 1000};
    nanosleep(&ts, NULL);
}

__attribute__((noinline)) static void write_and_sync(int fd) {
    static char block[4096];
    if (write(fd, block, sizeof block) < 0)
        exit(1);
    fdatasync(fd);
}

int main(int argc, char **argv) {
    double seconds = argc > 1 ? atof(argv[1]) : 5;
    int fd = open(argc > 2 ? argv[2] : "wait_sleep.out", O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0)
        return 1;
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    do {
        nap_between_requests();
        write_and_sync(fd);
        clock_gettime(CLOCK_MONOTONIC, &now);
    } while (now.tv_sec - start.tv_sec + (now.tv_nsec - start.tv_nsec) / 1e9 < seconds);
    close(fd);
    return 0;
}
