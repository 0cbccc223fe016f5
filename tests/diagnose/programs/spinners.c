/* N threads, each busy in spin_work for SECONDS of wall-clock time: a CPU-bound process that
 * wants N CPUs, for `hone diagnose --system` to find among the machine's processes.
 * Usage: spinners N SECONDS. Built with -fno-omit-frame-pointer -fno-inline like the others. */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;
static double seconds = 5;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

void keep(unsigned long value) {
    sink = value;
}

unsigned long spin_work(unsigned long n) {
    unsigned long acc = 0;
    for (unsigned long i = 0; i < n; i++)
        acc += i * 2654435761UL;
    keep(acc);
    return acc;
}

static void *spin(void *unused) {
    (void)unused;
    double end = now() + seconds;
    while (now() < end)
        spin_work(100000);
    return NULL;
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 1;
    seconds = argc > 2 ? atof(argv[2]) : 5;
    pthread_t threads[64];
    for (int i = 1; i < n && i < 64; i++)
        pthread_create(&threads[i], NULL, spin, NULL);
    spin(NULL);
    for (int i = 1; i < n && i < 64; i++)
        pthread_join(threads[i], NULL);
    return 0;
}
