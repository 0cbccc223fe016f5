/* Two threads contending on one mutex, for hone diagnose's lock test.
   Each holds `counter_lock` while it works and then naps (as across I/O), so the other waits in
   futex. The nap keeps the lock the bottleneck on a busy machine too: with work alone, the
   threads wait for a CPU rather than for the lock once other work takes the CPUs.
   Usage: lock_contend SECONDS */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

pthread_mutex_t counter_lock = PTHREAD_MUTEX_INITIALIZER;
volatile unsigned long counter;
static volatile int stop;

__attribute__((noinline)) static void work_under_lock(void) {
    for (int i = 0; i < 200000; i++)
        counter = counter * 2862933555777941757UL + 3037000493UL;
}

__attribute__((noinline)) static void *contend(void *arg) {
    (void)arg;
    struct timespec nap = {0, 500000}; /* 0.5 ms, twice the work's 0.23 ms */
    while (!stop) {
        pthread_mutex_lock(&counter_lock);
        work_under_lock();
        nanosleep(&nap, NULL);
        pthread_mutex_unlock(&counter_lock);
    }
    return NULL;
}

int main(int argc, char **argv) {
    double seconds = argc > 1 ? atof(argv[1]) : 5;
    pthread_t a, b;
    pthread_create(&a, NULL, contend, NULL);
    pthread_create(&b, NULL, contend, NULL);
    struct timespec ts = {(time_t)seconds, (long)((seconds - (time_t)seconds) * 1e9)};
    nanosleep(&ts, NULL);
    stop = 1;
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    return 0;
}
