/* A heap of MB megabytes, filled once, then read page by page at random until the walk has
 * used SECONDS of CPU time, and at least three times what the fill used: the large-heap case of
 * huge pages (a TLB covers a few MB; this walks far beyond it). CPU time, not the clock, and
 * measured against the fill: its page faults are in the diagnosis too (0.8 to 3 s of CPU for
 * 1.2 GB under perf, by machine), and a walk shorter than them let the kernel's page faults come
 * first instead of the walk. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    size_t mb = argc > 1 ? strtoul(argv[1], NULL, 10) : 64;
    double seconds = argc > 2 ? atof(argv[2]) : 5.0;
    size_t size = mb << 20;
    unsigned char *heap = malloc(size);
    if (!heap) return 1;
    double start = now();
    memset(heap, 1, size);
    double filled = now();
    if (seconds < 3 * (filled - start)) seconds = 3 * (filled - start);
    uint64_t x = 88172645463325252ull, sum = 0;
    double end = filled + seconds;
    while (now() < end) {
        for (int i = 0; i < 100000; i++) {
            x ^= x << 13; x ^= x >> 7; x ^= x << 17;
            sum += heap[x % size];
        }
    }
    printf("%llu\n", (unsigned long long)sum);
    return 0;
}
