/* The cost of one RapidScorer scan entry on this CPU, apart from everything else a group does.
 *
 *     gcc -O3 -mavx2 -I src -o /tmp/rs_scan_floor benchmarks/experiments/rs_scan_floor.c
 *     /tmp/rs_scan_floor 128        # KiB of byte rows the entries hit (a tree block's state)
 *
 * One million entries, each on a random byte row of the state, every one passed by half of
 * the 32 lanes (so the scan never stops early), run through the AVX2 scan of rapidscorer/scan.h that
 * the library ships (`shipped`) and three rewrites of it, interleaved, best of 9 rounds, in
 * nanoseconds per entry:
 *   subs    compares as a saturated subtraction (no bias of the ranks or thresholds);
 *   pairs   tests every second entry only (thresholds are sorted within a segment, so when an
 *           entry is passed by some lane, so is the one before it);
 *   halves  two 128-bit loads and stores per row instead of one 256-bit;
 *   rows    no compare at all: each entry's row ANDed with one fixed vector (what the row
 *           updates alone cost);
 *   wide64  the shipped 64-document AVX2 scan (rows of 64 bytes, two registers each) on the
 *           same KiB of state: its time per entry serves twice the documents.
 * Where the shipped scan's figure times the number of entries of a model's layout comes close
 * to the scan's share of a profile, the scan is at this floor and only fewer entries (fewer
 * byte rows touched) make it faster. AVX2 only; x86-64 with gcc or clang.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "quickscorer/algorithms/rapidscorer/scan.h"

typedef const rs_entry* (*scan_fn)(const uint8_t*, const rs_entry*, uint8_t*);

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

__attribute__((target("avx2"), noinline))
static const rs_entry* shipped(const uint8_t* rank, const rs_entry* e, uint8_t* state)
{
    return rs_scan_avx2(rank, e, state, 0);
}

__attribute__((target("avx2"), noinline))
static const rs_entry* subs(const uint8_t* rank, const rs_entry* e, uint8_t* state)
{
    const __m256i r = _mm256_loadu_si256((const __m256i*)rank);
    const __m256i zero = _mm256_setzero_si256();
    for (;; ++e) {
        const __m256i d = _mm256_subs_epu8(r, _mm256_set1_epi8((char)(e->thr_b ^ 0x80)));
        if (_mm256_testz_si256(d, d))
            return e;
        __m256i* p = (__m256i*)(state + (size_t)e->byte * 32);
        const __m256i keep = _mm256_or_si256(_mm256_cmpeq_epi8(d, zero),
                                             _mm256_set1_epi8((char)e->mask));
        _mm256_store_si256(p, _mm256_and_si256(keep, _mm256_load_si256(p)));
    }
}

__attribute__((target("avx2"), always_inline))
static inline void apply(const rs_entry* e, __m256i gt, uint8_t* state)
{
    __m256i* p = (__m256i*)(state + (size_t)e->byte * 32);
    const __m256i clear = _mm256_andnot_si256(_mm256_set1_epi8((char)e->mask), gt);
    _mm256_store_si256(p, _mm256_andnot_si256(clear, _mm256_load_si256(p)));
}

__attribute__((target("avx2"), noinline))
static const rs_entry* pairs(const uint8_t* rank, const rs_entry* e, uint8_t* state)
{
    /* needs two sentinels after the last entry */
    const __m256i bias = _mm256_set1_epi8((char)0x80);
    const __m256i r = _mm256_xor_si256(_mm256_loadu_si256((const __m256i*)rank), bias);
    for (;; e += 2) {
        const __m256i gt1 = _mm256_cmpgt_epi8(r, _mm256_set1_epi8((char)e[1].thr_b));
        const __m256i gt0 = _mm256_cmpgt_epi8(r, _mm256_set1_epi8((char)e[0].thr_b));
        if (_mm256_testz_si256(gt1, gt1)) {
            if (_mm256_testz_si256(gt0, gt0))
                return e;
            apply(e, gt0, state);
            return e + 1;
        }
        apply(e, gt0, state);
        apply(e + 1, gt1, state);
    }
}

__attribute__((target("avx2"), noinline))
static const rs_entry* halves(const uint8_t* rank, const rs_entry* e, uint8_t* state)
{
    const __m256i bias = _mm256_set1_epi8((char)0x80);
    const __m256i r = _mm256_xor_si256(_mm256_loadu_si256((const __m256i*)rank), bias);
    for (;; ++e) {
        const __m256i gt = _mm256_cmpgt_epi8(r, _mm256_set1_epi8((char)e->thr_b));
        if (_mm256_testz_si256(gt, gt))
            return e;
        uint8_t* p = state + (size_t)e->byte * 32;
        const __m256i clear = _mm256_andnot_si256(_mm256_set1_epi8((char)e->mask), gt);
        const __m128i lo = _mm_andnot_si128(_mm256_castsi256_si128(clear),
                                            _mm_load_si128((const __m128i*)p));
        const __m128i hi = _mm_andnot_si128(_mm256_extracti128_si256(clear, 1),
                                            _mm_load_si128((const __m128i*)(p + 16)));
        _mm_store_si128((__m128i*)p, lo);
        _mm_store_si128((__m128i*)(p + 16), hi);
    }
}

__attribute__((target("avx2"), noinline))
static const rs_entry* wide64(const uint8_t* rank, const rs_entry* e, uint8_t* state)
{
    return rs_scan_avx2w(rank, e, state, 0);
}

__attribute__((target("avx2"), noinline))
static const rs_entry* rows_only(const uint8_t* rank, const rs_entry* e, uint8_t* state)
{
    const __m256i clear = _mm256_loadu_si256((const __m256i*)rank);
    for (; e->thr_b != (255 ^ 0x80); ++e) {
        __m256i* p = (__m256i*)(state + (size_t)e->byte * 32);
        _mm256_store_si256(p, _mm256_andnot_si256(clear, _mm256_load_si256(p)));
    }
    return e;
}

int main(int argc, char** argv)
{
    const long kib = argc > 1 ? atol(argv[1]) : 128;
    const long n = 1000000, rows = kib * 1024 / 32;
    if (rows < 1) {
        fprintf(stderr, "usage: %s KIB_OF_STATE\n", argv[0]);
        return 2;
    }
    if (!rs_isa_available(RS_ISA_AVX2)) {
        fprintf(stderr, "this CPU has no AVX2\n");
        return 2;
    }
    rs_entry* e = aligned_alloc(64, (n + 2) * sizeof(rs_entry));
    uint8_t* state = aligned_alloc(64, rows * 32);
    if (e == NULL || state == NULL)
        return 1;
    srand(1);
    for (long i = 0; i < n; ++i) {
        e[i].byte = (uint16_t)(rand() % rows);
        e[i].mask = (uint8_t)(rand() | 1);
        e[i].thr_b = (uint8_t)(10 ^ 0x80);
    }
    e[n].thr_b = e[n + 1].thr_b = 255 ^ 0x80;
    e[n].byte = e[n + 1].byte = 0;
    uint8_t rank[64] __attribute__((aligned(64)));
    for (int l = 0; l < 64; ++l)
        rank[l] = (l & 1) ? 200 : 5;     /* half the lanes pass every entry */
    enum { N_FN = 6, WIDE = 5 };
    const scan_fn fn[N_FN] = {shipped, subs, pairs, halves, rows_only, wide64};
    const char* name[N_FN] = {"shipped", "subs", "pairs", "halves", "rows", "wide64"};
    double best[N_FN] = {1e9, 1e9, 1e9, 1e9, 1e9, 1e9};
    uint32_t* byte32 = malloc(n * sizeof(uint32_t));
    if (byte32 == NULL)
        return 1;
    for (long i = 0; i < n; ++i)
        byte32[i] = e[i].byte;
    unsigned check = 0;
    for (int round = 0; round < 9; ++round) {
        for (int v = 0; v < N_FN; ++v) {
            memset(state, 0xFF, rows * 32);
            for (long i = 0; i < n; ++i)          /* rows of 64 bytes: half as many */
                e[i].byte = v == WIDE ? byte32[i] / 2 : byte32[i];
            const double t = now();
            if (fn[v](rank, e, state) != e + n)
                return 1;
            const double dt = now() - t;
            best[v] = dt < best[v] ? dt : best[v];
            check += state[rand() % (rows * 32)];
        }
    }
    printf("state %ld KiB, ns per entry:", kib);
    for (int v = 0; v < N_FN; ++v)
        printf("  %s %.3f", name[v], best[v] / n * 1e9);
    printf("  (check %u)\n", check);
    free(byte32);
    free(e);
    free(state);
    return 0;
}
