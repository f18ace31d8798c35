"""Which exact algorithm ``Model.predict`` runs when none is named.

Every algorithm gives the same scores; they differ in speed. Measured on a LightGBM
regression model of 1,000 full 64-leaf trees (136 features, rows uniform in [0, 1) with 30%
zeros), AMD EPYC (Zen 4) VM with AVX-512, one thread, microseconds per document, best of 3
(``python benchmarks/autoselect_sweep.py --repeat 3``)::

    rows per call          1      2      4      8     12     16     24     32     64    128
    quickscorer         24.9   24.0   22.1   21.0   21.5   20.7   21.0   20.4   20.1   20.0
    vqs                 57.1   33.6   21.1   12.9   15.4   10.7   13.0    9.4    9.2    9.2
    rapidscorer (64)    81.0   48.3   28.1   16.0   11.8    9.4    6.9    5.4    3.9    3.6
    rapidscorer (32)    78.0   46.5   27.4   15.4   11.7    9.1    6.9    5.3    5.3    5.0

(the 64-lane path runs a last group of at most 32 rows on the 32-lane path, hence the equal
figures below 32 rows). The same sweep on an AMD EPYC (Zen 3) VM with AVX2 only, nine
1,000-tree models (``--rows 1,2,3,4,5,6,7,8,9,10,11,12,16 --repeat 5``, walk included), at 8
and 9 rows::

    model                  vqs 8   rapidscorer 8   vqs 9   rapidscorer 9   walk 8
    full 8 leaves            4.3         4.7          5.5        4.4          9.2
    full 31 leaves           7.9         8.9         10.4        8.3         13.6
    full 64 leaves          13.2        15.6         17.4       14.6         18.9
    lambdarank 64 leaves     8.6         9.5         11.2        8.9         21.4
    XGBoost depth 6         12.6        13.5         16.6       12.2         28.4
    XGBoost depth 8         48.0        37.3         61.1       34.6         43.7
    full 255 leaves         65.8        55.3         79.3       51.5         47.8

(heavy-tailed 31 and 64 leaves as their uniform twins). So: a one-row kernel for 1 to 3 rows
per thread, ``vqs`` from 4, ``rapidscorer`` from 9 where it can score the model (at most
256 leaves per tree, categories below 254; ``vqs`` otherwise): at 9 rows ``vqs`` adds a
group of 8 lanes for one row, a 32-document group has room. On the two models of large trees
the walk beat both scans from 4 to 8 rows (255 leaves: 47.8-50.9 us against ``vqs``'s
65.8-102.8; XGBoost depth 8 43.4-45.6 against 48.0-79.3), so :func:`few_rows` runs it there
where the covers say so. Since session 24, where the one-row kernel is the QuickScorer scan,
``vqs`` takes 3-row calls too, in its group of 4 (VQS_SCAN_MIN_ROWS). The arithmetic
traversals of the paper are for study and are never chosen.

Where the walk lays the trees out complete (``walk.complete_groups``) one row walks them
eight trees at a time, the same number of steps for every row, and :func:`one_row` weighs
those steps against the expected false nodes (GROUP_WALK_MIN_RATIO, measured there).
Elsewhere the one-row kernel is the QuickScorer scan, which pays for each false node (about
3 cycles), or ``walk``, which pays for each node on the path (about 15 to 30 cycles, a load
chain that grows with the table's size), chosen per model by :func:`one_row` from the
training rows that reached each node (the covers LightGBM and XGBoost write; XGBoost's are
hessian sums, a count under squared error): the expected false nodes a row meets against
the expected length of its path. Measured with ``python benchmarks/one_row.py --rounds 11``
(AMD EPYC Zen 3 VM, AVX2; time of the scan / time of the walk, and the models' expected false
nodes / path length)::

    model (1,000 trees)          scan / walk   false / path
    full 8 leaves                    0.66          1.1
    full 31 leaves                   0.94          3.6
    full 31 leaves, heavy-tailed     0.81          3.1
    lambdarank 64 leaves             0.77          3.3
    XGBoost depth 6                  0.63-0.68     3.0-3.5
    full 64 leaves, heavy-tailed     1.00          5.4
    full 64 leaves                   1.16          6.1
    XGBoost depth 8                  1.61          9.1
    full 255 leaves                  1.63         14.2

so the walk from WALK_MIN_RATIO up; the scan where the model gives no covers. Measured
again in session 17, after the walk's rule-by-rule expansion (session 16) and with the
categorical nodes the walk decides by a table counted as steps (CODED_NODE_STEPS), 19 models
(``python benchmarks/one_row.py --shapes ... --rounds 5``, same VM), by ratio::

    model                         false / walk steps   scan / walk
    categorical, 90% (500 trees)          0.58             0.10
    full 8 leaves                         1.13             0.70
    XGBoost depth 4, heavy-tailed         1.15             0.56
    full 16 leaves                        2.10             0.89
    XGBoost depth 6, heavy-tailed         3.03             0.78
    full 31 leaves, heavy-tailed          3.11             0.93
    lambdarank 64 leaves                  3.27             0.79
    XGBoost depth 6                       3.47             0.90
    full 31 leaves                        3.61             1.12
    categorical, 3% (500 trees)           3.66             1.14
    full 64 leaves, 10% NaN               4.50             1.21
    full 64 leaves, heavy-tailed          5.40             1.18
    XGBoost depth 7, 10% NaN              5.74             1.21
    full 64 leaves                        6.09             1.38
    lambdarank 255 leaves                 7.62             1.48
    XGBoost depth 8                       9.13             1.92
    full 128 leaves                       9.89             1.72
    full 255 leaves, heavy-tailed        12.45             1.87
    full 255 leaves                      14.24             2.29

The scan is faster on every model up to 3.47, the walk on every model from 3.61, so
WALK_MIN_RATIO was 3.55 (it was 5, which left the walk's 12-21% on full 31 leaves, the
3%-categorical model and full 64 leaves with NaN). Session 27's faster cursor step (the
next root read off the chain of loads, 1.14x to 1.21x the walk alone on leaf-wise trees)
and its leaves harvested every 3 steps (1.25x to 1.55x the walk alone on leaf-wise trees,
against session 26's step) moved the crossing down: ``python benchmarks/one_row.py --rounds
9`` on 2b5a2a5 read scan / walk 0.79 at 1.13 (full 8 leaves), 0.69 at 1.24 (16 leaves,
heavy-tailed), 0.98 at 2.10 (16 leaves), 0.99 at 3.11 (31 leaves, heavy-tailed), 1.01 at
3.27 (lambdarank), 1.32 at 3.61 (full 31), and the matrix at batch 1 on the same code
(``--algorithms walk,quickscorer``) 1.13 at 3.11 and 1.12 at 3.27: the two kernels tie
from about 2 to 3.3, the walk ahead above. WALK_MIN_RATIO is 3.05 since (the walk on the
two models at 3.11 and 3.27, where it tied or led). For 4 to 8
rows the walk from FEW_ROWS_WALK_RATIO up, between the full 64-leaf model (6.1: ``vqs``
faster from 5 rows) and XGBoost depth 8 (9.1: the walk faster to 6 rows, within 17% at 7
and 8).

Where ``rapidscorer`` cannot score a model (trees of more than 256 leaves that its level
path cannot take: deeper than 10 levels, categorical or linear; categories from 254 up),
calls of more rows (``rs_min_rows``) run the few-rows kernel too: the walk's lead over
``vqs`` at 8 rows held at 100 and 4,000 rows (``vqs`` in groups of 16 there, AVX2). Measured
in session 20 (``walk`` against ``vqs`` forced, 100 / 4,000 rows a call, us/doc, best of 3,
AMD EPYC Zen 3, AVX2, 1 thread; ratio as above)::

    model (1,000 trees)           ratio      walk            vqs
    lambdarank 255 leaves          7.62   20.86 / 20.99   18.01 / 18.36
    XGBoost depth 8                9.13   40.72 / 42.17   54.47 / 55.68
    full 128 leaves                9.89   23.23 / 21.50   33.23 / 39.21
    full 255 leaves               14.24   50.48 / 50.86   85.52 / 81.39
    XGBoost depth 10 (481 leaves) 19.6    55.54 / 61.23  159.99 / 143.91

(the last one ``rapidscorer`` could not score then: before, its calls of 9 rows or more ran
``vqs``, 2.3x slower than the walk; since session 21 the level path of ``rapidscorer``
scores it alone, ``rs_layout.levels_only_arrays``: 27.0 / 10.0 us/doc at 16 / 4,000 rows,
against 51.3 / 55.8 for the walk row by row and 26.0 for its complete trees at 4,000 rows
in session 20).
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .rs_layout import coded_categorical
from .walk import GROUP_TREES, complete_groups, special_mask

#: below this many rows per thread the scalar scan wins (the 8-lane scan runs half empty)
VQS_MIN_ROWS = 4

#: ``vqs``'s group of 4 documents (one AVX2 register) already from this many rows per thread
#: where the one-row kernel is the QuickScorer scan (not the walk) and the few-rows kernel is
#: ``vqs``. Through the kernels' low-latency entries (session 24), 3-row calls, median us/doc
#: of 5 interleaved rounds, AMD EPYC Zen 3 (``python benchmarks/small_calls.py --batch 2,3,4
#: --kernels quickscorer,walk,vqs``), scan / vqs: lambdarank 64 leaves 18.48 / 13.81, full
#: 31 heavy-tailed 14.21 / 10.94, XGBoost depth 6 24.48 / 18.46, YDF's max_depth 6 / 7 /
#: 7 heavy-tailed models 11.42 / 10.42, 22.91 / 18.70, 23.94 / 19.84; where the walk is the
#: one-row kernel it stays (full 64: walk 20.45, vqs 22.21; full 31, where vqs was 1.09x
#: faster: 12.30 / 11.24). At 2 rows vqs took 0.96x to 1.16x the scan's time on those six
VQS_SCAN_MIN_ROWS = 3

#: from this many rows per thread RapidScorer's 32- or 64-document groups win over ``vqs``
#: (:func:`rs_min_rows`). Through the named entries, us/doc, median of 9 interleaved rounds,
#: AMD EPYC Zen 3, AVX2, 1,000 trees (session 26), rapidscorer / vqs at 7 and 8 rows: full
#: 64 leaves 1.006 and 0.951, lambdarank 64 leaves (40.6 a tree) 1.001 and 0.972, YDF
#: max_depth 7 1.000 and 0.958, heavy-tailed 1.091 and 1.016, max_depth 6 0.854 and 0.810;
#: at 9 rows ``vqs`` runs a second group of lanes (see the module docstring)
RS_MIN_ROWS = 8
#: ... where the few-rows kernel is the walk (trees large enough that it beats ``vqs``): the
#: walk holds to 8 rows (XGBoost depth 6: 10.43 against 11.17 us/doc; depth 8 20.80 / 24.07)
RS_AFTER_WALK_MIN_ROWS = 9
#: ... and from fewer rows where the trees are small: (mean leaves a tree at most, rows).
#: Same measurement, rapidscorer / vqs at 5 and 6 rows: full 8 leaves 0.787 and 0.774, 16
#: leaves (heavy-tailed) 0.850 and 0.821, XGBoost depth 4 (13.6 leaves a tree) 0.935 and
#: 0.80; full 31 leaves 0.911 and 0.959, heavy-tailed 1.155 and 0.947 (at 4 rows 16 leaves
#: 1.07, so not from 4)
RS_SMALL_TREES_MIN_ROWS = ((16.0, 5), (32.0, 6))

#: below this many rows a call runs on one thread whatever was asked (no thread start-up)
PARALLEL_MIN_ROWS = 64

#: the one-row walk from this many expected false nodes per node on a row's path
WALK_MIN_RATIO = 3.05

#: where the walk lays its trees out complete (``walk.complete_groups``: trees at most
#: COMPLETE_MAX_DEPTH deep, few slots per node) one row walks them eight trees at a time,
#: ``GROUP_TREES * depth`` steps a group whatever the row: the walk from this many expected
#: false nodes per step. Through the entries, 1 row, 1,000 trees, median us of 5 interleaved
#: rounds, AMD EPYC Zen 3 (``python benchmarks/small_calls.py --batch 1 --kernels
#: quickscorer,walk``; false nodes / steps, scan / walk): XGBoost depth 4 1.17, 12.58 /
#: 9.88; YDF max_depth 6 1.36, 13.53 / 11.30; YDF max_depth 7 2.16, 20.37 / 14.50; YDF 7
#: heavy-tailed 2.42, 27.49 / 17.78; XGBoost depth 6 3.47, 27.24 / 14.53; heavy-tailed 3.03,
#: 32.57 / 21.51; LightGBM depth 6 (63 leaves, float64 slots) 3.50, 28.49 / 21.31. No
#: model at hand has fewer false nodes than steps; 1.0 is where the two counts meet
GROUP_WALK_MIN_RATIO = 1.0
#: the special nodes a row's expansion decides before the walk, counted in steps of the
#: complete trees' walk (about 2 ns each: 14.5 us a row for 6,000 steps on YDF's max_depth
#: 7 model, every cost of the call included): 2.8 ns a categorical node decided by a table,
#: 10.9 ns another (CODED_NODE_STEPS' measurements)
GROUP_CODED_STEPS = 1.4
GROUP_SPECIAL_STEPS = 5.5

#: a node the walk decides before it starts, one by one, for every row (walk.walk_arrays's
#: special nodes) costs about this many steps of a walk. Measured on a LightGBM model of 500
#: trees, 28,586 of its 31,500 nodes categorical, AMD EPYC Zen 3: the walk took 81 us a row
#: deciding them by tables (2.8 ns a node, everything else of the call included), 312 by the
#: nodes' own rule (10.9 ns); a step costs up to 4.9 ns (1,000 x 31 leaves: 13.2 us a row for
#: 2,713 expected steps, every cost of the call included). So a categorical split whose
#: categories are below 254 counts one step, another special node (a NaN or +inf threshold;
#: larger categories) four
CODED_NODE_STEPS = 1.0
SPECIAL_NODE_STEPS = 4.0

#: the walk also for calls of VQS_MIN_ROWS to rs_min_rows - 1 rows (instead of ``vqs``) from
#: this many: trees so large that an 8-lane scan of their false nodes costs more than 8 walks
FEW_ROWS_WALK_RATIO = 8.0

#: ... and, where the trees are laid out complete (one row walks eight trees at a time, two
#: rows together through the entry), from this many expected false nodes per step of that
#: walk (GROUP_WALK_MIN_RATIO's count). Through the entries, us/doc, median of 3 interleaved
#: rounds, AMD EPYC Zen 3 (``python benchmarks/small_calls.py --batch 1,2,3,4,6,8,9
#: --kernels walk,vqs,rapidscorer``), walk / vqs at 4 and 6 rows: XGBoost depth 6 (3.47)
#: 15.83 / 18.47 and 11.17 / 15.93; LightGBM depth 6, 63 leaves (3.50) 13.74 / 16.68 and
#: 14.18 / 16.13; YDF max_depth 7 (2.16) 11.41 / 12.01 and 16.85 / 13.04; heavy-tailed (2.42)
#: 17.38 / 15.99 and 16.80 / 16.73; YDF max_depth 6 (1.36) 8.71 / 7.94 and 8.87 / 7.24
GROUP_FEW_ROWS_RATIO = 3.0


def candidates(supported: Sequence[str], one_row_kernel: str = "quickscorer",
               few_rows_kernel: str = "vqs") -> tuple[str, ...]:
    """The algorithms predict may choose for a model, among those that can score it
    (``one_row_kernel``, ``few_rows_kernel``: the model's :func:`one_row` and
    :func:`few_rows` choices)."""
    many = "rapidscorer" if "rapidscorer" in supported else few_rows_kernel
    names = dict.fromkeys((one_row_kernel, few_rows_kernel, many))
    return tuple(name for name in names if name in supported)


def special_nodes(ens) -> tuple[int, int]:
    """The nodes the walk decides one by one before it starts (walk.walk_arrays's special
    nodes): the categorical splits it decides by a table (``rs_layout.coded_categorical``)
    and the others (other categorical splits, NaN and +inf thresholds)."""
    special = np.flatnonzero(special_mask(ens))
    coded = int(np.count_nonzero(coded_categorical(ens, special)))
    return coded, special.shape[0] - coded


def expected_costs(ens) -> tuple[float, float] | None:
    """A row's expected cost for the walk, in steps (the internal nodes on its path, and
    CODED_NODE_STEPS or SPECIAL_NODE_STEPS for each special node) and its expected false
    nodes (nodes whose test sends it right, those the QuickScorer scan pays for), summed
    over the trees, as the training rows went (each node's cover over its tree's root's;
    the share of a node's rows that went right). None without covers."""
    if not ens.has_cover:
        return None
    a = ens.trees.arrays
    node_cover, leaf_cover = a["node_cover"], a["leaf_cover"]
    node_off, leaf_off = ens.trees.node_offset, ens.trees.leaf_offset
    tree_of = np.repeat(np.arange(ens.n_trees), np.diff(node_off))   # each node's tree
    first = node_off[:-1][tree_of]                                   # its tree's root
    root = node_cover[first]
    with np.errstate(divide="ignore", invalid="ignore"):
        path = np.where(root > 0, node_cover / root, 0.0)
        right = a["right"].astype(np.int64)
        right_cover = np.where(right >= 0, node_cover[first + np.maximum(right, 0)],
                               leaf_cover[leaf_off[:-1][tree_of] + np.maximum(~right, 0)])
        false = np.where(node_cover > 0, right_cover / node_cover, 0.5)
    coded, other = special_nodes(ens)
    return (float(path.sum()) + CODED_NODE_STEPS * coded + SPECIAL_NODE_STEPS * other,
            float(false.sum()))


#: one_row's and few_rows's default: compute the model's expected_costs
_COMPUTE = object()


def group_steps(ens) -> float | None:
    """A row's steps through the walk's complete trees, eight at a time (``GROUP_TREES``
    times each group's depth, and the special nodes decided before it), or None where the
    walk lays out no complete trees (``walk.complete_groups``)."""
    groups = complete_groups(ens)
    if groups is None:
        return None
    coded, other = special_nodes(ens)
    return (GROUP_TREES * int(groups.sum()) + GROUP_CODED_STEPS * coded
            + GROUP_SPECIAL_STEPS * other)


def few_rows(ens, supported: Sequence[str], costs=_COMPUTE, steps=_COMPUTE) -> str:
    """The kernel for calls of VQS_MIN_ROWS to rs_min_rows - 1 rows per thread: ``walk``
    where the model's covers give at least GROUP_FEW_ROWS_RATIO expected false nodes per
    step of the walk of its complete trees (where it has them), else at least
    FEW_ROWS_WALK_RATIO per node on a row's path; ``vqs`` otherwise (and without covers).
    ``costs`` / ``steps``: the model's :func:`expected_costs` / :func:`group_steps`, where
    the caller has them."""
    if costs is _COMPUTE:
        costs = expected_costs(ens)
    if costs is None or "walk" not in supported:
        return "vqs"
    path, false = costs
    if steps is _COMPUTE:
        steps = group_steps(ens)
    if steps is not None:
        return "walk" if false >= GROUP_FEW_ROWS_RATIO * steps else "vqs"
    return "walk" if path > 0 and false / path >= FEW_ROWS_WALK_RATIO else "vqs"


def one_row(ens, supported: Sequence[str], costs=_COMPUTE,
            steps=_COMPUTE) -> tuple[str, str]:
    """The kernel for calls of fewer than VQS_MIN_ROWS rows per thread, and why (``costs``
    as for :func:`few_rows`)."""
    if costs is _COMPUTE:
        costs = expected_costs(ens)
    if "walk" not in supported:
        steps = None
    elif steps is _COMPUTE:
        steps = group_steps(ens)
    if steps is not None:
        # without covers, each node false for half the rows
        false = costs[1] if costs is not None else 0.5 * int(ens.trees.node_offset[-1])
        why = (f"{false / ens.n_trees:.1f} expected false nodes against {steps / ens.n_trees:.1f}"
               f" steps a tree through complete trees"
               f"{'' if costs is not None else ' (no node covers: half the nodes)'}")
        if false >= GROUP_WALK_MIN_RATIO * steps:
            return "walk", why
        return "quickscorer", why
    if costs is None:
        return "quickscorer", "the model gives no node covers"
    path, false = costs
    ratio = false / path if path > 0 else 0.0
    why = (f"{false / ens.n_trees:.1f} expected false nodes against a walk of "
           f"{path / ens.n_trees:.1f} steps a tree")
    if ratio >= WALK_MIN_RATIO and "walk" in supported:
        return "walk", why
    return "quickscorer", why


def few_rows_from(one_row_kernel: str, few_rows_kernel: str) -> int:
    """Rows per thread from which the few-rows kernel runs: VQS_SCAN_MIN_ROWS from the
    QuickScorer scan to ``vqs``, VQS_MIN_ROWS otherwise."""
    if one_row_kernel == "quickscorer" and few_rows_kernel == "vqs":
        return VQS_SCAN_MIN_ROWS
    return VQS_MIN_ROWS


def rs_min_rows(ens, few_rows_kernel: str = "vqs") -> int:
    """Rows per thread from which ``rapidscorer`` runs (where it can score the model):
    RS_AFTER_WALK_MIN_ROWS after the walk, else by the trees' mean number of leaves
    (RS_SMALL_TREES_MIN_ROWS), else RS_MIN_ROWS."""
    if few_rows_kernel == "walk":
        return RS_AFTER_WALK_MIN_ROWS
    leaves = np.asarray(ens.trees.leaf_offset)
    mean = float(leaves[-1]) / max(1, leaves.shape[0] - 1)
    for most, rows in RS_SMALL_TREES_MIN_ROWS:
        if mean <= most:
            return rows
    return RS_MIN_ROWS


def choose(supported: Sequence[str], n_rows: int, n_threads: int = 1,
           one_row_kernel: str = "quickscorer", few_rows_kernel: str = "vqs",
           rs_from: int = RS_MIN_ROWS) -> str:
    """The algorithm to run for ``n_rows`` rows on ``n_threads`` threads, among those that
    can score the model (``supported``): ``one_row_kernel`` below VQS_MIN_ROWS rows per
    thread (:func:`one_row`), ``few_rows_kernel`` below ``rs_from`` (:func:`few_rows`,
    :func:`rs_min_rows`), then ``rapidscorer`` (``few_rows_kernel`` where it cannot score
    the model); ``vqs`` from VQS_SCAN_MIN_ROWS where the one-row kernel is the scan
    (:func:`few_rows_from`)."""
    per_thread = n_rows / max(1, n_threads)
    if per_thread < few_rows_from(one_row_kernel, few_rows_kernel):
        return one_row_kernel
    if per_thread < rs_from:
        return few_rows_kernel
    return "rapidscorer" if "rapidscorer" in supported else few_rows_kernel


def threads_for(n_rows: int, n_threads: int) -> int:
    """Threads worth starting for a call of ``n_rows`` rows."""
    if n_rows < PARALLEL_MIN_ROWS:
        return 1
    return max(1, min(n_threads, n_rows // 8))


def describe(supported: Sequence[str], one_row_choice: tuple[str, str] = ("quickscorer", ""),
             few_rows_kernel: str = "vqs", rs_from: int = RS_MIN_ROWS) -> str:
    fast = ("rapidscorer" if "rapidscorer" in supported
            else f"{few_rows_kernel} (rapidscorer cannot score this model)")
    name, why = one_row_choice
    first = few_rows_from(name, few_rows_kernel)
    return (f"{fast} for {rs_from} or more rows per thread, {few_rows_kernel} for "
            f"{first} or more, {name} below{f' ({why})' if why else ''}; one thread "
            f"below {PARALLEL_MIN_ROWS} rows")
