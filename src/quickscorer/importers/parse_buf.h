/* What the C model parsers (_lgbtext.pyx, _xgbjson.pyx) share: a growable array of fixed-size
   items, giving back the pages of a read-only file mapping already read, and strtod in the
   "C" locale whatever locale the program has set. */
#ifndef PARSE_BUF_H
#define PARSE_BUF_H
#include <stdlib.h>

typedef struct { char* p; size_t n; size_t cap; size_t item; } pb_buf;

/* Room for `extra` more items (capacity doubled as needed); -1 when out of memory. */
static inline int pb_grow(pb_buf* b, size_t extra) {
    if (b->n + extra <= b->cap) return 0;
    size_t cap = b->cap ? b->cap : 1024;
    while (cap < b->n + extra) cap *= 2;
    char* p = (char*)realloc(b->p, cap * b->item);
    if (!p) return -1;
    b->p = p; b->cap = cap; return 0;
}

#if defined(__unix__) || defined(__APPLE__)
#include <sys/mman.h>
/* Give back the pages of a read-only file mapping (they are read again from the page cache
   if touched): a parser's input never becomes resident whole. */
static inline void pb_release_pages(const char* p, size_t n) { madvise((void*)p, n, MADV_DONTNEED); }
#else
static inline void pb_release_pages(const char* p, size_t n) { (void)p; (void)n; }
#endif

/* strtod reads the decimal point of the program's LC_NUMERIC: under a locale with a decimal
   comma, "1.5" reads as 1. pb_strtod_c reads numbers as the "C" locale does (strtod_l);
   pb_c_numeric_init runs once first (at module import, with the GIL). Without strtod_l, plain
   strtod, whose callers check that it read the whole token. */
#if defined(__GLIBC__) || defined(__APPLE__) || defined(__FreeBSD__)
#include <locale.h>
#ifdef __APPLE__
#include <xlocale.h>
#endif
static locale_t pb_c_numeric = (locale_t)0;
static inline void pb_c_numeric_init(void) {
    if (!pb_c_numeric) pb_c_numeric = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
}
static inline double pb_strtod_c(const char* s, char** end) {
    return pb_c_numeric ? strtod_l(s, end, pb_c_numeric) : strtod(s, end);
}
#elif defined(_WIN32)
#include <locale.h>
static _locale_t pb_c_numeric = NULL;
static inline void pb_c_numeric_init(void) {
    if (!pb_c_numeric) pb_c_numeric = _create_locale(LC_NUMERIC, "C");
}
static inline double pb_strtod_c(const char* s, char** end) {
    return pb_c_numeric ? _strtod_l(s, end, pb_c_numeric) : strtod(s, end);
}
#else
static inline void pb_c_numeric_init(void) {}
static inline double pb_strtod_c(const char* s, char** end) { return strtod(s, end); }
#endif

#endif
