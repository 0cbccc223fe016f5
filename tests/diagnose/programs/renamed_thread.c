/* A process whose worker thread is born late and renames itself (as Java's named threads and
 * prctl users do), then sleeps in short naps: every wake-up comes from a timer, none from the
 * process's own threads. The thread is born when a line arrives on stdin; it prints its tid. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

static void *napper(void *arg) {
    (void)arg;
    prctl(PR_SET_NAME, "renamed-nap", 0, 0, 0);
    printf("%d\n", gettid());
    fflush(stdout);
    struct timespec nap = {0, 2 * 1000 * 1000};
    for (int i = 0; i < 1000; i++) nanosleep(&nap, NULL);
    return NULL;
}

int main(void) {
    getchar();
    pthread_t thread;
    pthread_create(&thread, NULL, napper, NULL);
    pthread_join(thread, NULL);
    return 0;
}
