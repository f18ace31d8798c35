/* Parsing rows to score from LibSVM and CSV/TSV text (_rowparse.pyx): a block of whole lines in,
   rows of doubles out, a line at a time, with no allocation and no Python object.

   A block is a run of complete lines, each ending in '\n', followed by a NUL (the caller passes
   a bytes object whose last line it has ended): strtod never reads past the block. Numbers are
   read exactly as strtod reads them in the "C" locale: the common short decimals ("0.25",
   "-3", "1e-4", up to 15 significant digits and a power of ten up to 22) by one exact integer
   and one correctly rounded multiplication or division (Clinger's fast path), every other
   number by pb_strtod_c. Prefix rp_. */
#ifndef ROW_PARSE_H
#define ROW_PARSE_H
#include <stdint.h>
#include <string.h>
#include <math.h>
#include "quickscorer/importers/parse_buf.h"

enum {
    RP_OK = 0,
    RP_BAD_NUMBER = 1,     /* a value that is not a number */
    RP_BAD_TOKEN = 2,      /* LibSVM: a token that is not index:value */
    RP_INDEX_RANGE = 3,    /* LibSVM: an index outside the model's features */
    RP_FIELD_COUNT = 4,    /* CSV: another number of fields than the first line */
    RP_BAD_QUOTE = 5,      /* CSV: a quoted field not closed on its line */
    RP_BAD_QID = 6,        /* LibSVM: qid: without an integer */
};

/* Where a parse stopped and why. Lines and fields count from 0 within the call. */
typedef struct {
    int64_t rows;          /* rows written */
    int64_t pos;           /* offset of the first line not consumed */
    int64_t lines;         /* lines consumed (blank and comment lines included) */
    int64_t skipped;       /* bad lines skipped (skip mode) */
    int err;               /* RP_* of the line at pos, when not skipping */
    int64_t err_field;     /* its field (CSV: column; LibSVM: token, 0 the label) */
    int64_t err_start;     /* the bad token's offset and end */
    int64_t err_end;
} rp_result;

static const double rp_pow10[23] = {
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
    1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* A number from s, ending where it ends; NULL when s holds no number. */
static inline const char* rp_number(const char* s, double* out) {
    const char* p = s;
    int neg = 0;
    if (*p == '-' || *p == '+') { neg = (*p == '-'); p++; }
    uint64_t m = 0;
    int sig = 0, exp10 = 0, ndig = 0;
    while ((unsigned)(*p - '0') < 10u) {
        if (m || *p != '0') { m = m * 10u + (uint64_t)(*p - '0'); sig++; }
        if (sig > 15) goto slow;
        p++; ndig++;
    }
    if (*p == '.') {
        p++;
        while ((unsigned)(*p - '0') < 10u) {
            if (m || *p != '0') { m = m * 10u + (uint64_t)(*p - '0'); sig++; }
            if (sig > 15) goto slow;
            exp10--; p++; ndig++;
        }
    }
    if (!ndig) goto slow;                      /* nan, inf, or no number at all */
    if (*p == 'e' || *p == 'E') {
        const char* q = p + 1;
        int eneg = 0, e = 0, edig = 0;
        if (*q == '-' || *q == '+') { eneg = (*q == '-'); q++; }
        while ((unsigned)(*q - '0') < 10u) {
            if (e < 10000) e = e * 10 + (*q - '0');
            q++; edig++;
        }
        if (!edig) goto slow;
        exp10 += eneg ? -e : e;
        p = q;
    }
    if (m == 0) { *out = neg ? -0.0 : 0.0; return p; }
    if (exp10 < -22 || exp10 > 22) goto slow;
    {
        double v = (double)m;                  /* exact: m < 10^15 < 2^53 */
        v = exp10 < 0 ? v / rp_pow10[-exp10] : v * rp_pow10[exp10];
        *out = neg ? -v : v;
        return p;
    }
slow:
    {
        char* end;
        double v = pb_strtod_c(s, &end);
        if (end == s) return NULL;
        *out = v;
        return end;
    }
}

/* The line's '\n' (the block ends in one, so there is one before `limit`). */
static inline const char* rp_line_end(const char* p, const char* limit) {
    return (const char*)memchr(p, '\n', (size_t)(limit - p));
}

static inline int rp_blank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

/* A bad line: without skip_bad, note its error (token [s, e)) and return 1 to stop there;
   with it, count the line, keep its number while skipped_at has room, step past it, return 0. */
static inline int rp_bad_line(rp_result* r, const char* buf, const char* eol, int code,
                              int64_t field, const char* s, const char* e, int skip_bad,
                              int64_t* skipped_at, int64_t skipped_room) {
    if (!skip_bad) {
        r->err = code; r->err_field = field;
        r->err_start = s - buf; r->err_end = e - buf;
        return 1;
    }
    if (r->skipped < skipped_room) skipped_at[r->skipped] = r->lines;
    r->skipped++;
    r->pos = (eol - buf) + 1; r->lines++;
    return 0;
}

/* LibSVM / SVMlight: "label [qid:q] index:value ... [# comment]", one row a line; blank lines
   and lines that are only a comment are skipped. A row starts as `fill` everywhere; a later
   duplicate index wins. Stops after `cap` rows, at the end of the block, or at a bad line
   (skip_bad: the bad line is counted in `skipped`, its line number stored in skipped_at while
   there is room, and parsing goes on). */
static inline rp_result rp_libsvm(const char* buf, int64_t pos, int64_t end, double* X,
                                  int64_t n_features, int64_t cap, double fill, double* labels,
                                  int64_t* qids, int skip_bad, int64_t* skipped_at,
                                  int64_t skipped_room) {
    rp_result r; memset(&r, 0, sizeof r);
    r.pos = pos;
    while (r.pos < end && r.rows < cap) {
        const char* line = buf + r.pos;
        const char* eol = rp_line_end(line, buf + end);
        const char* p = line;
        while (rp_blank(*p)) p++;
        if (p == eol || *p == '#') {            /* blank or comment-only */
            r.pos = (eol - buf) + 1; r.lines++;
            continue;
        }
        double* row = X + r.rows * n_features;
        int code = RP_OK;
        int64_t field = 0;
        const char* tok = p;
        for (int64_t j = 0; j < n_features; j++) row[j] = fill;
        double label;
        const char* q = rp_number(p, &label);
        if (!q || !(rp_blank(*q) || *q == '\n' || *q == '#')) { code = RP_BAD_NUMBER; goto bad; }
        p = q;
        int64_t qid = -1;
        for (;;) {
            while (rp_blank(*p)) p++;
            if (*p == '\n' || *p == '#') break;
            field++;
            tok = p;
            if (p[0] == 'q' && p[1] == 'i' && p[2] == 'd' && p[3] == ':') {
                p += 4;
                int64_t v = 0; int nd = 0, neg = 0;
                if (*p == '-') { neg = 1; p++; }
                while ((unsigned)(*p - '0') < 10u && nd < 19) { v = v * 10 + (*p - '0'); p++; nd++; }
                if (!nd || !(rp_blank(*p) || *p == '\n' || *p == '#')) { code = RP_BAD_QID; goto bad; }
                qid = neg ? -v : v;
                continue;
            }
            int64_t idx = 0; int nd = 0;
            while ((unsigned)(*p - '0') < 10u && nd < 18) { idx = idx * 10 + (*p - '0'); p++; nd++; }
            if (!nd || *p != ':') { code = RP_BAD_TOKEN; goto bad; }
            p++;
            double v;
            q = rp_number(p, &v);
            if (!q || !(rp_blank(*q) || *q == '\n' || *q == '#')) { code = RP_BAD_NUMBER; goto bad; }
            if (idx >= n_features) { code = RP_INDEX_RANGE; goto bad; }
            row[idx] = v;
            p = q;
        }
        labels[r.rows] = label;
        if (qids) qids[r.rows] = qid;
        r.rows++;
        r.pos = (eol - buf) + 1; r.lines++;
        continue;
    bad:
        {
            const char* te = tok;
            while (!rp_blank(*te) && *te != '\n') te++;
            if (rp_bad_line(&r, buf, eol, code, field, tok, te, skip_bad, skipped_at,
                            skipped_room)) return r;
        }
    }
    return r;
}

/* Is [s, e) one of the words a CSV writer puts for a missing value? */
static inline int rp_na_word(const char* s, const char* e) {
    size_t n = (size_t)(e - s);
    static const char* words[] = {"NA", "N/A", "NaN", "nan", "NAN", "null", "NULL", "None",
                                  "-nan", "-NaN", "n/a", "#N/A"};
    for (size_t k = 0; k < sizeof words / sizeof words[0]; k++)
        if (strlen(words[k]) == n && memcmp(words[k], s, n) == 0) return 1;
    return 0;
}

/* CSV/TSV: `n_cols` fields a line separated by `sep`, a field optionally in double quotes
   (a doubled quote inside is a quote; a quoted field ends on its line). `target[c]` says
   what column c is: >= 0 the feature of that number, -1 ignored, -2 the label (into labels),
   -3 - k the k-th kept column, whose field's offsets go to keep[(row * n_keep + k) * 2 ...]
   (quotes excluded). An empty field or a missing-value word (NA, NaN, null, ...) is NaN.
   Every feature column must be in `target`; features not named by any column are NaN. Blank
   lines are skipped. Stops as rp_libsvm does. */
static inline rp_result rp_csv(const char* buf, int64_t pos, int64_t end, char sep,
                               const int32_t* target, int64_t n_cols, double* X,
                               int64_t n_features, int64_t cap, double* labels,
                               int64_t* keep, int64_t n_keep, int skip_bad,
                               int64_t* skipped_at, int64_t skipped_room) {
    rp_result r; memset(&r, 0, sizeof r);
    r.pos = pos;
    while (r.pos < end && r.rows < cap) {
        const char* line = buf + r.pos;
        const char* eol = rp_line_end(line, buf + end);
        const char* p = line;
        while (rp_blank(*p)) p++;
        if (p == eol) { r.pos = (eol - buf) + 1; r.lines++; continue; }
        double* row = X + r.rows * n_features;
        int code = RP_OK;
        int64_t c = 0;
        const char* fs = line;
        const char* fe = line;
        p = line;
        for (;;) {
            /* one field: [fs, fe) its text, p after it */
            const char* s = p;
            while (*s == ' ' || (sep != '\t' && *s == '\t')) s++;
            if (*s == '"') {
                fs = ++s;
                for (;;) {
                    if (*s == '\n') { code = RP_BAD_QUOTE; goto bad; }
                    if (*s == '"') { if (s[1] == '"') { s += 2; continue; } break; }
                    s++;
                }
                fe = s++;
                while (*s == ' ' || *s == '\r' || (sep != '\t' && *s == '\t')) s++;
                if (*s != sep && *s != '\n') { code = RP_BAD_QUOTE; goto bad; }
            } else {
                fs = s;
                while (*s != sep && *s != '\n') s++;
                fe = s;
                while (fe > fs && rp_blank(fe[-1])) fe--;
            }
            if (c >= n_cols) { code = RP_FIELD_COUNT; goto bad; }
            int32_t t = target[c];
            if (t >= 0 || t == -2) {
                double v;
                if (fe == fs || rp_na_word(fs, fe)) {
                    v = NAN;
                } else {
                    const char* q = rp_number(fs, &v);
                    if (q != fe) { code = RP_BAD_NUMBER; goto bad; }
                }
                if (t >= 0) row[t] = v; else labels[r.rows] = v;
            } else if (t <= -3) {
                int64_t* k = keep + (r.rows * n_keep + (-3 - t)) * 2;
                k[0] = fs - buf; k[1] = fe - buf;
            }
            c++;
            p = s;
            if (*p == '\n') break;
            p++;                                /* past the separator */
        }
        if (c != n_cols) { fs = fe = eol; code = RP_FIELD_COUNT; goto bad; }
        r.rows++;
        r.pos = (eol - buf) + 1; r.lines++;
        continue;
    bad:
        if (rp_bad_line(&r, buf, eol, code, c, fs, fe, skip_bad, skipped_at, skipped_room))
            return r;
    }
    return r;
}

#endif
