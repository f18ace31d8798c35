/* The container of a prepared model file (.qsm, docs/model-file.md): a header, sections of
 * bytes each starting on a 64-byte boundary, and a table of the sections at the end. Every
 * integer is little-endian. This header checks the container (bounds, order, alignment,
 * checksums) before anything reads a section; what a section holds is checked by its reader.
 *
 *   offset  size  field
 *        0     8  magic "\x89QSM\r\n\x1a\n" (a text-mode copy or a truncated first line shows)
 *        8     4  format version (QSM_VERSION)
 *       12     4  header bytes (64)
 *       16     8  file bytes
 *       24     8  offset of the section table (8-byte aligned, after every section)
 *       32     4  number of sections (at least 1: section 0 is the JSON description)
 *       36     4  flags (0)
 *       40     8  checksum of the section table
 *       48     8  reserved (0)
 *       56     8  checksum of bytes 0 to 55
 *
 * The checksums are qsm_checksum2's in format version 2, qsm_checksum's in version 1 (still
 * read); the versions differ in nothing else.
 *
 * A table entry is 32 bytes: offset, bytes, checksum (uint64 each), kind, reserved (uint32).
 * Sections lie in table order without overlapping, between the header and the table. */
#ifndef QS_QSM_H
#define QS_QSM_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define QSM_MAGIC "\x89QSM\r\n\x1a\n"
#define QSM_VERSION 2u
#define QSM_HEADER_BYTES 64u
#define QSM_ENTRY_BYTES 32u
#define QSM_ALIGN 64u
/* a section's kind: the JSON description (section 0) and the arrays it describes */
#define QSM_KIND_META 0u
#define QSM_KIND_ARRAY 1u
/* more sections than any model needs: a hostile count is refused before the table is read */
#define QSM_MAX_SECTIONS (1u << 20)

/* what qsm_check found: 0 a sound container, else the first problem (the message says which
 * section) */
enum {
    QSM_OK = 0,
    QSM_ERR_TRUNCATED = 1,
    QSM_ERR_MAGIC = 2,
    QSM_ERR_VERSION = 3,
    QSM_ERR_HEADER = 4,
    QSM_ERR_TABLE = 5,
    QSM_ERR_SECTION = 6,
    QSM_ERR_CHECKSUM = 7,
};

static inline uint64_t qsm_load64(const uint8_t* p)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
#else
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
#endif
}

static inline uint32_t qsm_load32(const uint8_t* p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
           ((uint32_t)p[3] << 24);
}

static inline uint64_t qsm_rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

#define QSM_P1 0x9E3779B185EBCA87ull
#define QSM_P2 0xC2B2AE3D27D4EB4Full
#define QSM_P3 0x165667B19E3779F9ull

/* the last mix of both versions: every bit of h moves every bit of the result */
static inline uint64_t qsm_avalanche(uint64_t h)
{
    h ^= h >> 33;
    h *= QSM_P2;
    h ^= h >> 29;
    h *= QSM_P3;
    h ^= h >> 32;
    return h;
}

static inline uint64_t qsm_round(uint64_t acc, uint64_t word)
{
    return qsm_rotl(acc + word * QSM_P2, 31) * QSM_P1;
}

/* A 64-bit checksum of n bytes: four independent multiply-rotate lanes over 32-byte blocks
 * (memory speed on one core), the tail word by word, the length and an avalanche mixed in.
 * It finds corruption (a flipped bit, a truncated or shuffled copy); it is no defence
 * against a crafted file, which the section readers' checks are. */
static uint64_t qsm_checksum(const void* data, size_t n)
{
    const uint8_t* p = (const uint8_t*)data;
    uint64_t a0 = QSM_P1 + QSM_P2, a1 = QSM_P2, a2 = 0, a3 = (uint64_t)0 - QSM_P1;
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        a0 = qsm_round(a0, qsm_load64(p + i));
        a1 = qsm_round(a1, qsm_load64(p + i + 8));
        a2 = qsm_round(a2, qsm_load64(p + i + 16));
        a3 = qsm_round(a3, qsm_load64(p + i + 24));
    }
    uint64_t h = qsm_rotl(a0, 1) + qsm_rotl(a1, 7) + qsm_rotl(a2, 12) + qsm_rotl(a3, 18);
    h ^= qsm_round(0, a0);
    h = h * QSM_P1 + QSM_P3;
    h ^= qsm_round(0, a1);
    h = h * QSM_P1 + QSM_P3;
    h ^= qsm_round(0, a2);
    h = h * QSM_P1 + QSM_P3;
    h ^= qsm_round(0, a3);
    h = h * QSM_P1 + QSM_P3;
    h += (uint64_t)n;
    for (; i + 8 <= n; i += 8)
        h = qsm_rotl(h ^ qsm_round(0, qsm_load64(p + i)), 27) * QSM_P1 + QSM_P3;
    for (; i < n; i++)
        h = qsm_rotl(h ^ (p[i] * QSM_P3), 11) * QSM_P1;
    return qsm_avalanche(h);
}

/* Version 2's checksum: eight 64-bit lanes over 64-byte stripes. A word is mixed with a key
 * word that depends on its place in a 1 KiB block of 16 stripes and folded by one 32 x 32 ->
 * 64-bit product, which SSE2, AVX2 and NEON do a lane at a time, so the loop vectorises and
 * runs at memory speed (version 1's multiply-rotate chain runs at about 4 bytes a cycle);
 * each lane also takes its neighbour's raw word, so no bit is lost where a product is 0.
 * Each block ends in a scramble of every lane, so words, stripes and blocks moved from their
 * place change the result; the last partial stripe is zero-padded with the length mixed in.
 * Like version 1 it finds corruption, not a crafted file. The result is the same on every
 * CPU (plain integer C; the vector forms compute exactly this). */
#define QSM2_STRIPE 64u
#define QSM2_BLOCK_STRIPES 16u
static const uint64_t QSM2_KEY[32] = {
    0xD1189D5628A36535ull, 0xFCF723560758F190ull, 0x4B1BB2C66D8DD862ull, 0x067C2A3AB4EB678Aull,
    0x33590F8B3E8DCF77ull, 0xCFA002E279AD6F84ull, 0xF46EDD5A3307D2B2ull, 0x095D3557305FF782ull,
    0xDFB2C8381B2774F8ull, 0x74D7A63A66E0E3BBull, 0xACE4B60CB436B737ull, 0x8604EFFC54BA166Bull,
    0xDEEF9B2B3704AA0Dull, 0x99F6CE0E8F177973ull, 0x8B415E038F52E08Aull, 0xE3C0B079116A8C3Dull,
    0xDB27491D44F2790Bull, 0x9BEB00BC7AA6B3B5ull, 0xB4AA3A2F53DE6FB9ull, 0xAC6DE8E2E86E7476ull,
    0x62AE458785920899ull, 0x26A5D68FCF003817ull, 0x5B3AAB9C3660EA9Bull, 0x6086C681A778B11Full,
    /* the blocks' scramble keys */
    0x5EF2A8F725E01C3Cull, 0x6BB4BD0B48E77B13ull, 0x0E0337993E271935ull, 0x775E078F292A0240ull,
    0x1D187914415E5D75ull, 0x5BD5DDF8DF8C7427ull, 0x7FB2875A11D62F49ull, 0x9120F23269267443ull,
};

static inline void qsm2_stripe(uint64_t* acc, const uint8_t* p, const uint64_t* key)
{
    for (int j = 0; j < 8; j++) {
        uint64_t x = qsm_load64(p + 8 * j), k = x ^ key[j];
        acc[j ^ 1] += x;
        acc[j] += (k & 0xFFFFFFFFull) * (k >> 32);
    }
}

static inline void qsm2_scramble(uint64_t* acc)
{
    for (int j = 0; j < 8; j++)
        acc[j] = (acc[j] ^ (acc[j] >> 47) ^ QSM2_KEY[24 + j]) * 0x9E3779B1ull;
}

static void qsm2_blocks_base(uint64_t* acc, const uint8_t* p, size_t n_blocks)
{
    for (size_t b = 0; b < n_blocks; b++) {
        for (unsigned s = 0; s < QSM2_BLOCK_STRIPES; s++)
            qsm2_stripe(acc, p + (b * QSM2_BLOCK_STRIPES + s) * QSM2_STRIPE, QSM2_KEY + s);
        qsm2_scramble(acc);
    }
}

/* (not in the SIMDe-emulated test build, whose x86 names are SIMDe's: the portable loop) */
#if defined(__GNUC__) && defined(__x86_64__) && defined(__BYTE_ORDER__) &&                    \
    __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ && !defined(QS_EMULATE_AVX512)
#include <immintrin.h>
/* qsm2_blocks_base in AVX2: lanes 0-3 and 4-7 in two registers; a lane's neighbour j ^ 1 is
 * the other half of its 128-bit pair */
__attribute__((target("avx2"))) static void qsm2_blocks_avx2(uint64_t* acc, const uint8_t* p,
                                                             size_t n_blocks)
{
    __m256i a0 = _mm256_loadu_si256((const __m256i*)acc);
    __m256i a1 = _mm256_loadu_si256((const __m256i*)(acc + 4));
    const __m256i s0 = _mm256_loadu_si256((const __m256i*)(QSM2_KEY + 24));
    const __m256i s1 = _mm256_loadu_si256((const __m256i*)(QSM2_KEY + 28));
    const __m256i prime = _mm256_set1_epi64x(0x9E3779B1ll);
    for (size_t b = 0; b < n_blocks; b++) {
        const uint8_t* q = p + b * QSM2_BLOCK_STRIPES * QSM2_STRIPE;
        for (unsigned s = 0; s < QSM2_BLOCK_STRIPES; s++) {
            __m256i x0 = _mm256_loadu_si256((const __m256i*)(q + s * QSM2_STRIPE));
            __m256i x1 = _mm256_loadu_si256((const __m256i*)(q + s * QSM2_STRIPE + 32));
            __m256i k0 = _mm256_xor_si256(
                x0, _mm256_loadu_si256((const __m256i*)(QSM2_KEY + s)));
            __m256i k1 = _mm256_xor_si256(
                x1, _mm256_loadu_si256((const __m256i*)(QSM2_KEY + s + 4)));
            a0 = _mm256_add_epi64(a0, _mm256_shuffle_epi32(x0, _MM_SHUFFLE(1, 0, 3, 2)));
            a1 = _mm256_add_epi64(a1, _mm256_shuffle_epi32(x1, _MM_SHUFFLE(1, 0, 3, 2)));
            a0 = _mm256_add_epi64(a0, _mm256_mul_epu32(k0, _mm256_srli_epi64(k0, 32)));
            a1 = _mm256_add_epi64(a1, _mm256_mul_epu32(k1, _mm256_srli_epi64(k1, 32)));
        }
        /* (a ^ a >> 47 ^ key) * prime, the 64-bit product from two 32 x 32 halves */
        __m256i m0 = _mm256_xor_si256(_mm256_xor_si256(a0, _mm256_srli_epi64(a0, 47)), s0);
        __m256i m1 = _mm256_xor_si256(_mm256_xor_si256(a1, _mm256_srli_epi64(a1, 47)), s1);
        a0 = _mm256_add_epi64(_mm256_mul_epu32(m0, prime),
                              _mm256_slli_epi64(_mm256_mul_epu32(_mm256_srli_epi64(m0, 32),
                                                                 prime), 32));
        a1 = _mm256_add_epi64(_mm256_mul_epu32(m1, prime),
                              _mm256_slli_epi64(_mm256_mul_epu32(_mm256_srli_epi64(m1, 32),
                                                                 prime), 32));
    }
    _mm256_storeu_si256((__m256i*)acc, a0);
    _mm256_storeu_si256((__m256i*)(acc + 4), a1);
}
#define QSM2_HAVE_AVX2 1
#endif

static uint64_t qsm_checksum2(const void* data, size_t n)
{
    const uint8_t* p = (const uint8_t*)data;
    uint64_t acc[8];
    for (int j = 0; j < 8; j++)
        acc[j] = QSM2_KEY[j] ^ QSM_P3;
    size_t n_blocks = n / (QSM2_STRIPE * QSM2_BLOCK_STRIPES);
#ifdef QSM2_HAVE_AVX2
    if (n_blocks && __builtin_cpu_supports("avx2"))
        qsm2_blocks_avx2(acc, p, n_blocks);
    else
#endif
        qsm2_blocks_base(acc, p, n_blocks);
    size_t i = n_blocks * QSM2_STRIPE * QSM2_BLOCK_STRIPES;
    unsigned s = 0;
    for (; i + QSM2_STRIPE <= n; i += QSM2_STRIPE, s++)
        qsm2_stripe(acc, p + i, QSM2_KEY + s);
    if (i < n) {
        uint8_t last[QSM2_STRIPE];
        memset(last, 0, sizeof last);
        memcpy(last, p + i, n - i);
        qsm2_stripe(acc, last, QSM2_KEY + s);
    }
    uint64_t h = (uint64_t)n * QSM_P1;
    for (int j = 0; j < 8; j++)
        h = qsm_rotl(h ^ qsm_round(0, acc[j]), 27) * QSM_P1 + QSM_P3;
    return qsm_avalanche(h);
}

/* The checksum of a file of format `version` (1 or 2). */
static inline uint64_t qsm_checksum_of(uint32_t version, const void* data, size_t n)
{
    return version >= 2 ? qsm_checksum2(data, n) : qsm_checksum(data, n);
}

/* One section as the table gives it. */
typedef struct {
    uint64_t offset;
    uint64_t nbytes;
    uint64_t checksum;
    uint32_t kind;
} qsm_section;

/* Check the container of `size` bytes at `base`: the header, the table, every section's
 * place and (with verify) every section's checksum. Returns a QSM_ERR_ code (a message in
 * err, and in *bad_section the section at fault or -1) or QSM_OK with the number of
 * sections in *n_sections. */
static int qsm_check(const uint8_t* base, uint64_t size, int verify, uint32_t* n_sections,
                     int64_t* bad_section, char* err, size_t cap)
{
    *bad_section = -1;
    if (size < QSM_HEADER_BYTES) {
        snprintf(err, cap, "the file is truncated: %llu bytes, shorter than the %u-byte header",
                 (unsigned long long)size, QSM_HEADER_BYTES);
        return QSM_ERR_TRUNCATED;
    }
    if (memcmp(base, QSM_MAGIC, 8) != 0) {
        snprintf(err, cap, "not a quickscorer model file (no .qsm magic number)");
        return QSM_ERR_MAGIC;
    }
    uint32_t version = qsm_load32(base + 8);
    if (version > QSM_VERSION || version == 0) {
        snprintf(err, cap, "format version %u, newer than the version %u this quickscorer "
                 "reads: open it with a newer quickscorer, or compile the model again",
                 version, QSM_VERSION);
        return QSM_ERR_VERSION;
    }
    if (qsm_checksum_of(version, base, 56) != qsm_load64(base + 56)) {
        snprintf(err, cap, "header: checksum mismatch (the file is damaged)");
        return QSM_ERR_CHECKSUM;
    }
    uint64_t file_bytes = qsm_load64(base + 16), table = qsm_load64(base + 24);
    uint32_t n = qsm_load32(base + 32);
    if (qsm_load32(base + 12) != QSM_HEADER_BYTES || qsm_load32(base + 36) != 0) {
        snprintf(err, cap, "header: unknown header size or flags");
        return QSM_ERR_HEADER;
    }
    if (file_bytes != size) {
        snprintf(err, cap, "the file is %s: the header gives %llu bytes, the file has %llu",
                 size < file_bytes ? "truncated" : "longer than written",
                 (unsigned long long)file_bytes, (unsigned long long)size);
        return QSM_ERR_TRUNCATED;
    }
    if (n < 1 || n > QSM_MAX_SECTIONS || table % 8 || table < QSM_HEADER_BYTES ||
        table > size || (size - table) / QSM_ENTRY_BYTES < n ||
        size - table != (uint64_t)n * QSM_ENTRY_BYTES) {
        snprintf(err, cap, "header: the section table (%u sections at byte %llu) does not end "
                 "the file", n, (unsigned long long)table);
        return QSM_ERR_TABLE;
    }
    if (qsm_checksum_of(version, base + table, (size_t)n * QSM_ENTRY_BYTES) !=
        qsm_load64(base + 40)) {
        snprintf(err, cap, "section table: checksum mismatch (the file is damaged)");
        return QSM_ERR_CHECKSUM;
    }
    uint64_t end = QSM_HEADER_BYTES;
    for (uint32_t s = 0; s < n; s++) {
        const uint8_t* e = base + table + (uint64_t)s * QSM_ENTRY_BYTES;
        uint64_t off = qsm_load64(e), nb = qsm_load64(e + 8);
        uint32_t kind = qsm_load32(e + 24);
        if (off % QSM_ALIGN || off < end || off > table || nb > table - off ||
            kind > QSM_KIND_ARRAY || (s == 0) != (kind == QSM_KIND_META)) {
            *bad_section = s;
            snprintf(err, cap, "section %u: bytes %llu to %llu (kind %u) are not in place",
                     s, (unsigned long long)off, (unsigned long long)(off + nb), kind);
            return QSM_ERR_SECTION;
        }
        if (verify && qsm_checksum_of(version, base + off, (size_t)nb) != qsm_load64(e + 16)) {
            *bad_section = s;
            snprintf(err, cap, "section %u: checksum mismatch (the file is damaged)", s);
            return QSM_ERR_CHECKSUM;
        }
        end = off + nb;
    }
    *n_sections = n;
    return QSM_OK;
}

/* Section s of a container qsm_check has passed. */
static inline qsm_section qsm_section_at(const uint8_t* base, uint64_t size, uint32_t s)
{
    uint64_t table = qsm_load64(base + 24);
    const uint8_t* e = base + table + (uint64_t)s * QSM_ENTRY_BYTES;
    qsm_section out;
    out.offset = qsm_load64(e);
    out.nbytes = qsm_load64(e + 8);
    out.checksum = qsm_load64(e + 16);
    out.kind = qsm_load32(e + 24);
    (void)size;
    return out;
}

#endif
