/* Two threads contending on one mutex, every name as long as a C++ or Java frame's, for the
   diagnosis page's lock table: the lock, the function that takes it and its caller.
   Usage: lock_long_names SECONDS */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

pthread_mutex_t storage_engine_transactional_write_ahead_log_commit_lock_guarding_the_segment_index =
    PTHREAD_MUTEX_INITIALIZER;
volatile unsigned long counter;
static volatile int stop;

__attribute__((noinline)) static void
storage_engine_write_ahead_log_append_record_while_holding_the_commit_lock(void) {
    pthread_mutex_lock(&storage_engine_transactional_write_ahead_log_commit_lock_guarding_the_segment_index);
    for (int i = 0; i < 200000; i++)
        counter = counter * 2862933555777941757UL + 3037000493UL;
    pthread_mutex_unlock(&storage_engine_transactional_write_ahead_log_commit_lock_guarding_the_segment_index);
}

__attribute__((noinline)) static void
storage_engine_write_ahead_log_flush_worker_loop_draining_the_pending_batches_forever(void) {
    while (!stop)
        storage_engine_write_ahead_log_append_record_while_holding_the_commit_lock();
}

static void *run(void *arg) {
    (void)arg;
    storage_engine_write_ahead_log_flush_worker_loop_draining_the_pending_batches_forever();
    return NULL;
}

int main(int argc, char **argv) {
    double seconds = argc > 1 ? atof(argv[1]) : 5;
    pthread_t a, b;
    pthread_create(&a, NULL, run, NULL);
    pthread_create(&b, NULL, run, NULL);
    struct timespec ts = {(time_t)seconds, (long)((seconds - (time_t)seconds) * 1e9)};
    nanosleep(&ts, NULL);
    stop = 1;
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    return 0;
}
