/* A CPU-bound program with a known profile: hot_work does 70 % of the loop iterations and
 * cold_work 30 % (argv[2] sets hot_work's percentage), both called from main through run_round.
 * Runs until it has used argv[1] seconds of CPU time (default 2), so a busy machine delays it
 * but does not thin its profile.
 * Built with -O1 -fno-omit-frame-pointer -fno-inline so each function keeps its own frame. */
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

/* Called at the end of each worker so that they are not leaf functions: gcc gives leaf
 * functions no frame even with -fno-omit-frame-pointer, and frame-pointer unwinding would then
 * skip their caller (run_round). */
void keep(unsigned long value) {
    sink = value;
}

/* Both workers start on a 64-byte boundary, so their identical loops sit the same way in the
 * instruction cache and cost the same per iteration (unaligned, hot_work measured ~74 %). */
__attribute__((aligned(64))) unsigned long hot_work(unsigned long n) {
    unsigned long acc = 0;
    for (unsigned long i = 0; i < n; i++) {
        acc += i * 2654435761UL;
        sink = acc;
    }
    keep(acc);
    return acc;
}

__attribute__((aligned(64))) unsigned long cold_work(unsigned long n) {
    unsigned long acc = 0;
    for (unsigned long i = 0; i < n; i++) {
        acc += i * 2654435761UL;
        sink = acc;
    }
    keep(acc);
    return acc;
}

static unsigned long hot_percent = 70;

void run_round(void) {
    hot_work(hot_percent * 1000);
    cold_work((100 - hot_percent) * 1000);
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    double seconds = argc > 1 ? atof(argv[1]) : 2.0;
    if (argc > 2) hot_percent = strtoul(argv[2], NULL, 10) % 101;
    double end = now() + seconds;
    while (now() < end) {
        for (int i = 0; i < 100; i++) run_round();
    }
    return 0;
}
