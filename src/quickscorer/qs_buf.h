/* What the C model parsers (_lgbtext.pyx, _xgbjson.pyx) share: a growable array of fixed-size
   items, and giving back the pages of a read-only file mapping already read. */
#ifndef QS_BUF_H
#define QS_BUF_H
#include <stdlib.h>

typedef struct { char* p; size_t n; size_t cap; size_t item; } qs_buf;

/* Room for `extra` more items (capacity doubled as needed); -1 when out of memory. */
static inline int qs_buf_grow(qs_buf* b, size_t extra) {
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
static inline void qs_release_pages(const char* p, size_t n) { madvise((void*)p, n, MADV_DONTNEED); }
#else
static inline void qs_release_pages(const char* p, size_t n) { (void)p; (void)n; }
#endif

#endif
