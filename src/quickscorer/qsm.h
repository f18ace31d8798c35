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
 * A table entry is 32 bytes: offset, bytes, checksum (uint64 each), kind, reserved (uint32).
 * Sections lie in table order without overlapping, between the header and the table. */
#ifndef QS_QSM_H
#define QS_QSM_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define QSM_MAGIC "\x89QSM\r\n\x1a\n"
#define QSM_VERSION 1u
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
    h ^= h >> 33;
    h *= QSM_P2;
    h ^= h >> 29;
    h *= QSM_P3;
    h ^= h >> 32;
    return h;
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
    if (qsm_checksum(base, 56) != qsm_load64(base + 56)) {
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
    if (qsm_checksum(base + table, (size_t)n * QSM_ENTRY_BYTES) != qsm_load64(base + 40)) {
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
        if (verify && qsm_checksum(base + off, (size_t)nb) != qsm_load64(e + 16)) {
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
