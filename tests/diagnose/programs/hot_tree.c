/* A CPU-bound program with a wide call tree, for realistic profiles: 32 distinct functions call
 * each other 8 levels deep, each picking one of two children from a pseudo-random seed, each
 * doing some work of its own, and some leaves make a system call (kernel frames). Thousands of
 * distinct stacks. Runs until it has used argv[1] seconds of CPU time (default 2), or, with
 * argv[2] = ROUNDS, exactly that much work; then argv[3], when given, is a file that gets the
 * run's own wall and CPU time in seconds (for measuring a profiler's overhead on it).
 * Built with -O1 -fno-omit-frame-pointer -fno-inline. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define WIDTH 32
#define DEPTH 8

typedef unsigned long (*node_fn)(int depth, unsigned long seed);
static node_fn nodes[WIDTH];
static volatile unsigned long sink;

void keep(unsigned long value) {
    sink = value;
}

static unsigned long work(unsigned long n) {
    unsigned long acc = 0;
    for (unsigned long i = 0; i < n; i++) {
        acc += i * 2654435761UL;
        sink = acc;
    }
    return acc;
}

#define NODE(i)                                                                  \
    unsigned long node_##i(int depth, unsigned long seed) {                      \
        unsigned long acc = work(200 + (seed & 0x3ff));                          \
        unsigned long next = seed * 6364136223846793005UL + 1442695040888963407UL; \
        if (depth > 0)                                                           \
            acc += nodes[((i) * 5 + 1 + ((next >> 33) & 1)) % WIDTH](depth - 1, next); \
        else if (((next >> 40) & 7) == 0)                                        \
            acc += (unsigned long)getppid();                                     \
        keep(acc);                                                               \
        return acc;                                                              \
    }

NODE(0) NODE(1) NODE(2) NODE(3) NODE(4) NODE(5) NODE(6) NODE(7)
NODE(8) NODE(9) NODE(10) NODE(11) NODE(12) NODE(13) NODE(14) NODE(15)
NODE(16) NODE(17) NODE(18) NODE(19) NODE(20) NODE(21) NODE(22) NODE(23)
NODE(24) NODE(25) NODE(26) NODE(27) NODE(28) NODE(29) NODE(30) NODE(31)

static double seconds_of(clockid_t clock) {
    struct timespec ts;
    clock_gettime(clock, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static unsigned long round_of_calls(unsigned long seed) {
    for (int i = 0; i < 200; i++) {
        seed = seed * 6364136223846793005UL + 1442695040888963407UL;
        nodes[(seed >> 35) % WIDTH](DEPTH, seed);
    }
    return seed;
}

int main(int argc, char **argv) {
    node_fn all[WIDTH] = {
        node_0, node_1, node_2, node_3, node_4, node_5, node_6, node_7,
        node_8, node_9, node_10, node_11, node_12, node_13, node_14, node_15,
        node_16, node_17, node_18, node_19, node_20, node_21, node_22, node_23,
        node_24, node_25, node_26, node_27, node_28, node_29, node_30, node_31,
    };
    for (int i = 0; i < WIDTH; i++) nodes[i] = all[i];
    double seconds = argc > 1 ? atof(argv[1]) : 2.0;
    unsigned long seed = 12345;
    if (argc > 2) {
        long rounds = atol(argv[2]);
        double start = seconds_of(CLOCK_MONOTONIC);
        double start_cpu = seconds_of(CLOCK_PROCESS_CPUTIME_ID);
        for (long r = 0; r < rounds; r++) seed = round_of_calls(seed);
        double elapsed = seconds_of(CLOCK_MONOTONIC) - start;
        double cpu = seconds_of(CLOCK_PROCESS_CPUTIME_ID) - start_cpu;
        FILE *out = argc > 3 ? fopen(argv[3], "w") : NULL;
        if (out) {
            fprintf(out, "%.6f %.6f\n", elapsed, cpu);
            fclose(out);
        }
        return 0;
    }
    while (seconds_of(CLOCK_PROCESS_CPUTIME_ID) < seconds) seed = round_of_calls(seed);
    return 0;
}
