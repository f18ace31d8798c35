/* The instructions RapidScorer's vector path executes per unit of work, for one instruction
 * set: compiled natively for the AVX2 path, and for AArch64 with SIMDe (QS_SIMDE) for the NEON
 * path, the same source. benchmarks/experiments/neon_ops.py runs it under QEMU's user-mode
 * emulation with its translated blocks logged, with r and 2r repeats, and takes the
 * difference over the units r more repeats do: set-up, start-up and exit cancel.
 *
 *     neon_ops UNIT REPEATS
 *
 * UNIT is one of (``call``: an empty function in rank's loop, that loop's own cost)
 *   scan      one entry of a 64-lane scan (rs_scan_avx2w): every entry passed by half the
 *             lanes, so the scan never stops early (as benchmarks/experiments/rs_scan_floor.c)
 *   scan32    the same for a 32-lane scan (rs_scan_avx2)
 *   rank      one document's rank on one feature of 256 thresholds (rs_rank_avx2, 16 pivots:
 *             two searches of 16 doubles)
 *   exits     one tree's exit leaves for 64 lanes, 64 leaves a tree (rs_exits_avx2w, 8 bytes)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quickscorer/algorithms/rapidscorer/scan.h"

#if !RS_HAVE_X86
#error "needs the AVX2 intrinsics: x86-64, or AArch64 with SIMDe (-DQS_SIMDE)"
#endif

CPU_TARGET("avx2") __attribute__((noinline))
static const rs_entry* scan64(const uint8_t* rank, const rs_entry* e, uint8_t* state)
{
    return rs_scan_avx2w(rank, e, state, 0);
}

CPU_TARGET("avx2") __attribute__((noinline))
static const rs_entry* scan32(const uint8_t* rank, const rs_entry* e, uint8_t* state)
{
    return rs_scan_avx2(rank, e, state, 0);
}

CPU_TARGET("avx2") __attribute__((noinline))
static int rank16(const double* piv, const double* bkt, double x)
{
    return rs_rank_avx2(piv, bkt, x, 16);
}

CPU_TARGET("avx2") __attribute__((noinline))
static void exits64(const uint8_t* p, uint8_t* idx)
{
    rs_exits_avx2w(p, 8, idx);
}

/* the driver loop's own cost per call, subtracted from rank's and exits' */
__attribute__((noinline))
static int nothing(const double* piv, const double* bkt, double x)
{
    __asm__("" : : "r"(piv), "r"(bkt), "r"(&x) : "memory");
    return 0;
}

int main(int argc, char** argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s scan|scan32|rank|exits|call REPEATS\n", argv[0]);
        return 2;
    }
    const char* unit = argv[1];
    const long repeats = atol(argv[2]);
    enum { ENTRIES = 1024, ROWS = 4096 };
    unsigned check = 0;
    static uint8_t rank[64] __attribute__((aligned(64)));
    for (int l = 0; l < 64; ++l)
        rank[l] = (l & 1) ? 200 : 5;          /* half the lanes pass every entry */
    if (!strcmp(unit, "scan") || !strcmp(unit, "scan32")) {
        /* ENTRIES entries scanned `repeats` times: per entry, the call's set-up is 1/1024 */
        rs_entry* e = aligned_alloc(64, (ENTRIES + 1) * sizeof(rs_entry));
        uint8_t* state = aligned_alloc(64, ROWS * 64);
        memset(state, 0xFF, ROWS * 64);
        for (long i = 0; i < ENTRIES; ++i) {
            e[i].byte = (uint16_t)((i * 2654435761u) % ROWS);
            e[i].mask = (uint8_t)(i | 1);
            e[i].thr_b = (uint8_t)(10 ^ 0x80);
        }
        e[ENTRIES].thr_b = 255 ^ 0x80;
        e[ENTRIES].byte = 0;
        const int wide = !strcmp(unit, "scan");
        for (long r = 0; r < repeats; ++r) {
            const rs_entry* end = wide ? scan64(rank, e, state) : scan32(rank, e, state);
            check += (unsigned)(end - e);
        }
        for (long i = 0; i < ROWS * 64; ++i)     /* every row's bits, to compare paths */
            check = check * 31 + state[i];
    } else if (!strcmp(unit, "rank") || !strcmp(unit, "call")) {
        double piv[16], bkt[256];
        for (int i = 0; i < 256; ++i)
            bkt[i] = i;
        for (int i = 0; i < 16; ++i)
            piv[i] = 16.0 * i + 15.5;
        int (*const fn)(const double*, const double*, double) =
            !strcmp(unit, "rank") ? rank16 : nothing;
        for (long i = 0; i < repeats; ++i)
            check += (unsigned)fn(piv, bkt, (double)(i & 255) + 0.25);
    } else if (!strcmp(unit, "exits")) {
        static uint8_t rows[8 * 64] __attribute__((aligned(64)));
        uint8_t idx[64];
        for (int i = 0; i < 8 * 64; ++i)
            rows[i] = (uint8_t)(i % 7 == 0 ? 0x10 : 0);
        for (long i = 0; i < repeats; ++i) {
            rows[(i * 37) % (8 * 64)] ^= (uint8_t)(1u << (i & 7));   /* (branch-free search) */
            exits64(rows, idx);
            check += idx[i & 63];
        }
        for (int l = 0; l < 64; ++l)                                /* every lane's exit */
            check = check * 31 + idx[l];
    } else {
        fprintf(stderr, "unknown unit %s\n", unit);
        return 2;
    }
    printf("%s %ld check %u\n", unit, repeats, check);
    return 0;
}
