/* The program whose build flags are tuned: three kernels a server spends time in (sorting
 * records, hashing keys, a dense numeric loop), on fixed pseudo-random data. It prints its own
 * run time, so the build is not counted. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define N_RECORDS 500000
#define N_KEYS 500000
#define MATRIX 800

static uint64_t state = 88172645463325252ULL;
static uint64_t next(void) { state ^= state << 13; state ^= state >> 7; state ^= state << 17; return state; }

typedef struct { uint32_t key; uint32_t value; } record;

static void merge_sort(record *items, record *scratch, size_t n) {
    if (n < 16) {
        for (size_t i = 1; i < n; i++) {
            record item = items[i];
            size_t j = i;
            while (j > 0 && items[j - 1].key > item.key) { items[j] = items[j - 1]; j--; }
            items[j] = item;
        }
        return;
    }
    size_t half = n / 2, i = 0, j = half, k = 0;
    merge_sort(items, scratch, half);
    merge_sort(items + half, scratch, n - half);
    while (i < half && j < n) scratch[k++] = items[i].key <= items[j].key ? items[i++] : items[j++];
    while (i < half) scratch[k++] = items[i++];
    while (j < n) scratch[k++] = items[j++];
    memcpy(items, scratch, n * sizeof(record));
}

static uint64_t fnv1a(const char *s, size_t n) {
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++) { h ^= (unsigned char)s[i]; h *= 1099511628211ULL; }
    return h;
}

static int format_key(char *out, uint64_t id) {
    char digits[20];
    int count = 0, n = 0;
    do { digits[count++] = (char)('0' + id % 10); id /= 10; } while (id);
    memcpy(out, "user:", 5); n = 5;
    while (count) out[n++] = digits[--count];
    memcpy(out + n, ":session", 8);
    return n + 8;
}

int main(void) {
    struct timespec start, end;
    clock_gettime(CLOCK_MONOTONIC, &start);

    record *records = malloc(sizeof(record) * N_RECORDS);
    for (int i = 0; i < N_RECORDS; i++) records[i] = (record){(uint32_t)next(), (uint32_t)i};
    record *scratch = malloc(sizeof(record) * N_RECORDS);
    merge_sort(records, scratch, N_RECORDS);
    free(scratch);

    char key[32];
    uint64_t buckets[1024] = {0};
    for (int i = 0; i < N_KEYS; i++) {
        int n = format_key(key, next() % 100000);
        buckets[fnv1a(key, (size_t)n) & 1023]++;
    }

    static double a[MATRIX][MATRIX], b[MATRIX][MATRIX], c[MATRIX][MATRIX];
    for (int i = 0; i < MATRIX; i++)
        for (int j = 0; j < MATRIX; j++) { a[i][j] = (double)(next() % 100) / 7; b[i][j] = (double)(next() % 100) / 3; }
    for (int i = 0; i < MATRIX; i++)
        for (int k = 0; k < MATRIX; k++)
            for (int j = 0; j < MATRIX; j++) c[i][j] += a[i][k] * b[k][j];

    clock_gettime(CLOCK_MONOTONIC, &end);
    double seconds = (double)(end.tv_sec - start.tv_sec) + (double)(end.tv_nsec - start.tv_nsec) / 1e9;
    uint64_t check = records[N_RECORDS / 2].key + buckets[7] + (uint64_t)c[3][5];
    printf("checksum: %llu\nseconds: %.6f\n", (unsigned long long)check, seconds);
    free(records);
    return 0;
}
