/* libquickscorer (quickscorer.h): a prepared model file opened, checked and scored in C.
 *
 * The file's C index (its last section, written by quickscorer/model_file.py's c_index) names
 * the sections of the forest (forest.h's qs_forest) and of the reference walk's node table
 * (qs_traversal); every count, offset and index in them is checked here before a row is
 * scored, so that a hostile file gives QS_E_FORMAT, never a read out of bounds or a walk
 * that does not end. The rows run through forest.h's rules and exit function and
 * transforms.h's transforms, the code the Python package's kernels run. */
#include "quickscorer/capi/quickscorer.h"

#include <errno.h>
#include <stdatomic.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if !defined(_WIN32)
#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#define QS_HAVE_MMAP 1
#endif

#include "quickscorer/algorithms/rapidscorer/check.h"
#include "quickscorer/algorithms/rapidscorer/run.h"
#include "quickscorer/algorithms/walk.h"
#include "quickscorer/forest.h"
#include "quickscorer/qsm.h"
#include "quickscorer/transforms.h"

#ifndef QS_VERSION_STRING
#define QS_VERSION_STRING "unknown"
#endif

/* the C index: little-endian 64-bit words; version 1 ends after the forest's slots,
 * version 2 adds the RapidScorer part (R_*) of RS_ARRAY_COUNT_V2 arrays, version 3 that of
 * RS_ARRAY_COUNT (the gathered walk's fields after the others) */
#define QSC_MAGIC "QSCINDEX"
#define QSC_VERSION 5u
enum {
    W_MAGIC, W_VERSION, W_FAMILY, W_FEATURES, W_OUTPUTS, W_TREES, W_NODES, W_LEAVES, W_TERMS,
    W_CAT_WORDS, W_TRANSFORM, W_SIGMOID, W_DIVIDE_BY, W_UNSUPPORTED, W_LEAF_SUM, W_BAGS,
    W_SLOTS, W_HEAD
};
/* the RapidScorer part, after the forest's slots: the rows a thread from which calls take it
 * (0: none), the layout's least lanes of a level walk, its groups a level chunk, whether it is
 * of the level path alone, and the number of its arrays (RS_ARRAY_COUNT), then their sections in
 * the order of rapidscorer/view.h's rs_arrays (model_file.py C_INDEX_RS_SLOTS) */
enum { R_FROM, R_MIN_LANES, R_CHUNK, R_ONLY, R_SLOTS, R_HEAD };
/* the most groups a level chunk (the writer's is at most 64: rapidscorer.py LEVEL_CHUNK) */
#define QS_RS_MAX_CHUNK 1024

/* the sums of the exit leaves (W_LEAF_SUM): the family's (forest.h), or RankLib's */
enum { SUM_FAMILY = 0, SUM_RANKLIB = 1 };
/* the arrays the index names, by slot */
enum {
    S_TREE_GROUP, S_TREE_WEIGHT, S_TREE_LEAF_OFFSET, S_LEAF_VALUE, S_LEAF_VALUE_F32,
    S_BASE_SCORE, S_LIN_OFFSET, S_LIN_CONST, S_LIN_FEATURE, S_LIN_COEFF, S_FEATURE,
    S_THRESHOLD, S_FLAGS, S_LEFT, S_RIGHT, S_CAT_OFFSET, S_CAT_NWORDS, S_CAT_WORDS,
    S_NODE_OFFSET, S_SUM_WEIGHT, S_BAG_OFFSET, S_COUNT
};
static const char* const SLOT_NAMES[S_COUNT] = {
    "tree_group", "tree_weight", "tree_leaf_offset", "leaf_value", "leaf_value_f32",
    "base_score", "lin_offset", "lin_const", "lin_feature", "lin_coeff", "feature",
    "threshold", "flags", "left", "right", "cat_offset", "cat_nwords", "cat_words",
    "node_offset", "sum_weight", "bag_offset"};

/* The branch-free walk of walk.h (eight trees at once, no branch on the data) over the
 * file's table (Python's, read_walk) or a table this library builds at open from the checked
 * node table: each numeric node reads a column of the expanded row that holds its feature as
 * its missing-value rule sees it (NaN or zero mapped to the side they go), each node the rule
 * cannot express (categorical, a NaN threshold, a +inf threshold that NaN must pass on the
 * right) a column of its own, holding its decision. A built table is this process's own
 * memory; the file's stay shared. */
enum { R_NAN_AS_ZERO, R_NAN_LEFT, R_NAN_RIGHT, R_ZERO_LEFT, R_ZERO_RIGHT, R_COUNT };

typedef struct {
    walk_node* table;       /* the leaves' records, the nodes, the self-loop sentinel (this
                             * library's: NULL where the walk reads the file's) */
    const walk_node* nodes; /* after the leaves' records; NULL: the reference walk scores */
    /* from an index of version 4 that names Python's walk layout (model_file.py
     * C_INDEX_WALK_SLOTS): its table read in place, the expanded row's columns as Python's
     * (fill_cols, rule * n_features + feature in increasing order, each rule's run from
     * rule_start), the special nodes' canonical fields in column order (sp) */
    int in_file;
    const int32_t* fill_cols;
    int64_t n_fill, rule_start[R_COUNT + 1];
    qs_nodes sp;
    int32_t* roots;         /* [n_trees + 16] byte offsets: the roots, then the sentinel */
    int64_t rule_col[R_COUNT]; /* first column of each rule's features, or -1 */
    int32_t* special;       /* the node of each special column */
    int64_t n_special, first_special, n_cols;
    /* the trees laid out complete, in groups of eight of one depth (walk.h walk_groups):
     * cnodes and cnodes32 NULL where there are none (some tree deeper than
     * QS_COMPLETE_DEPTH, or a file whose walk has none). complete_in_file: the slots,
     * offsets, depths and end slots are the file's (read_walk, version 5), which the
     * kernels only read and release does not free; cvalue64 and cvalue32 are always this
     * library's own. */
    int complete_in_file;
    walk_cnode* cnodes;
    int32_t* slot_leaf;
    int64_t* cnode_offset;  /* [groups * 8] the group's first slot, at its first tree */
    int64_t* cslot_offset;  /* [groups * 8] the group's first end slot */
    uint8_t* cdepth;        /* [groups * 8] the group's depth */
    /* the slots as float32 order keys (walk.h walk_cnode32: half the bytes), for an XGBoost
     * model whose thresholds are all float32 values; else NULL */
    walk_cnode32* cnodes32;
    /* each end slot's leaf value, for a model of one output and plain leaves (one of the
     * two, in its scores' precision): the walk adds them group by group; else NULL */
    double* cvalue64;
    float* cvalue32;
} cwalk;

/* trees laid out complete where none is deeper than this and their slots are at most
 * QS_COMPLETE_SLOTS a node of the model: the bounds of Python's walk (walk.py
 * COMPLETE_MAX_DEPTH, COMPLETE_MAX_SLOTS), so that both walk the same trees complete */
#define QS_COMPLETE_DEPTH 10
#define QS_COMPLETE_SLOTS 4

/* RapidScorer (rapidscorer/run.h) over the file's layout, for calls of rs.from rows a thread
 * or more, as Python's automatic choice runs it: view.lv_on etc. as the layout gives them,
 * the float32 ranks this library's own (XGBoost models), the paths as Python picks them
 * (rapidscorer.py isa_for) */
typedef struct {
    int64_t from;       /* 0: calls walk the trees whatever their size */
    rs_view view;
    int isa;            /* the widest RS_ISA_* path this CPU runs (or QUICKSCORER_ISA names) */
    int fixed;          /* QUICKSCORER_ISA named it: every call takes it */
    int wide;           /* on AVX2: 64-lane groups from RS_AVX2_WIDE_MIN_ROWS rows a thread */
    float* ranks32;     /* owned: the rank pivots then buckets in float32, or NULL */
} rscore;

/* on AVX-512, calls of fewer rows a thread run on the 32-lane path; on AVX2, calls of this
 * many rows a thread or more run 64-lane groups (rapidscorer.py WIDE_MIN_ROWS,
 * AVX2_WIDE_MIN_ROWS) */
#define RS_WIDE_MIN_ROWS 48
#define RS_AVX2_WIDE_MIN_ROWS 33

struct qs_model {
    int leaf_sum;           /* SUM_FAMILY or SUM_RANKLIB */
    const double* sum_weight;  /* RankLib's: [n_trees] each tree's weight */
    const int64_t* bag_offset; /* [n_bags + 1] a RankLib forest's bags, or NULL */
    int64_t n_bags;
    qs_forest forest;
    qs_traversal walk;
    cwalk fast;             /* fast.nodes NULL: the reference walk scores */
    rscore rs;
    int transform;
    double sigmoid;
    double divide_by;
    int64_t n_leaves;
    /* the bytes: a read-only mapping (mapped) or an aligned copy */
    void* base;
    size_t size;
    int mapped;
};

static _Thread_local char qs_error[512];

static int fail(int status, const char* fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(qs_error, sizeof qs_error, fmt, ap);
    va_end(ap);
    return status;
}

QS_API const char* qs_version(void) { return QS_VERSION_STRING; }

QS_API const char* qs_last_error(void) { return qs_error; }

/* -- opening ------------------------------------------------------------------------------ */
typedef struct {
    const uint8_t* base;
    uint64_t size;
    uint32_t n_sections;
    const uint8_t* index;
    uint64_t index_words;
    uint32_t index_section;
} reader;

static uint64_t word(const reader* r, uint64_t i) { return qsm_load64(r->index + 8 * i); }

/* The array of slot s: its section's data, checked to hold exactly count items of size
 * bytes (NULL and no error where the slot is empty and optional). */
static int slot_array(const reader* r, int s, uint64_t count, size_t size, int required,
                      const void** out)
{
    uint64_t sec = word(r, W_HEAD + (uint64_t)s);
    *out = NULL;
    if (sec == 0) {
        if (required)
            return fail(QS_E_FORMAT, "section %u (C index): the array %s is missing",
                        r->index_section, SLOT_NAMES[s]);
        return QS_OK;
    }
    if (sec >= r->n_sections || sec == r->index_section)
        return fail(QS_E_FORMAT, "section %u (C index): the array %s names section %llu, "
                    "which is not an array section", r->index_section, SLOT_NAMES[s],
                    (unsigned long long)sec);
    qsm_section e = qsm_section_at(r->base, r->size, (uint32_t)sec);
    if (e.kind != QSM_KIND_ARRAY || count > UINT64_MAX / size || e.nbytes != count * size)
        return fail(QS_E_FORMAT, "section %llu (%s): holds %llu bytes, not the %llu x %zu "
                    "of the model's counts", (unsigned long long)sec, SLOT_NAMES[s],
                    (unsigned long long)e.nbytes, (unsigned long long)count, size);
    static const uint64_t empty[1] = {0};
    *out = count ? (const void*)(r->base + e.offset) : (const void*)empty;
    return QS_OK;
}

/* the section of slot s, for a message */
static unsigned long long slot_section(const reader* r, int s)
{
    return (unsigned long long)word(r, W_HEAD + (uint64_t)s);
}

/* a problem in the array of slot s: QS_E_FORMAT, the message naming its section */
static int bad(const reader* r, int s, const char* fmt, ...)
{
    char what[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return fail(QS_E_FORMAT, "section %llu (%s): %s", slot_section(r, s), SLOT_NAMES[s], what);
}

/* offsets[0] = 0, nondecreasing (strictly where strict), offsets[n] = total */
static int check_offsets(const reader* r, int s, const int64_t* o, int64_t n, int64_t total,
                         int strict)
{
    if (o[0] != 0 || o[n] != total)
        return bad(r, s, "does not start at 0 and end at %lld", (long long)total);
    for (int64_t i = 0; i < n; i++)
        if (strict ? o[i + 1] <= o[i] : o[i + 1] < o[i])
            return bad(r, s, "entry %lld is out of order", (long long)(i + 1));
    return QS_OK;
}

/* Whether any tree of a model whose offsets check_model passed breaks one of the rules its
 * node loop names: a pass by arithmetic, with no branch on a node (the loop, which branches
 * at every child, then runs only to name the fault; this pass is most of an open's check). */
static int nodes_fault(const qs_model* m, int64_t F, int64_t n_cat)
{
    const qs_forest* f = &m->forest;
    const qs_nodes* v = &m->walk.nodes;
    int64_t bad = 0;
    for (int64_t t = 0; t < f->n_trees; t++) {
        int64_t base = v->node_offset[t], k = v->node_offset[t + 1] - base;
        bad |= f->tree_leaf_offset[t + 1] - f->tree_leaf_offset[t] != k + 1;
        for (int64_t n = 0; n < k; n++) {
            int64_t g = base + n;
            for (int side = 0; side < 2; side++) {
                int64_t c = side ? m->walk.right[g] : m->walk.left[g], neg = c >> 63;
                /* a node: after this one, inside the tree; a leaf ~l: l at most k */
                bad |= (~neg & ((int64_t)(c <= n) | (int64_t)(c >= k))) |
                       (neg & (int64_t)(~c > k));
            }
            int64_t ft = v->feature[g], co = v->cat_offset[g], cn = v->cat_nwords[g];
            bad |= (int64_t)(ft < 0) | (int64_t)(ft >= F) | (int64_t)(co < 0) |
                   (int64_t)(co > n_cat) | (int64_t)(cn < 0) | (int64_t)(cn > n_cat - co);
        }
    }
    return bad != 0;
}

static int check_model(const reader* r, qs_model* m)
{
    const qs_forest* f = &m->forest;
    const qs_nodes* v = &m->walk.nodes;
    int64_t F = f->n_features, T = f->n_trees, n_nodes = (int64_t)word(r, W_NODES);
    int64_t n_cat = (int64_t)word(r, W_CAT_WORDS), n_terms = (int64_t)word(r, W_TERMS);
    int st;
    for (int64_t t = 0; t < T; t++)
        if (f->tree_group[t] < 0 || f->tree_group[t] >= f->n_outputs)
            return bad(r, S_TREE_GROUP, "tree %lld's output %d is not one of the model's %lld",
                       (long long)t, f->tree_group[t], (long long)f->n_outputs);
    if ((st = check_offsets(r, S_TREE_LEAF_OFFSET, f->tree_leaf_offset, T, m->n_leaves, 1)))
        return st;
    if ((st = check_offsets(r, S_NODE_OFFSET, v->node_offset, T, n_nodes, 0)))
        return st;
    int fault = nodes_fault(m, F, n_cat);
    for (int64_t t = 0; fault && t < T; t++) {
        int64_t base = v->node_offset[t], k = v->node_offset[t + 1] - base;
        if (f->tree_leaf_offset[t + 1] - f->tree_leaf_offset[t] != k + 1)
            return bad(r, S_NODE_OFFSET, "tree %lld has %lld internal nodes and %lld leaves",
                       (long long)t, (long long)k,
                       (long long)(f->tree_leaf_offset[t + 1] - f->tree_leaf_offset[t]));
        for (int64_t n = 0; n < k; n++) {
            int64_t g = base + n;
            int32_t kids[2] = {m->walk.left[g], m->walk.right[g]};
            for (int side = 0; side < 2; side++) {
                int32_t c = kids[side];
                /* a child after its parent (the walk ends) and in its own tree */
                if (c >= 0 ? (c <= n || c >= k) : ((int64_t)~c > k))
                    return bad(r, side ? S_RIGHT : S_LEFT, "node %lld of tree %lld has child "
                               "%d, outside its tree", (long long)n, (long long)t, c);
            }
            if (v->feature[g] < 0 || v->feature[g] >= F)
                return bad(r, S_FEATURE, "node %lld of tree %lld reads feature %d of %lld",
                           (long long)n, (long long)t, v->feature[g], (long long)F);
            if (v->cat_offset[g] < 0 || v->cat_offset[g] > n_cat)
                return bad(r, S_CAT_OFFSET, "node %lld of tree %lld: category words from %lld, "
                           "of %lld", (long long)n, (long long)t, (long long)v->cat_offset[g],
                           (long long)n_cat);
            if (v->cat_nwords[g] < 0 || v->cat_nwords[g] > n_cat - v->cat_offset[g])
                return bad(r, S_CAT_NWORDS, "node %lld of tree %lld: %lld category words past "
                           "the table's end", (long long)n, (long long)t,
                           (long long)v->cat_nwords[g]);
        }
    }
    if (fault) /* the pass and the loop check one set of rules: never reached */
        return bad(r, S_NODE_OFFSET, "a node is out of place");
    if (f->has_linear) {
        if ((st = check_offsets(r, S_LIN_OFFSET, f->lin_offset, m->n_leaves, n_terms, 0)))
            return st;
        for (int64_t k = 0; k < n_terms; k++)
            if (f->lin_feature[k] < 0 || f->lin_feature[k] >= F)
                return bad(r, S_LIN_FEATURE, "term %lld reads feature %d of %lld", (long long)k,
                           f->lin_feature[k], (long long)F);
    }
    return QS_OK;
}

/* The RapidScorer path of QUICKSCORER_ISA where it names one ("scalar", "avx2", "avx512"),
 * else the widest this CPU runs; -1 where it names one this CPU cannot run or none known. */
static int rs_isa_asked(int* fixed)
{
    const char* name = getenv("QUICKSCORER_ISA");
    *fixed = name != NULL && *name != '\0';
    if (!*fixed) {
        int isa = RS_ISA_AVX512;
        while (isa > RS_ISA_SCALAR && !rs_isa_available(isa)) isa--;
        return isa;
    }
    int isa = strcmp(name, "scalar") == 0 ? RS_ISA_SCALAR
              : strcmp(name, "avx2") == 0 || strcmp(name, "neon") == 0 ? RS_ISA_AVX2
              : strcmp(name, "avx512") == 0 ? RS_ISA_AVX512 : -1;
    return isa >= 0 && rs_isa_available(isa) ? isa : -1;
}

/* The index's RapidScorer part from word w0 (read_index's version 2), checked as Python's
 * RSLayout checks it (check.h rs_check) and against the forest. */
static int read_rs(const reader* r, qs_model* m, uint64_t w0, int n_arrays)
{
    rscore* s = &m->rs;
    const qs_forest* f = &m->forest;
    uint64_t from = word(r, w0 + R_FROM), min_lanes = word(r, w0 + R_MIN_LANES);
    uint64_t chunk = word(r, w0 + R_CHUNK), only = word(r, w0 + R_ONLY);
    char head[96];
    snprintf(head, sizeof head, "section %u (C index)", r->index_section);
    if (word(r, w0 + R_SLOTS) != (uint64_t)n_arrays)
        return fail(QS_E_FORMAT, "%s: %llu RapidScorer arrays, not the %d its version has",
                    head, (unsigned long long)word(r, w0 + R_SLOTS), n_arrays);
    if (from == 0)
        return QS_OK;
    if (from > ((uint64_t)1 << 40) || min_lanes > 64 || chunk < 1 || chunk > QS_RS_MAX_CHUNK ||
        only > 1)
        return fail(QS_E_FORMAT, "%s: RapidScorer from %llu rows, %llu lanes, chunks of %llu, "
                    "levels alone %llu: out of range", head, (unsigned long long)from,
                    (unsigned long long)min_lanes, (unsigned long long)chunk,
                    (unsigned long long)only);
    if (m->leaf_sum != SUM_FAMILY)
        return QS_OK; /* RankLib's sums: the walk, which gives the leaves they read */
    rs_arrays a;
    memset(&a, 0, sizeof a);
    for (int k = 0; k < n_arrays; k++) {
        uint64_t sec = word(r, w0 + R_HEAD + (uint64_t)k);
        if (sec == 0 || sec >= r->n_sections || sec == r->index_section)
            return fail(QS_E_FORMAT, "%s: the RapidScorer array %s names section %llu, which "
                        "is not an array section", head, RS_ARRAY_NAMES[k],
                        (unsigned long long)sec);
        qsm_section e = qsm_section_at(r->base, r->size, (uint32_t)sec);
        if (e.kind != QSM_KIND_ARRAY || e.nbytes % RS_ARRAY_SIZES[k])
            return fail(QS_E_FORMAT, "section %llu (%s): %llu bytes, not items of %d bytes",
                        (unsigned long long)sec, RS_ARRAY_NAMES[k], (unsigned long long)e.nbytes,
                        RS_ARRAY_SIZES[k]);
        rs_array_at(&a, k)->data = e.nbytes ? (const void*)(r->base + e.offset) : NULL;
        rs_array_at(&a, k)->n = (int64_t)(e.nbytes / RS_ARRAY_SIZES[k]);
    }
    a.lv_only = (int)only;
    rs_view* v = &s->view;
    const char* why = rs_check(&a, f->n_features, v);
    if (why != NULL)
        return fail(QS_E_FORMAT, "%s: the RapidScorer layout: %s", head, why);
    int xgb = f->family == QS_FAMILY_XGBOOST;
    if (v->n_trees != f->n_trees || v->n_leaves != m->n_leaves ||
        (v->leaf_order != NULL && xgb && v->leaf_value_f32 == NULL) ||
        (v->lv_on && xgb && v->lv_value_f32 == NULL) ||
        (v->lv_on && !xgb && v->lv_value == NULL))
        return fail(QS_E_FORMAT, "%s: the RapidScorer layout and the forest disagree on the "
                    "model's shape", head);
    for (int64_t t = 0; t <= f->n_trees; t++)
        if (((const int64_t*)a.leaf_offset.data)[t] != f->tree_leaf_offset[t])
            return fail(QS_E_FORMAT, "%s: the RapidScorer layout's tree %lld has other leaves "
                        "than the forest's", head, (long long)t);
    s->isa = rs_isa_asked(&s->fixed);
    if (s->isa < 0)
        return fail(QS_E_UNSUPPORTED, "QUICKSCORER_ISA=%s: not an instruction set this CPU "
                    "runs RapidScorer on (scalar, avx2, avx512)", getenv("QUICKSCORER_ISA"));
    s->wide = s->isa == RS_ISA_AVX2;
    v->lv_min_lanes = only ? 0 : (int64_t)(min_lanes > 32 ? min_lanes : 32);
    v->lv_chunk = (int64_t)chunk;   /* the level walk's chunks or the scan's */
    v->lv.vbmi = rs_lv_vbmi_available();
    v->lv.halves = rs_lv_halves_default();
    v->wide_add = rs_wide_add_default();
    /* XGBoost's rows are float32 values: the rank search compares in float32 where every
     * threshold is one (as Python's RSLayout float32_ranks) */
    int64_t n_piv = a.rank_pivots.n, n_bkt = a.rank_buckets.n;
    int exact = xgb;
    for (int64_t i = 0; exact && i < n_piv; i++)
        exact = (double)(float)v->rank_pivots[i] == v->rank_pivots[i];
    for (int64_t i = 0; exact && i < n_bkt; i++)
        exact = (double)(float)v->rank_buckets[i] == v->rank_buckets[i];
    if (exact) {
        s->ranks32 = (float*)malloc(sizeof(float) * (size_t)(n_piv + n_bkt + 1));
        if (s->ranks32 == NULL)
            return fail(QS_E_MEMORY, "no memory for the RapidScorer ranks");
        for (int64_t i = 0; i < n_piv; i++) s->ranks32[i] = (float)v->rank_pivots[i];
        for (int64_t i = 0; i < n_bkt; i++) s->ranks32[n_piv + i] = (float)v->rank_buckets[i];
        v->rank_pivots32 = s->ranks32;
        v->rank_buckets32 = s->ranks32 + n_piv;
    }
    s->from = (int64_t)from;
    return QS_OK;
}

/* The index's walk part (version 4): Python's walk layout (model_file.py C_INDEX_WALK_SLOTS),
 * whose table the walk reads in place where it is named, checked as Python's WalkLayout
 * checks it: the leaf records exactly as walk_tables writes them, every node's column in the
 * expanded row and its children rows of its own tree below it (so that every walk ends
 * inside the table), the roots, the columns in increasing order, the special nodes' fields
 * in range. */
enum { WK_TABLE, WK_ROOTS, WK_FILL, WK_FEATURE, WK_THRESHOLD, WK_FLAGS, WK_CAT_OFFSET,
       WK_CAT_NWORDS, WK_V4_COUNT, WK_CNODES = WK_V4_COUNT, WK_CNODE_OFFSET, WK_CDEPTH,
       WK_CSLOT_OFFSET, WK_CSLOT_LEAF, WK_COUNT };
static const char* const WK_NAMES[WK_COUNT] = {"walk_table", "roots", "fill_cols", "feature",
                                               "threshold", "flags", "cat_offset",
                                               "cat_nwords", "cnodes", "cnode_offset",
                                               "cdepth", "cslot_offset", "cslot_leaf"};
static const int WK_SIZES[WK_COUNT] = {8, 4, 4, 4, 8, 1, 8, 8, 8, 8, 1, 8, 4};

static int complete_values(qs_model* m, int64_t n_ends);

/* The index's complete trees (version 5): Python's walk layout laid out complete, read in
 * place where it has them, checked as Python's WalkLayout checks them (walk.h
 * walk_complete_fault); the end slots' values this library's own (complete_values). */
static int read_complete(const reader* r, qs_model* m, const void* const* data,
                         const int64_t* count, const uint64_t* sec)
{
    cwalk* w = &m->fast;
    const qs_nodes* v = &m->walk.nodes;
    int cfloat = 0;
    int fault = walk_complete_fault(
        (const uint64_t*)data[WK_CNODES], count[WK_CNODES],
        (const int64_t*)data[WK_CNODE_OFFSET], count[WK_CNODE_OFFSET],
        (const uint8_t*)data[WK_CDEPTH], count[WK_CDEPTH],
        (const int64_t*)data[WK_CSLOT_OFFSET], count[WK_CSLOT_OFFSET],
        (const int32_t*)data[WK_CSLOT_LEAF], count[WK_CSLOT_LEAF], v->node_offset,
        m->forest.n_trees, w->n_cols, &cfloat);
    if (fault == WALK_COMPLETE_NONE)
        return QS_OK;
    int k = fault == WALK_COMPLETE_SLOT   ? WK_CNODES
            : fault == WALK_COMPLETE_LEAF ? WK_CSLOT_LEAF
                                          : WK_CDEPTH;
    const char* why = fault == WALK_COMPLETE_STRAY ? "complete-tree fields without trees"
                      : fault == WALK_COMPLETE_SHAPE
                          ? "the complete trees' offsets do not match their depths, or a group "
                            "of eight trees has two depths"
                      : fault == WALK_COMPLETE_SLOT ? "a complete tree's column or threshold is "
                                                      "out of place"
                                                    : "an end slot names a leaf its tree does "
                                                      "not have";
    if (fault != WALK_COMPLETE_SOUND)
        return fail(QS_E_FORMAT, "section %llu (%s): %s", (unsigned long long)sec[k],
                    WK_NAMES[k], why);
    /* the file's arrays, which the kernels only read (complete_in_file: never freed) */
    w->complete_in_file = 1;
    if (cfloat)
        w->cnodes32 = (walk_cnode32*)data[WK_CNODES];
    else
        w->cnodes = (walk_cnode*)data[WK_CNODES];
    w->cnode_offset = (int64_t*)data[WK_CNODE_OFFSET];
    w->cdepth = (uint8_t*)data[WK_CDEPTH];
    w->cslot_offset = (int64_t*)data[WK_CSLOT_OFFSET];
    w->slot_leaf = (int32_t*)data[WK_CSLOT_LEAF];
    return complete_values(m, count[WK_CSLOT_LEAF]);
}

static int read_walk(const reader* r, qs_model* m, uint64_t w0, uint64_t version)
{
    cwalk* w = &m->fast;
    const qs_forest* f = &m->forest;
    const qs_nodes* v = &m->walk.nodes;
    char head[96];
    snprintf(head, sizeof head, "section %u (C index)", r->index_section);
    const int n_wk = version >= 5 ? WK_COUNT : WK_V4_COUNT;
    if (word(r, w0) != (uint64_t)n_wk)
        return fail(QS_E_FORMAT, "%s: %llu walk arrays, not the %d its version has", head,
                    (unsigned long long)word(r, w0), n_wk);
    if (word(r, w0 + 1) == 0)
        return QS_OK; /* no walk layout written: the library builds its own */
    const void* data[WK_COUNT];
    int64_t count[WK_COUNT];
    uint64_t sec[WK_COUNT];
    for (int k = 0; k < n_wk; k++) {
        sec[k] = word(r, w0 + 1 + (uint64_t)k);
        if (sec[k] == 0 || sec[k] >= r->n_sections || sec[k] == r->index_section)
            return fail(QS_E_FORMAT, "%s: the walk array %s names section %llu, which is not "
                        "an array section", head, WK_NAMES[k], (unsigned long long)sec[k]);
        qsm_section e = qsm_section_at(r->base, r->size, (uint32_t)sec[k]);
        if (e.kind != QSM_KIND_ARRAY || e.nbytes % (uint64_t)WK_SIZES[k])
            return fail(QS_E_FORMAT, "section %llu (%s): %llu bytes, not items of %d bytes",
                        (unsigned long long)sec[k], WK_NAMES[k], (unsigned long long)e.nbytes,
                        WK_SIZES[k]);
        static const uint64_t none[1] = {0};
        data[k] = e.nbytes ? (const void*)(r->base + e.offset) : (const void*)none;
        count[k] = (int64_t)(e.nbytes / (uint64_t)WK_SIZES[k]);
    }
#define WBAD(k, ...) fail(QS_E_FORMAT, "section %llu (%s): " __VA_ARGS__)
    int64_t T = f->n_trees, F = f->n_features, n_sp = count[WK_FEATURE];
    int64_t n_cat = (int64_t)word(r, W_CAT_WORDS);
    const int64_t B = (int64_t)sizeof(walk_node);
    for (int k = WK_THRESHOLD; k <= WK_CAT_NWORDS; k++)
        if (count[k] != n_sp)
            return WBAD(k, "%lld values for %lld special nodes", (unsigned long long)sec[k],
                        WK_NAMES[k], (long long)count[k], (long long)n_sp);
    /* the leaf records and the nodes (walk.h, the checks Python's WalkLayout makes) */
    int64_t rows = count[WK_TABLE] / 3;
    const walk_node* table = (const walk_node*)data[WK_TABLE];
    int64_t n_records = count[WK_TABLE] % 3 ? -1 : walk_table_records(table, rows);
    if (n_records < 1 || (n_records + rows) * B >= INT32_MAX)
        return WBAD(WK_TABLE, "the leaf records are not in place",
                    (unsigned long long)sec[WK_TABLE], WK_NAMES[WK_TABLE]);
    const walk_node* nodes = table + n_records;
    int64_t n_walk = rows - n_records, n_fill = count[WK_FILL];
    int64_t n_cols = n_fill + n_sp > 0 ? n_fill + n_sp : 1;
    if (n_walk < 2 || v->node_offset[T] != n_walk - 2)
        return WBAD(WK_TABLE, "%lld nodes, not the trees' %lld and two sentinels",
                    (unsigned long long)sec[WK_TABLE], WK_NAMES[WK_TABLE],
                    (long long)n_walk, (long long)v->node_offset[T]);
    if (!walk_table_sound(table, rows, n_records, v->node_offset, T, n_cols))
        return WBAD(WK_TABLE, "a node's child or column is out of place",
                    (unsigned long long)sec[WK_TABLE], WK_NAMES[WK_TABLE]);
    int64_t bad = 0;
    const int32_t* roots = (const int32_t*)data[WK_ROOTS];
    if (count[WK_ROOTS] != T + 8)
        return WBAD(WK_ROOTS, "%lld roots for %lld trees", (unsigned long long)sec[WK_ROOTS],
                    WK_NAMES[WK_ROOTS], (long long)count[WK_ROOTS], (long long)T);
    for (int64_t t = 0; t < T + 8; t++)
        bad |= (int64_t)(roots[t] < 0) | (int64_t)(roots[t] >= n_walk) |
               (int64_t)(t >= T && roots[t] != n_walk - 1);
    if (bad)
        return WBAD(WK_ROOTS, "a root is not a node of the table",
                    (unsigned long long)sec[WK_ROOTS], WK_NAMES[WK_ROOTS]);
    const int32_t* fill = (const int32_t*)data[WK_FILL];
    for (int64_t j = 0; j < n_fill; j++)
        bad |= (int64_t)(fill[j] < 0) | (int64_t)(fill[j] >= R_COUNT * F) |
               (int64_t)(j > 0 && fill[j] <= fill[j - 1]);
    if (bad)
        return WBAD(WK_FILL, "the columns are out of range or out of order",
                    (unsigned long long)sec[WK_FILL], WK_NAMES[WK_FILL]);
    const int32_t* sf = (const int32_t*)data[WK_FEATURE];
    const int64_t* so = (const int64_t*)data[WK_CAT_OFFSET];
    const int64_t* sn = (const int64_t*)data[WK_CAT_NWORDS];
    for (int64_t j = 0; j < n_sp; j++)
        bad |= (int64_t)(sf[j] < 0) | (int64_t)(sf[j] >= F) | (int64_t)(so[j] < 0) |
               (int64_t)(so[j] > n_cat) | (int64_t)(sn[j] < 0) | (int64_t)(sn[j] > n_cat - so[j]);
    if (bad)
        return WBAD(WK_FEATURE, "a special node's feature or categories are out of range",
                    (unsigned long long)sec[WK_FEATURE], WK_NAMES[WK_FEATURE]);
#undef WBAD
    w->roots = (int32_t*)malloc(sizeof(int32_t) * (size_t)(T + 16));
    if (w->roots == NULL)
        return fail(QS_E_MEMORY, "no memory for the walk's roots");
    for (int64_t t = 0; t < T + 16; t++)
        w->roots[t] = (int32_t)((t < T + 8 ? roots[t] : n_walk - 1) * B);
    for (int rule = 0, j = 0; rule <= R_COUNT; rule++) {
        while (j < n_fill && fill[j] < (int64_t)rule * F)
            j++;
        w->rule_start[rule] = rule == R_COUNT ? n_fill : j;
    }
    w->in_file = 1;
    w->nodes = nodes;
    w->fill_cols = fill;
    w->n_fill = n_fill;
    w->n_cols = n_cols;
    w->n_special = n_sp;
    w->first_special = n_fill;
    w->sp.feature = sf;
    w->sp.threshold = (const double*)data[WK_THRESHOLD];
    w->sp.flags = (const uint8_t*)data[WK_FLAGS];
    w->sp.cat_offset = so;
    w->sp.cat_nwords = sn;
    w->sp.cat_words = v->cat_words;
    w->sp.node_offset = NULL;
    return n_wk > WK_V4_COUNT ? read_complete(r, m, data, count, sec) : QS_OK;
}

static int read_index(const reader* r, qs_model* m)
{
    char head[96];
    snprintf(head, sizeof head, "section %u (C index)", r->index_section);
    if (r->index_words < W_HEAD || memcmp(r->index, QSC_MAGIC, 8) != 0)
        return fail(QS_E_UNSUPPORTED, "the file has no C index (its last section): it was "
                    "written by a quickscorer before the C library; compile the model again");
    uint64_t version = word(r, W_VERSION);
    if (version < 1 || version > QSC_VERSION)
        return fail(QS_E_FORMAT, "%s: index version %llu, not one of the versions 1 to %u "
                    "this library reads: use the quickscorer that wrote the file", head,
                    (unsigned long long)version, QSC_VERSION);
    uint64_t n_slots = word(r, W_SLOTS);
    int n_rs = version >= 3 ? RS_ARRAY_COUNT : RS_ARRAY_COUNT_V2;
    uint64_t rs_words = version >= 2 ? R_HEAD + (uint64_t)n_rs : 0;
    uint64_t walk_words = version >= 5 ? 1 + WK_COUNT : version == 4 ? 1 + WK_V4_COUNT : 0;
    if (n_slots != S_COUNT || r->index_words != W_HEAD + n_slots + rs_words + walk_words)
        return fail(QS_E_FORMAT, "%s: %llu arrays, not the %d this library reads", head,
                    (unsigned long long)n_slots, S_COUNT);
    /* (0 from this release's writer: a later one names a stage this library lacks) */
    if (word(r, W_UNSUPPORTED) != 0)
        return fail(QS_E_UNSUPPORTED, "%s: the model needs a stage this library does not "
                    "carry: score it from Python", head);
    uint64_t family = word(r, W_FAMILY), F = word(r, W_FEATURES), K = word(r, W_OUTPUTS);
    uint64_t T = word(r, W_TREES), nodes = word(r, W_NODES), leaves = word(r, W_LEAVES);
    uint64_t terms = word(r, W_TERMS), cats = word(r, W_CAT_WORDS), code = word(r, W_TRANSFORM);
    const uint64_t lim = (uint64_t)1 << 40;
    if (family > QS_FAMILY_PLAIN || F < 1 || F >= INT32_MAX || K < 1 || K > lim || T < 1 ||
        T > lim || nodes >= INT32_MAX || leaves > lim || terms > lim || cats > lim ||
        code >= QS_T_COUNT)
        return fail(QS_E_FORMAT, "%s: counts out of range (family %llu, %llu features, %llu "
                    "outputs, %llu trees, %llu nodes, transform %llu)", head,
                    (unsigned long long)family, (unsigned long long)F, (unsigned long long)K,
                    (unsigned long long)T, (unsigned long long)nodes,
                    (unsigned long long)code);
    uint64_t leaf_sum = word(r, W_LEAF_SUM), bags = word(r, W_BAGS);
    if (leaf_sum > SUM_RANKLIB || bags > T || (leaf_sum == SUM_RANKLIB && K != 1))
        return fail(QS_E_FORMAT, "%s: leaf sum %llu of %llu bags for %llu outputs", head,
                    (unsigned long long)leaf_sum, (unsigned long long)bags,
                    (unsigned long long)K);
    m->leaf_sum = (int)leaf_sum;
    m->n_bags = (int64_t)bags;
    double sig, div;
    uint64_t b = word(r, W_SIGMOID);
    memcpy(&sig, &b, 8);
    b = word(r, W_DIVIDE_BY);
    memcpy(&div, &b, 8);
    if (!isfinite(sig) || !isfinite(div) || !(div > 0))
        return fail(QS_E_FORMAT, "%s: the transform's scale %g or divisor %g", head, sig, div);
    if (leaf_sum == SUM_RANKLIB && (code != QS_T_IDENTITY || div != 1.0))
        return fail(QS_E_UNSUPPORTED, "%s: a RankLib sum followed by transform %llu or an "
                    "average, which RankLib's models do not have", head,
                    (unsigned long long)code);
    qs_forest* f = &m->forest;
    qs_nodes* v = &m->walk.nodes;
    f->family = (int)family;
    f->n_features = (int64_t)F;
    f->n_outputs = (int64_t)K;
    f->n_trees = (int64_t)T;
    m->n_leaves = (int64_t)leaves;
    m->transform = (int)code;
    m->sigmoid = sig;
    m->divide_by = div;
    int st, xgb = family == QS_FAMILY_XGBOOST;
    const void* p;
#define SLOT(s, count, type, req, dst)                                                       \
    if ((st = slot_array(r, s, count, sizeof(type), req, &p)) != QS_OK)                      \
        return st;                                                                           \
    dst = (const type*)p;
    SLOT(S_TREE_GROUP, T, int32_t, 1, f->tree_group)
    SLOT(S_TREE_WEIGHT, T, float, 0, f->tree_weight)
    SLOT(S_TREE_LEAF_OFFSET, T + 1, int64_t, 1, f->tree_leaf_offset)
    SLOT(S_LEAF_VALUE, leaves, double, 1, f->leaf_value)
    SLOT(S_LEAF_VALUE_F32, leaves, float, xgb, f->leaf_value_f32)
    SLOT(S_BASE_SCORE, K, double, 1, f->base_score)
    SLOT(S_LIN_OFFSET, leaves + 1, int64_t, 0, f->lin_offset)
    f->has_linear = f->lin_offset != NULL;
    SLOT(S_LIN_CONST, leaves, double, f->has_linear, f->lin_const)
    SLOT(S_LIN_FEATURE, terms, int32_t, f->has_linear, f->lin_feature)
    SLOT(S_LIN_COEFF, terms, double, f->has_linear, f->lin_coeff)
    SLOT(S_FEATURE, nodes, int32_t, 1, v->feature)
    SLOT(S_THRESHOLD, nodes, double, 1, v->threshold)
    SLOT(S_FLAGS, nodes, uint8_t, 1, v->flags)
    SLOT(S_LEFT, nodes, int32_t, 1, m->walk.left)
    SLOT(S_RIGHT, nodes, int32_t, 1, m->walk.right)
    SLOT(S_CAT_OFFSET, nodes, int64_t, 1, v->cat_offset)
    SLOT(S_CAT_NWORDS, nodes, int64_t, 1, v->cat_nwords)
    SLOT(S_CAT_WORDS, cats, uint32_t, 1, v->cat_words)
    SLOT(S_NODE_OFFSET, T + 1, int64_t, 1, v->node_offset)
    SLOT(S_SUM_WEIGHT, T, double, leaf_sum == SUM_RANKLIB, m->sum_weight)
    SLOT(S_BAG_OFFSET, bags + 1, int64_t, bags > 0, m->bag_offset)
#undef SLOT
    if (bags == 0)
        m->bag_offset = NULL;
    if (leaf_sum != SUM_RANKLIB)
        m->sum_weight = NULL;
    if (bags > 0) { /* bags of trees in order, none empty, covering every tree */
        if (m->bag_offset[0] != 0 || m->bag_offset[bags] != (int64_t)T)
            return bad(r, S_BAG_OFFSET, "the bags do not cover the %llu trees",
                       (unsigned long long)T);
        for (uint64_t i = 0; i < bags; i++)
            if (m->bag_offset[i + 1] <= m->bag_offset[i])
                return bad(r, S_BAG_OFFSET, "bag %llu is empty or out of order",
                           (unsigned long long)i);
    }
    if (!xgb)
        f->leaf_value_f32 = NULL;
    /* the transforms of float32 raw scores (XGBoost's), and of float64 ones: LightGBM's,
     * ONNX Runtime's (in float32) and scikit-learn's (NumPy's) */
    if (xgb ? !(code == QS_T_IDENTITY || qs_transform_f32((int)code))
            : !(qs_transform_f64((int)code) || code >= QS_T_ONNX_LOGISTIC))
        return fail(QS_E_FORMAT, "%s: transform %llu does not fit the model's scores", head,
                    (unsigned long long)code);
    if ((st = check_model(r, m)) != QS_OK)
        return st;
    if (version >= 2 && (st = read_rs(r, m, W_HEAD + n_slots, n_rs)) != QS_OK)
        return st;
    return version >= 4 ? read_walk(r, m, W_HEAD + n_slots + rs_words, version) : QS_OK;
}

/* The missing-value rule of a numeric node (forest.h's qs_goes_left, case by case). */
static int node_rule(int family, uint8_t flags)
{
    int left = (flags & QS_NODE_DEFAULT_LEFT) != 0, mt = (flags >> 2) & 3;
    if (family == QS_FAMILY_XGBOOST)
        return left ? R_NAN_LEFT : R_NAN_RIGHT;
    if (mt == QS_MISSING_NONE)
        return R_NAN_AS_ZERO;
    if (mt == QS_MISSING_ZERO && family == QS_FAMILY_LIGHTGBM)
        return left ? R_ZERO_LEFT : R_ZERO_RIGHT;
    return left ? R_NAN_LEFT : R_NAN_RIGHT;
}

/* The complete layout let go (walk8 scores without it). */
static void drop_complete(cwalk* w)
{
    if (!w->complete_in_file) {
        free(w->cnodes);
        free(w->slot_leaf);
        free(w->cnode_offset);
        free(w->cslot_offset);
        free(w->cdepth);
        free(w->cnodes32);
    }
    w->complete_in_file = 0;
    free(w->cvalue64);
    free(w->cvalue32);
    w->cnodes = NULL;
    w->cnodes32 = NULL;
    w->slot_leaf = NULL;
    w->cnode_offset = w->cslot_offset = NULL;
    w->cdepth = NULL;
    w->cvalue64 = NULL;
    w->cvalue32 = NULL;
}

static void free_walk(cwalk* w)
{
    free(w->table);
    free(w->roots);
    free(w->special);
    drop_complete(w);
    memset(w, 0, sizeof *w);
}

/* The depth of tree t (0 for one leaf): children come after their parent, so one pass
 * in node order gives every node's level. */
static int tree_depth(const qs_model* m, int64_t t, uint8_t* level)
{
    const qs_nodes* v = &m->walk.nodes;
    int64_t base = v->node_offset[t], k = v->node_offset[t + 1] - base;
    int depth = 0;
    if (k == 0)
        return 0;
    level[0] = 0;
    for (int64_t n = 0; n < k; n++) {
        int32_t kids[2] = {m->walk.left[base + n], m->walk.right[base + n]};
        for (int side = 0; side < 2; side++) {
            int d = level[n] + 1;
            if (kids[side] >= 0)
                level[kids[side]] = (uint8_t)(d < 255 ? d : 255);
            else if (d > depth)
                depth = d;
        }
    }
    return depth;
}

/* The float32 keys of the complete slots and the end slots' values, where the model allows
 * them (cwalk's cnodes32, cvalue64, cvalue32): the forms Python's walk takes for one and two
 * rows (walk.py float32_keys, WalkLayout.attach_values). */
static int complete_values(qs_model* m, int64_t n_ends);

static int complete_extras(qs_model* m, int64_t n_slots, int64_t n_ends)
{
    const qs_forest* f = &m->forest;
    cwalk* w = &m->fast;
    int exact = f->family == QS_FAMILY_XGBOOST;
    for (int64_t i = 0; i < n_slots && exact; i++)
        exact = (double)(float)w->cnodes[i].thr == w->cnodes[i].thr;
    if (exact) {
        w->cnodes32 = (walk_cnode32*)malloc(sizeof(walk_cnode32) * (size_t)(n_slots ? n_slots : 1));
        if (w->cnodes32 == NULL) {
            free_walk(w);
            return fail(QS_E_MEMORY, "no memory for the walk's complete trees");
        }
        for (int64_t i = 0; i < n_slots; i++) {
            w->cnodes32[i].key = walk_key32((float)w->cnodes[i].thr);
            w->cnodes32[i].col = w->cnodes[i].col;
        }
    }
    return complete_values(m, n_ends);
}

/* Each end slot's leaf value (cvalue64, or cvalue32 for XGBoost), where the walk adds them
 * group by group: one output, plain leaves. */
static int complete_values(qs_model* m, int64_t n_ends)
{
    const qs_forest* f = &m->forest;
    cwalk* w = &m->fast;
    int xgb = f->family == QS_FAMILY_XGBOOST;
    /* a DART weight's product rounded on its own equals the sum's only where the sums are
     * not fused (forest.h qs_leaf_f32) */
    if (f->n_outputs != 1 || f->has_linear || (f->tree_weight != NULL && QS_FUSED_SUMS))
        return QS_OK;
    if (xgb)
        w->cvalue32 = (float*)calloc((size_t)(n_ends ? n_ends : 1), sizeof(float));
    else
        w->cvalue64 = (double*)calloc((size_t)(n_ends ? n_ends : 1), sizeof(double));
    if (w->cvalue32 == NULL && w->cvalue64 == NULL)
        goto no_memory;
    for (int64_t t = 0; t < f->n_trees; t++) {
        int64_t g = t / 8, k = t % 8, span = ((int64_t)1 << w->cdepth[8 * g]) - 1;
        int64_t e0 = w->cslot_offset[8 * g] + k * (span + 1);
        for (int64_t e = e0; e < e0 + span + 1; e++) {
            int64_t gl = f->tree_leaf_offset[t] + w->slot_leaf[e];
            if (xgb)
                w->cvalue32[e] = qs_leaf_f32(f, t, gl);
            else
                w->cvalue64[e] = f->leaf_value[gl];
        }
    }
    return QS_OK;
no_memory:
    free_walk(w);
    return fail(QS_E_MEMORY, "no memory for the walk's complete trees");
}

/* The complete layout of every tree (walk.h WALK_GROUPS) where none is deeper than
 * QS_COMPLETE_DEPTH: slot h (1-based, heap order) of tree k of a group holds the node at its
 * place, or below a leaf reached early a node every row passes on the left (+inf), down to
 * the end slot that names the leaf. The slots a row cannot reach hold that too. */
static int build_complete(qs_model* m)
{
    const qs_forest* f = &m->forest;
    const qs_nodes* v = &m->walk.nodes;
    cwalk* w = &m->fast;
    int64_t T = f->n_trees, groups = (T + 7) / 8, max_k = 0;
    for (int64_t t = 0; t < T; t++)
        if (v->node_offset[t + 1] - v->node_offset[t] > max_k)
            max_k = v->node_offset[t + 1] - v->node_offset[t];
    if (groups < 1)
        return QS_OK;
    uint8_t* level = (uint8_t*)malloc((size_t)(max_k ? max_k : 1));
    w->cdepth = (uint8_t*)calloc((size_t)(groups * 8), 1);
    w->cnode_offset = (int64_t*)calloc((size_t)(groups * 8), sizeof(int64_t));
    w->cslot_offset = (int64_t*)calloc((size_t)(groups * 8), sizeof(int64_t));
    if (level == NULL || w->cdepth == NULL || w->cnode_offset == NULL || w->cslot_offset == NULL)
        goto no_memory;
    int64_t n_slots = 0, n_ends = 0, real_slots = 0;
    int deep = 0;
    for (int64_t g = 0; g < groups && !deep; g++) {
        int d = 0;
        for (int64_t t = 8 * g; t < 8 * g + 8 && t < T; t++) {
            int dt = tree_depth(m, t, level);
            deep |= dt > QS_COMPLETE_DEPTH;
            d = dt > d ? dt : d;
        }
        if (deep)
            break;                      /* no complete trees: 2^d is not taken */
        w->cdepth[8 * g] = (uint8_t)d;
        w->cnode_offset[8 * g] = n_slots;
        w->cslot_offset[8 * g] = n_ends;
        n_slots += 8 * (((int64_t)1 << d) - 1);
        n_ends += 8 * ((int64_t)1 << d);
        real_slots += (T - 8 * g < 8 ? T - 8 * g : 8) * (((int64_t)1 << d) - 1);
    }
    int64_t n_nodes = v->node_offset[T];
    if (deep || real_slots > QS_COMPLETE_SLOTS * (n_nodes > 1 ? n_nodes : 1)) {
        free(level);
        drop_complete(w);
        return QS_OK;
    }
    w->cnodes = (walk_cnode*)malloc(sizeof(walk_cnode) * (size_t)(n_slots ? n_slots : 1));
    w->slot_leaf = (int32_t*)calloc((size_t)(n_ends ? n_ends : 1), sizeof(int32_t));
    if (w->cnodes == NULL || w->slot_leaf == NULL)
        goto no_memory;
    for (int64_t i = 0; i < n_slots; i++) {
        w->cnodes[i].thr = INFINITY;
        w->cnodes[i].col = 0;
        w->cnodes[i].pad = 0;
    }
    /* (slot, node) pairs still to place: the node an internal local index, or ~leaf */
    int64_t cap = 2 * (QS_COMPLETE_DEPTH + 2); /* a depth-first walk: two pairs a level */
    int64_t* stack = (int64_t*)malloc(sizeof(int64_t) * (size_t)(2 * cap));
    if (stack == NULL)
        goto no_memory;
    for (int64_t t = 0; t < T; t++) {
        int64_t g = t / 8, k = t % 8, d = w->cdepth[8 * g], span = ((int64_t)1 << d) - 1;
        walk_cnode* slots = w->cnodes + w->cnode_offset[8 * g] + k * span - 1; /* [1..span] */
        int32_t* ends = w->slot_leaf + w->cslot_offset[8 * g] + k * (span + 1) - (span + 1);
        int64_t base = v->node_offset[t], top = 0;
        stack[top++] = 1;
        stack[top++] = v->node_offset[t + 1] > base ? 0 : ~(int64_t)0;
        while (top) {
            int64_t node = stack[--top], h = stack[--top];
            if (h > span) { /* an end slot: the leaf its path reaches */
                ends[h] = (int32_t)(node < 0 ? ~node : 0);
                continue;
            }
            if (node < 0) { /* a leaf reached early: every row on to the left */
                stack[top++] = 2 * h;
                stack[top++] = node;
                continue;
            }
            int64_t gn = base + node;
            slots[h].thr = w->nodes[gn].thr; /* the test walk8's table has for the node */
            slots[h].col = w->nodes[gn].col;
            stack[top++] = 2 * h;
            stack[top++] = m->walk.left[gn];  /* (a leaf's ~l stays ~l) */
            stack[top++] = 2 * h + 1;
            stack[top++] = m->walk.right[gn];
        }
    }
    free(stack);
    free(level);
    return complete_extras(m, n_slots, n_ends);
no_memory:
    free(level);
    free_walk(w);
    return fail(QS_E_MEMORY, "no memory for the walk's complete trees");
}

/* The walk's table of a model whose node table check_model passed; QS_OK with no table
 * where the offsets would not fit the walk's int32 (the reference walk then scores). */
static int build_walk(qs_model* m)
{
    const qs_forest* f = &m->forest;
    const qs_nodes* v = &m->walk.nodes;
    cwalk* w = &m->fast;
    int64_t F = f->n_features, T = f->n_trees, n_nodes = v->node_offset[T], max_leaves = 1;
    /* A node needs a column of its own (is special) unless "go right when the rule's value
     * > threshold" is its decision for every value: where the threshold is a number and, for
     * a rule that sends missing values right as +inf, below +inf. Each flags byte's rule and
     * whether +inf makes it special, from a table, so that no branch is taken on a node. */
    uint8_t rule_of[256], inf_special[256];
    for (int b = 0; b < 256; b++) {
        rule_of[b] = (uint8_t)node_rule(f->family, (uint8_t)b);
        inf_special[b] = rule_of[b] == R_NAN_RIGHT || rule_of[b] == R_ZERO_RIGHT;
    }
    int64_t used[R_COUNT + 1] = {0}; /* [R_COUNT]: the special nodes */
    for (int64_t g = 0; g < n_nodes; g++) {
        uint8_t fl = v->flags[g];
        double thr = v->threshold[g];
        int sp = (fl & QS_NODE_CATEGORICAL) != 0 || isnan(thr) ||
                 (inf_special[fl] && thr >= INFINITY);
        used[sp ? R_COUNT : rule_of[fl]]++;
    }
    w->n_special = used[R_COUNT];
    int64_t col = 0;
    for (int r = 0; r < R_COUNT; r++) {
        w->rule_col[r] = used[r] ? col : -1;
        col += used[r] ? F : 0;
    }
    w->first_special = col;
    w->n_cols = col + w->n_special > 0 ? col + w->n_special : 1;
    for (int64_t t = 0; t < T; t++)
        if (f->tree_leaf_offset[t + 1] - f->tree_leaf_offset[t] > max_leaves)
            max_leaves = f->tree_leaf_offset[t + 1] - f->tree_leaf_offset[t];
    int64_t records = max_leaves + n_nodes + 1;
    if (records >= INT32_MAX / (int64_t)sizeof(walk_node) || w->n_cols >= INT32_MAX) {
        memset(w, 0, sizeof *w);
        return QS_OK;
    }
    w->table = (walk_node*)malloc(sizeof(walk_node) * (size_t)records);
    w->roots = (int32_t*)malloc(sizeof(int32_t) * (size_t)(T + 16));
    /* one more than the special nodes: the node loop writes a slot for every node */
    w->special = (int32_t*)malloc(sizeof(int32_t) * (size_t)(w->n_special + 1));
    if (w->table == NULL || w->roots == NULL || w->special == NULL) {
        free_walk(w);
        return fail(QS_E_MEMORY, "no memory for the walk's table of %lld nodes",
                    (long long)n_nodes);
    }
    const int32_t B = (int32_t)sizeof(walk_node);
    walk_node* nodes = w->table + max_leaves;
    w->nodes = nodes;
    for (int64_t l = 0; l < max_leaves; l++) { /* leaf l's record steps on the spot */
        walk_node* r = nodes - 1 - l;
        r->thr = INFINITY;
        r->col = 0;
        r->kid[0] = r->kid[1] = (int32_t)(-1 - l) * B;
        r->pad = (int32_t)l;
    }
    walk_node* loop = nodes + n_nodes; /* the sentinel: a cursor past its trees circles */
    loop->thr = INFINITY;
    loop->col = 0;
    loop->kid[0] = loop->kid[1] = (int32_t)n_nodes * B;
    loop->pad = 0;
    int64_t k_special = 0;
    for (int64_t t = 0; t < T; t++) {
        int64_t base = v->node_offset[t], k = v->node_offset[t + 1] - base;
        w->roots[t] = k ? (int32_t)base * B : -B; /* a one-leaf tree: leaf 0's record */
        for (int64_t n = 0; n < k; n++) {
            int64_t g = base + n;
            walk_node* p = nodes + g;
            uint8_t fl = v->flags[g];
            double thr = v->threshold[g];
            int sp = (fl & QS_NODE_CATEGORICAL) != 0 || isnan(thr) ||
                     (inf_special[fl] && thr >= INFINITY);
            p->thr = sp ? 0.0 : thr;
            p->col = sp ? (int32_t)(w->first_special + k_special)
                        : (int32_t)(w->rule_col[rule_of[fl]] + v->feature[g]);
            w->special[k_special] = (int32_t)g;
            k_special += sp;
            /* a node child c of the tree: its byte offset from the first node; a leaf ~l:
             * its record's, -1 - l = c */
            for (int side = 0; side < 2; side++) {
                int32_t c = side ? m->walk.right[g] : m->walk.left[g];
                p->kid[side] = (int32_t)(c + (base & ~(int64_t)(c >> 31))) * B;
            }
            p->pad = 0;
        }
    }
    for (int64_t t = T; t < T + 16; t++)
        w->roots[t] = (int32_t)n_nodes * B;
    return build_complete(m);
}

/* A converted row's columns as the walk's nodes read them. */
/* A value as a column of rule r holds it: NaN or zero sent to the side the rule sends it. */
static inline double rule_value(int r, double x)
{
    if (isnan(x))
        return r == R_NAN_AS_ZERO ? 0.0
               : (r == R_NAN_LEFT || r == R_ZERO_LEFT) ? -INFINITY : INFINITY;
    if (x == 0.0 && r >= R_ZERO_LEFT)
        return r == R_ZERO_LEFT ? -INFINITY : INFINITY;
    return x;
}

/* expand_row for the file's walk layout: each rule's columns as one run of fill_cols (walk.py
 * walk_arrays), then the special nodes' decisions. */
static void expand_row_file(const qs_model* m, const double* row, double* xr)
{
    const cwalk* w = &m->fast;
    int64_t F = m->forest.n_features;
    for (int r = 0; r < R_COUNT; r++) {
        const int32_t* fill = w->fill_cols;
        const double* x0 = row - (int64_t)r * F;
        for (int64_t j = w->rule_start[r]; j < w->rule_start[r + 1]; j++) {
            xr[j] = rule_value(r, x0[fill[j]]);
        }
    }
    for (int64_t i = 0; i < w->n_special; i++)
        xr[w->n_fill + i] =
            qs_node_goes_left(&w->sp, m->forest.family, i, row) ? -INFINITY : INFINITY;
    if (w->n_fill + w->n_special == 0)
        xr[0] = 0.0; /* the column the leaves' records and the sentinels read */
}

static void expand_row(const qs_model* m, const double* row, double* xr)
{
    const cwalk* w = &m->fast;
    int64_t F = m->forest.n_features;
    if (w->in_file) {
        expand_row_file(m, row, xr);
        return;
    }
    for (int r = 0; r < R_COUNT; r++) {
        if (w->rule_col[r] < 0)
            continue;
        double* out = xr + w->rule_col[r];
        for (int64_t j = 0; j < F; j++) {
            out[j] = rule_value(r, row[j]);
        }
    }
    for (int64_t i = 0; i < w->n_special; i++)
        xr[w->first_special + i] =
            qs_node_goes_left(&m->walk.nodes, m->forest.family, w->special[i], row) ? -INFINITY
                                                                                    : INFINITY;
    if (w->n_cols == 1 && w->first_special == 0 && w->n_special == 0)
        xr[0] = 0.0; /* the column the leaves' records and the sentinel read */
}

static int open_bytes(qs_model* m)
{
    reader r;
    char err[256];
    int64_t bad;
    memset(&r, 0, sizeof r);
    r.base = (const uint8_t*)m->base;
    r.size = m->size;
    int st = qsm_check(r.base, r.size, 1, &r.n_sections, &bad, err, sizeof err);
    if (st != QSM_OK)
        return fail(QS_E_FORMAT, "%s", err);
    if (r.n_sections < 2)
        return fail(QS_E_UNSUPPORTED, "the file has no C index (its last section): compile "
                    "the model again");
    r.index_section = r.n_sections - 1;
    qsm_section e = qsm_section_at(r.base, r.size, r.index_section);
    if (e.kind != QSM_KIND_ARRAY || e.nbytes % 8)
        return fail(QS_E_UNSUPPORTED, "the file has no C index (its last section): compile "
                    "the model again");
    r.index = r.base + e.offset;
    r.index_words = e.nbytes / 8;
    st = read_index(&r, m);
    if (st != QS_OK)
        return st;
    return m->fast.in_file ? QS_OK : build_walk(m);
}

static void release(qs_model* m)
{
    if (m == NULL)
        return;
#ifdef QS_HAVE_MMAP
    if (m->mapped && m->base != NULL)
        munmap(m->base, m->size);
#endif
    if (!m->mapped)
        free(m->base);
    free_walk(&m->fast);
    free(m->rs.ranks32);
    free(m);
}

static void* aligned_copy(const void* data, size_t size)
{
    void* p = NULL;
#ifdef QS_HAVE_MMAP
    if (posix_memalign(&p, QSM_ALIGN, size ? size : 1) != 0)
        return NULL;
#else
    p = malloc(size ? size : 1); /* malloc's alignment: 16 bytes, which every array needs */
    if (p == NULL)
        return NULL;
#endif
    memcpy(p, data, size);
    return p;
}

QS_API int qs_open_memory(const void* data, size_t size, qs_model** out)
{
    if (out == NULL || (data == NULL && size))
        return fail(QS_E_ARGUMENT, "qs_open_memory: NULL %s", out == NULL ? "out" : "data");
    *out = NULL;
    qs_model* m = (qs_model*)calloc(1, sizeof *m);
    if (m == NULL || (m->base = aligned_copy(data, size)) == NULL) {
        free(m);
        return fail(QS_E_MEMORY, "qs_open_memory: no memory for %zu bytes", size);
    }
    m->size = size;
    int st = open_bytes(m);
    if (st != QS_OK) {
        release(m);
        return st;
    }
    *out = m;
    qs_error[0] = 0;
    return QS_OK;
}

QS_API int qs_open(const char* path, qs_model** out)
{
    if (out == NULL || path == NULL)
        return fail(QS_E_ARGUMENT, "qs_open: NULL %s", out == NULL ? "out" : "path");
    *out = NULL;
    qs_model* m = (qs_model*)calloc(1, sizeof *m);
    if (m == NULL)
        return fail(QS_E_MEMORY, "qs_open: no memory");
#ifdef QS_HAVE_MMAP
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat sb;
    if (fd < 0 || fstat(fd, &sb) != 0) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        free(m);
        return fail(QS_E_IO, "%s: %s", path, strerror(e));
    }
    if (!S_ISREG(sb.st_mode) || sb.st_size <= 0) {
        close(fd);
        free(m);
        return fail(QS_E_FORMAT, "%s: %s", path,
                    S_ISREG(sb.st_mode) ? "the file is empty" : "not a regular file");
    }
    m->size = (size_t)sb.st_size;
    m->base = mmap(NULL, m->size, PROT_READ, MAP_SHARED, fd, 0);
    int e = errno;
    close(fd);
    if (m->base == MAP_FAILED) {
        free(m);
        return fail(QS_E_IO, "%s: cannot map the file: %s", path, strerror(e));
    }
    m->mapped = 1;
#ifdef MADV_HUGEPAGE
    /* pages this mapping reads into the page cache come in as large folios, which every
     * later mapping of the file, in any process, maps in far fewer steps (an advice:
     * refused or already-cached pages change nothing; python -m benchmarks.load_time
     * --page-cache reread measures it) */
    (void)madvise(m->base, m->size, MADV_HUGEPAGE);
#endif
#else
    FILE* fh = fopen(path, "rb");
    if (fh == NULL) {
        free(m);
        return fail(QS_E_IO, "%s: %s", path, strerror(errno));
    }
    fseek(fh, 0, SEEK_END);
    long n = ftell(fh);
    fseek(fh, 0, SEEK_SET);
    m->size = n > 0 ? (size_t)n : 0;
    m->base = malloc(m->size ? m->size : 1);
    if (m->base == NULL || fread(m->base, 1, m->size, fh) != m->size) {
        fclose(fh);
        release(m);
        return fail(QS_E_IO, "%s: cannot read the file", path);
    }
    fclose(fh);
#endif
    int st = open_bytes(m);
    if (st != QS_OK) {
        char msg[sizeof qs_error];
        snprintf(msg, sizeof msg, "%s", qs_error);
        release(m);
        return fail(st, "%s: %s", path, msg);
    }
    *out = m;
    qs_error[0] = 0;
    return QS_OK;
}

QS_API int qs_close(qs_model* model)
{
    release(model);
    return QS_OK;
}

QS_API int qs_num_features(const qs_model* model, int64_t* out)
{
    if (model == NULL || out == NULL)
        return fail(QS_E_ARGUMENT, "qs_num_features: NULL argument");
    *out = model->forest.n_features;
    return QS_OK;
}

QS_API int qs_num_outputs(const qs_model* model, int flags, int64_t* out)
{
    if (model == NULL || out == NULL)
        return fail(QS_E_ARGUMENT, "qs_num_outputs: NULL argument");
    *out = (!(flags & QS_RAW_SCORE) && model->transform == QS_T_XGB_SOFTMAX_ARGMAX)
               ? 1
               : model->forest.n_outputs;
    return QS_OK;
}

QS_API int qs_num_trees(const qs_model* model, int64_t* out)
{
    if (model == NULL || out == NULL)
        return fail(QS_E_ARGUMENT, "qs_num_trees: NULL argument");
    *out = model->forest.n_trees;
    return QS_OK;
}

/* -- scoring ------------------------------------------------------------------------------ */
typedef struct {
    const qs_model* m;
    const char* rows;
    size_t row_bytes;
    int is32;
    int raw;
    int64_t begin, end;
    double* out;      /* scores, out_width a row */
    int64_t out_width;
    int32_t* leaves;  /* or exit leaves, n_trees a row */
    int status;
} job;

/* One row's outputs from its raw scores (o64 for float64 forests, o32 for float32 ones), as
 * quickscorer.request's outputs: the transform and averaging, unless raw. */
static void finish_row(const qs_model* m, int raw, double* o64, float* o32, double* out)
{
    const qs_forest* f = &m->forest;
    int64_t K = f->n_outputs, k;
    int code = m->transform;
    if (f->family == QS_FAMILY_XGBOOST) {
        if (!raw && code == QS_T_XGB_SOFTMAX_ARGMAX) {
            /* numpy.argmax: the first largest, or the first NaN */
            int64_t best = 0;
            for (k = 0; k < K; k++) {
                if (isnan(o32[k])) {
                    best = k;
                    break;
                }
                if (o32[k] > o32[best])
                    best = k;
            }
            out[0] = (double)(float)best;
            return;
        }
        if (!raw && code != QS_T_IDENTITY)
            qs_transform_rows_f32(code, o32, 1, K);
        for (k = 0; k < K; k++) out[k] = (double)o32[k];
        return;
    }
    if (!raw && qs_transform_f32(code)) {
        /* ONNX Runtime's transforms of a float64 model: in float32, returned as float64 */
        for (k = 0; k < K; k++) o32[k] = (float)o64[k];
        qs_transform_rows_f32(code, o32, 1, K);
        for (k = 0; k < K; k++) out[k] = (double)o32[k];
        return;
    }
    if (!raw && (code != QS_T_IDENTITY || m->divide_by != 1.0))
        qs_transform_rows_f64(code, m->sigmoid, m->divide_by, o64, 1, K);
    for (k = 0; k < K; k++) out[k] = o64[k];
}

/* RankLib's score of a row's exit leaves (forest.h qs_ranklib_score). */
static double ranklib_score(const qs_model* m, const int32_t* lf)
{
    const qs_forest* f = &m->forest;
    return qs_ranklib_score(f->leaf_value, f->tree_leaf_offset, m->sum_weight, m->bag_offset,
                            m->n_bags, f->n_trees, lf, f->base_score[0]);
}

/* Tree t's exit leaves lf[0 .. n_trees) added to a row's scores in tree order, in the source
 * library's precision: forest.h's qs_emit, tree by tree, or for a model of one output and
 * plain leaves the same additions in one loop (no branch a tree). */
static void add_leaves(const qs_forest* f, const int32_t* lf, const double* row, double* o64,
                       float* o32)
{
    const int64_t* off = f->tree_leaf_offset;
    int64_t T = f->n_trees;
    if (f->n_outputs == 1 && !f->has_linear) {
        if (f->family == QS_FAMILY_XGBOOST && f->tree_weight == NULL) {
            float acc = o32[0];
            for (int64_t t = 0; t < T; t++) acc = acc + f->leaf_value_f32[off[t] + lf[t]];
            o32[0] = acc;
            return;
        }
        if (f->family != QS_FAMILY_XGBOOST) {
            double acc = o64[0];
            for (int64_t t = 0; t < T; t++) acc = acc + f->leaf_value[off[t] + lf[t]];
            o64[0] = acc;
            return;
        }
    }
    for (int64_t t = 0; t < T; t++)
        qs_emit(f, t, lf[t], row, NULL, o64, o32);
}

/* One row through the complete trees: its scores (slot values added group by group where
 * the layout holds them), or its exit leaves into leaves (not NULL) or lf then summed. kr:
 * room for the row's float32 keys. */
static void complete_one(const qs_model* m, const double* row, const double* xr, uint32_t* kr,
                         int32_t* lf, int32_t* leaves, double* o64, float* o32)
{
    const cwalk* w = &m->fast;
    int64_t T = m->forest.n_trees;
    if (w->cnodes32 != NULL)
        for (int64_t c = 0; c < w->n_cols; c++) kr[c] = walk_key32((float)xr[c]);
    if (leaves == NULL && w->cnodes32 != NULL && w->cvalue32 != NULL) {
        o32[0] = walk_groups_sum32(w->cnodes32, w->cnode_offset, w->cdepth, w->cvalue32,
                                   w->cslot_offset, T, kr, o32[0]);
        return;
    }
    if (leaves == NULL && w->cvalue32 != NULL) {
        o32[0] = walk_groups_sum_f(w->cnodes, w->cnode_offset, w->cdepth, w->cvalue32,
                                   w->cslot_offset, T, xr, o32[0]);
        return;
    }
    if (leaves == NULL && w->cvalue64 != NULL) {
        o64[0] = walk_groups_sum(w->cnodes, w->cnode_offset, w->cdepth, w->cvalue64,
                                 w->cslot_offset, T, xr, o64[0]);
        return;
    }
    if (w->cnodes32 != NULL)
        walk_groups32(w->cnodes32, w->cnode_offset, w->cdepth, w->slot_leaf, w->cslot_offset,
                      T, kr, lf);
    else
        walk_groups(w->cnodes, w->cnode_offset, w->cdepth, w->slot_leaf, w->cslot_offset, T,
                    xr, lf);
    if (leaves != NULL && leaves != lf)
        memcpy(leaves, lf, sizeof(int32_t) * (size_t)T);
    else if (leaves == NULL)
        add_leaves(&m->forest, lf, row, o64, o32);
}

/* Two rows' scores through the complete trees together: sixteen chains of loads a group of
 * eight trees, the slots read once for both (walk.h WALK_GROUPS2, WALK_GROUPS2_SUM). */
static void complete_two(const qs_model* m, const double* row_a, const double* row_b,
                         const double* xa, const double* xb, uint32_t* ka, uint32_t* kb,
                         int32_t* la, int32_t* lb, double* oa64, float* oa32, double* ob64,
                         float* ob32)
{
    const cwalk* w = &m->fast;
    int64_t T = m->forest.n_trees;
    if (w->cnodes32 != NULL)
        for (int64_t c = 0; c < w->n_cols; c++) {
            ka[c] = walk_key32((float)xa[c]);
            kb[c] = walk_key32((float)xb[c]);
        }
    if (w->cvalue32 != NULL) {
        float acc[2] = {oa32[0], ob32[0]};
        if (w->cnodes32 != NULL)
            walk_groups_pair_sum32(w->cnodes32, w->cnode_offset, w->cdepth, w->cvalue32,
                                   w->cslot_offset, T, ka, kb, acc);
        else
            walk_groups_pair_sum_f(w->cnodes, w->cnode_offset, w->cdepth, w->cvalue32,
                                   w->cslot_offset, T, xa, xb, acc);
        oa32[0] = acc[0];
        ob32[0] = acc[1];
        return;
    }
    if (w->cvalue64 != NULL) {
        double acc[2] = {oa64[0], ob64[0]};
        walk_groups_pair_sum(w->cnodes, w->cnode_offset, w->cdepth, w->cvalue64,
                             w->cslot_offset, T, xa, xb, acc);
        oa64[0] = acc[0];
        ob64[0] = acc[1];
        return;
    }
    if (w->cnodes32 != NULL)
        walk_groups_pair32(w->cnodes32, w->cnode_offset, w->cdepth, w->slot_leaf,
                           w->cslot_offset, T, ka, kb, la, lb);
    else
        walk_groups_pair(w->cnodes, w->cnode_offset, w->cdepth, w->slot_leaf,
                         w->cslot_offset, T, xa, xb, la, lb);
    add_leaves(&m->forest, la, row_a, oa64, oa32);
    add_leaves(&m->forest, lb, row_b, ob64, ob32);
}

/* A thread's rows: scratch for two (each a converted row, its scores in float64, the
 * expanded row, its float32 keys, its exit leaves, its scores in float32). */
typedef struct {
    double* row;
    double* o64;
    double* xr;
    uint32_t* kr;
    int32_t* lf;
    float* o32;
} row_scratch;

static void* run_job(void* arg)
{
    job* j = (job*)arg;
    const qs_model* m = j->m;
    const qs_forest* f = &m->forest;
    const cwalk* w = &m->fast;
    int64_t F = f->n_features, K = f->n_outputs, T = f->n_trees;
    size_t cols = w->nodes ? (size_t)w->n_cols : 0;
    size_t row_words = (size_t)(F + K) + cols + (cols + 1) / 2 + ((size_t)(T + 8) + (size_t)K + 1) / 2;
    double* buf = (double*)malloc(2 * sizeof(double) * row_words);
    if (buf == NULL) {
        j->status = QS_E_MEMORY;
        return NULL;
    }
    row_scratch rs[2];
    for (int r = 0; r < 2; r++) {
        double* b = buf + (size_t)r * row_words;
        rs[r].row = b;
        rs[r].o64 = b + F;
        rs[r].xr = rs[r].o64 + K;
        rs[r].kr = (uint32_t*)(rs[r].xr + cols);
        rs[r].lf = (int32_t*)(rs[r].xr + cols + (cols + 1) / 2);
        rs[r].o32 = (float*)(rs[r].lf + T + 8);
    }
    row_scratch* a = &rs[0];
    row_scratch* b = &rs[1];
    int64_t i = j->begin;
    int complete = w->cnodes != NULL || w->cnodes32 != NULL;
    if (complete && j->leaves == NULL && m->leaf_sum == SUM_FAMILY) {
        for (; i + 1 < j->end; i += 2) {
            qs_load_row_ptr(f, j->rows + (size_t)i * j->row_bytes, j->is32, a->row);
            qs_load_row_ptr(f, j->rows + (size_t)(i + 1) * j->row_bytes, j->is32, b->row);
            qs_scores_init(f, a->o64, a->o32);
            qs_scores_init(f, b->o64, b->o32);
            expand_row(m, a->row, a->xr);
            expand_row(m, b->row, b->xr);
            complete_two(m, a->row, b->row, a->xr, b->xr, a->kr, b->kr, a->lf, b->lf, a->o64,
                         a->o32, b->o64, b->o32);
            finish_row(m, j->raw, a->o64, a->o32, j->out + i * j->out_width);
            finish_row(m, j->raw, b->o64, b->o32, j->out + (i + 1) * j->out_width);
        }
    }
    for (; i < j->end; i++) {
        qs_load_row_ptr(f, j->rows + (size_t)i * j->row_bytes, j->is32, a->row);
        int32_t* leaves = j->leaves != NULL ? j->leaves + i * T : NULL;
        /* RankLib's sum reads the exit leaves (ranklib_score) */
        int ranklib = leaves == NULL && m->leaf_sum == SUM_RANKLIB;
        if (ranklib)
            leaves = a->lf;
        if (leaves == NULL)
            qs_scores_init(f, a->o64, a->o32);
        if (w->nodes != NULL) {
            expand_row(m, a->row, a->xr);
            if (complete) {
                complete_one(m, a->row, a->xr, a->kr, a->lf, leaves, a->o64, a->o32);
            } else {
                walk8(w->nodes, w->roots, T, a->xr, a->lf);
                if (leaves != NULL && leaves != a->lf)
                    memcpy(leaves, a->lf, sizeof(int32_t) * (size_t)T);
                else if (leaves == NULL)
                    add_leaves(f, a->lf, a->row, a->o64, a->o32);
            }
        } else {
            qs_traversal_exits(&m->walk, f, a->row, NULL, leaves, a->o64, a->o32);
        }
        if (ranklib) /* (its transform is the identity: the score is the output) */
            j->out[i * j->out_width] = ranklib_score(m, a->lf);
        else if (leaves == NULL)
            finish_row(m, j->raw, a->o64, a->o32, j->out + i * j->out_width);
    }
    free(buf);
    j->status = QS_OK;
    return NULL;
}

/* the most threads one call starts (a larger n_threads is read as this many): far more than
 * any machine has cores, short of what a stray value could exhaust */
#define QS_MAX_THREADS 1024
/* calls of fewer rows run on one thread, and a thread gets at least QS_THREAD_MIN_ROWS rows
 * (Python's autoselect.threads_for, Tuning.parallel_min_rows: no thread start-up for less) */
#define QS_PARALLEL_MIN_ROWS 64
#define QS_THREAD_MIN_ROWS 8

/* a call through RapidScorer: its plan (run.h), the next item to take, and a thread's part */
typedef struct {
    const qs_model* m;
    const rs_plan* plan;
    rs_rows rows;
    atomic_llong* next;
    int raw;
    double* out;      /* scores, out_width a row */
    int64_t out_width;
    int32_t* leaves;  /* or exit leaves, n_trees a row */
    int status;
} rs_job;

/* A thread's items of an RapidScorer call, taken one at a time until none is left (a thread
 * slowed by another process takes fewer), each item's raw scores finished row by row. */
static void* run_rs_job(void* arg)
{
    rs_job* j = (rs_job*)arg;
    const qs_model* m = j->m;
    const rscore* s = &m->rs;
    const qs_forest* f = &m->forest;
    const rs_plan* p = j->plan;
    int64_t K = f->n_outputs;
    int xgb = f->family == QS_FAMILY_XGBOOST;
    size_t need = (size_t)rs_scratch_need(&s->view, s->wide ? RS_ISA_AVX2_WIDE : s->isa, K);
    size_t item_rows = (size_t)(p->per_chunk * p->lanes);
    size_t scores = item_rows * (size_t)K;
    uint8_t* buf = (uint8_t*)malloc(need + 64 + scores * (sizeof(double) + sizeof(float)));
    if (buf == NULL) {
        j->status = QS_E_MEMORY;
        return NULL;
    }
    rs_bufs b = rs_carve(&s->view, buf, p->lanes, K);
    double* t64 = (double*)(rs_align64(buf) + need);
    float* t32 = (float*)(t64 + scores);
    for (;;) {
        int64_t k = (int64_t)atomic_fetch_add(j->next, 1);
        if (k >= p->n_items)
            break;
        int64_t first, last;
        rs_item_rows(p, k, &first, &last);
        if (j->leaves != NULL) {
            rs_run_item(p, f, &s->view, &j->rows, k, &b, NULL, NULL,
                        j->leaves + first * f->n_trees);
            continue;
        }
        rs_run_item(p, f, &s->view, &j->rows, k, &b, xgb ? NULL : t64, xgb ? t32 : NULL, NULL);
        for (int64_t i = first; i < last; i++)
            finish_row(m, j->raw, t64 + (i - first) * K, t32 + (i - first) * K,
                       j->out + i * j->out_width);
    }
    free(buf);
    j->status = QS_OK;
    return NULL;
}

/* Start n_threads - 1 threads on fn(arg + t * size) and run t = 0 here; the parts of threads
 * that did not start run here too. */
static void run_parts(void* (*fn)(void*), void* parts, size_t size, int n_threads)
{
    char* at = (char*)parts;
#ifdef QS_HAVE_MMAP
    pthread_t tids_local[8];
    pthread_t* tids = n_threads <= 8 ? tids_local
                                     : (pthread_t*)calloc((size_t)n_threads, sizeof(pthread_t));
    int started = 1;
    for (int t = 1; t < n_threads && tids != NULL; t++, started++)
        if (pthread_create(&tids[t], NULL, fn, at + (size_t)t * size) != 0)
            break;
    fn(at);
    for (int t = 1; t < started; t++)
        pthread_join(tids[t], NULL);
    for (int t = started; t < n_threads; t++)
        fn(at + (size_t)t * size);
    if (tids != tids_local)
        free(tids);
#else
    for (int t = 0; t < n_threads; t++)
        fn(at + (size_t)t * size);
#endif
}

/* A call of rs.from rows a thread or more through RapidScorer, on the path Python's
 * rapidscorer.py isa_for takes for it. */
static int run_rs(const qs_model* m, const void* rows, int is32, int64_t n_rows, int raw,
                  int n_threads, double* out, int64_t out_width, int32_t* leaves)
{
    const rscore* s = &m->rs;
    int isa = s->isa;
    if (isa == RS_ISA_AVX512 && !s->fixed && n_rows < (int64_t)RS_WIDE_MIN_ROWS * n_threads)
        isa = RS_ISA_AVX2;
    else if (s->wide && n_rows >= (int64_t)RS_AVX2_WIDE_MIN_ROWS * n_threads)
        isa = RS_ISA_AVX2_WIDE;
    rs_plan plan = rs_plan_call(&m->forest, &s->view, isa, n_rows, n_threads, leaves == NULL);
    if ((int64_t)n_threads > plan.n_items)
        n_threads = (int)plan.n_items;
    atomic_llong next;
    atomic_init(&next, 0);
    size_t width = is32 ? sizeof(float) : sizeof(double);
    rs_job local[8];
    rs_job* jobs = n_threads <= 8 ? local : (rs_job*)calloc((size_t)n_threads, sizeof(rs_job));
    if (jobs == NULL)
        return QS_E_MEMORY;
    for (int t = 0; t < n_threads; t++) {
        rs_job* j = &jobs[t];
        j->m = m;
        j->plan = &plan;
        j->rows.base = (const char*)rows;
        j->rows.row_stride = (int64_t)width * m->forest.n_features;
        j->rows.col_stride = (int64_t)width;
        j->rows.is32 = is32;
        j->rows.n_rows = n_rows;
        j->next = &next;
        j->raw = raw;
        j->out = out;
        j->out_width = out_width;
        j->leaves = leaves;
        j->status = QS_E_THREAD;
    }
    run_parts(run_rs_job, jobs, sizeof(rs_job), n_threads);
    int status = QS_OK;
    for (int t = 0; t < n_threads && status == QS_OK; t++)
        status = jobs[t].status;
    /* (a thread without memory leaves its items to the others; one that ran none is not a
     * failure where every item was taken) */
    if (status != QS_OK && atomic_load(&next) >= plan.n_items) {
        int any = 0;
        for (int t = 0; t < n_threads; t++) any |= jobs[t].status == QS_OK;
        if (any)
            status = QS_OK;
    }
    if (jobs != local)
        free(jobs);
    return status;
}

static int run(const qs_model* m, const void* rows, int is32, int64_t n_rows, int flags,
               int n_threads, double* out, int32_t* leaves, const char* what)
{
    if (m == NULL || (n_rows > 0 && (rows == NULL || (out == NULL && leaves == NULL))))
        return fail(QS_E_ARGUMENT, "%s: NULL argument", what);
    if (n_rows < 0)
        return fail(QS_E_ARGUMENT, "%s: %lld rows", what, (long long)n_rows);
    if (flags & ~QS_RAW_SCORE)
        return fail(QS_E_ARGUMENT, "%s: unknown flags %#x", what, flags);
    int raw = (flags & QS_RAW_SCORE) != 0;
    if (!raw && leaves == NULL && m->transform >= QS_T_NUMPY_EXP)
        return fail(QS_E_UNSUPPORTED, "%s: the model's output transform is scikit-learn's, "
                    "computed by NumPy, which only NumPy reproduces: ask for raw scores "
                    "(QS_RAW_SCORE) and apply it", what);
    size_t width = is32 ? sizeof(float) : sizeof(double);
    if ((uint64_t)n_rows > (uint64_t)PTRDIFF_MAX / width / (uint64_t)m->forest.n_features)
        return fail(QS_E_ARGUMENT, "%s: %lld rows are more than memory holds", what,
                    (long long)n_rows);
    if (n_rows == 0)
        return QS_OK;
    if (n_threads <= 0) {
#ifdef QS_HAVE_MMAP
        long c = sysconf(_SC_NPROCESSORS_ONLN);
        n_threads = c > 0 ? (int)c : 1;
#else
        n_threads = 1;
#endif
    }
    if (n_threads > QS_MAX_THREADS)
        n_threads = QS_MAX_THREADS;
    if (n_rows < QS_PARALLEL_MIN_ROWS)
        n_threads = 1;
    else if ((int64_t)n_threads > n_rows / QS_THREAD_MIN_ROWS)
        n_threads = (int)(n_rows / QS_THREAD_MIN_ROWS);
    int64_t width_out = 0;
    qs_num_outputs(m, flags, &width_out);
    if (m->rs.from > 0 && n_rows >= m->rs.from * n_threads) {
        int st = run_rs(m, rows, is32, n_rows, raw, n_threads, out, width_out, leaves);
        if (st == QS_E_MEMORY)
            return fail(st, "%s: no memory for a thread's rows", what);
        if (st != QS_OK)
            return fail(st, "%s: a thread failed", what);
        return QS_OK;
    }
    job jobs_local[8];
    job* jobs = n_threads <= 8 ? jobs_local : (job*)calloc((size_t)n_threads, sizeof(job));
    if (jobs == NULL)
        return fail(QS_E_MEMORY, "%s: no memory for %d threads", what, n_threads);
    int64_t per = n_rows / n_threads, extra = n_rows % n_threads, at = 0;
    for (int t = 0; t < n_threads; t++) {
        job* j = &jobs[t];
        j->m = m;
        j->rows = (const char*)rows;
        j->row_bytes = width * (size_t)m->forest.n_features;
        j->is32 = is32;
        j->raw = raw;
        j->begin = at;
        at += per + (t < extra ? 1 : 0);
        j->end = at;
        j->out = out;
        j->out_width = width_out;
        j->leaves = leaves;
        j->status = QS_E_THREAD;
    }
    int status = QS_OK;
    run_parts(run_job, jobs, sizeof(job), n_threads);
    for (int t = 0; t < n_threads && status == QS_OK; t++)
        status = jobs[t].status;
    if (jobs != jobs_local)
        free(jobs);
    if (status == QS_E_MEMORY)
        return fail(status, "%s: no memory for a thread's row", what);
    if (status != QS_OK)
        return fail(status, "%s: a thread failed", what);
    return QS_OK;
}

QS_API int qs_predict(const qs_model* model, const float* rows, int64_t n_rows, int flags,
                      int n_threads, double* out)
{
    return run(model, rows, 1, n_rows, flags, n_threads, out, NULL, "qs_predict");
}

QS_API int qs_predict_f64(const qs_model* model, const double* rows, int64_t n_rows, int flags,
                          int n_threads, double* out)
{
    return run(model, rows, 0, n_rows, flags, n_threads, out, NULL, "qs_predict_f64");
}

QS_API int qs_predict_leaf(const qs_model* model, const float* rows, int64_t n_rows,
                           int n_threads, int32_t* out)
{
    return run(model, rows, 1, n_rows, QS_RAW_SCORE, n_threads, NULL, out, "qs_predict_leaf");
}
