"""Which exact algorithm ``Model.predict`` runs when none is named.

Every algorithm gives the same scores; they differ in speed, and which is fastest depends on
the rows per thread of a call and on the model's trees:

* below :func:`few_rows_from` rows a thread, a one-row kernel chosen per model by
  :func:`one_row`: the QuickScorer scan, which pays for each false node a row meets, or the
  ``walk``, which pays for each step of a row's path (or, on complete trees, a fixed number of
  steps a group of eight trees). Both counts come from the node covers the model file holds
  (the training rows that reached each node), so the choice reads nothing but the model;
* up to :func:`rs_min_rows`, the few-rows kernel of :func:`few_rows`: ``vqs``, or the walk on
  models of large trees, where an 8-lane scan of their false nodes costs more than the walks
  (and, on models of many nodes a step, for calls up to :func:`walk_rs_min_rows` rows, where
  RapidScorer's scan of every node costs more than walking each row);
* from there on ``rapidscorer`` where it can score the model, the few-rows kernel otherwise;
* on models whose every tree is oblivious (``oblivious.py``), ``oblivious`` from
  OBLIVIOUS_MIN_ROWS rows a thread, whatever the rest would choose;
* calls under PARALLEL_MIN_ROWS rows on one thread (:func:`threads_for`).

The arithmetic traversals of the paper are for study and are never chosen. Each constant
below says why it has its value and which command re-measures it. A change to any of them is
followed by a matrix run (``docs/benchmarks.md``).
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from . import cpu
from .nodes import coded_categorical
from .walk import GROUP_TREES, complete_groups, float32_slots, special_mask

#: below this many rows per thread a one-row kernel wins (an 8-lane scan runs half empty);
#: ``python -m benchmarks.tuning.autoselect_sweep`` re-measures it
VQS_MIN_ROWS = 4

#: ... and from this many where the one-row kernel is the walk of complete trees (eight trees
#: a step, two rows together through the entry) and the few-rows kernel ``vqs``: at 4 and 5
#: rows that walk took 2% to 16% less time than ``vqs`` on YDF's models of depth 6 and 7
#: (uniform and heavy-tailed rows) on an AVX-512 EPYC (Zen 4), and tied with it on the AVX2
#: EPYC (Zen 3); at 6 rows the two were within 5%, at 7 ``vqs`` took 11% and 13% less
#: (``python -m benchmarks.tuning.small_calls --shapes ydf-uniform-d6,ydf-uniform-d7,
#: ydf-heavy-d7 --batch 3,4,5,6,7,8,9 --kernels walk,vqs,rapidscorer --rounds 7``)
GROUP_VQS_MIN_ROWS = 6

#: ``vqs``'s group of 4 documents (one AVX2 register) already from this many rows per thread
#: where the one-row kernel is the QuickScorer scan: at 3 rows it beat the scan on every model
#: that keeps the scan for one row;
#: ``python -m benchmarks.tuning.small_calls --batch 2,3,4 --kernels quickscorer,walk,vqs``
VQS_SCAN_MIN_ROWS = 3

#: from this many rows per thread RapidScorer's 32- or 64-document groups win over ``vqs``
#: (:func:`rs_min_rows`), which runs a second group of lanes from 9 rows;
#: ``python -m benchmarks.tuning.small_calls --batch 6,7,8,9 --kernels vqs,rapidscorer``
RS_MIN_ROWS = 8
#: ... where the few-rows kernel is the walk (trees large enough that it beats ``vqs``): the
#: walk holds its lead to 8 rows; same command with ``--kernels walk,rapidscorer``
RS_AFTER_WALK_MIN_ROWS = 9
#: ... and later on models of many nodes a step of a row's walk: RapidScorer's call scans
#: every node whatever its rows, a walk pays only its row's steps, so the walk keeps calls
#: of fewer rows than nodes / (WALK_RS_NODES_PER_STEP x steps a row),
#: at most RS_AFTER_WALK_MAX_ROWS (one AVX2 group of RapidScorer, whose cost a document
#: falls past it while the walk's does not). Calls of one size alone met between 13 and 16
#: rows on 1,000 trees of 255 leaves (40 nodes a step; ``python
#: benchmarks/tuning/small_calls.py --batch 8,12,16,24,32 --kernels walk,rapidscorer``), but a
#: service's calls come in many sizes, and a call that runs the other kernel than the call
#: before pays to read its layout back into the caches: on per-query calls 5 (RapidScorer
#: from 9 rows) took 9% and 15% less time than 2.9 (from 14 and 13) on that model and on
#: XGBoost depth 9, and no more on the others (``python
#: benchmarks/tuning/per_query_switch.py --values 2.9,4,5,7``, Zen 4). A call of 9 to 13 rows
#: alone on the 255-leaf model pays for it (34.5 against 21.4 us/doc at 9 rows).
WALK_RS_NODES_PER_STEP = 5.0
RS_AFTER_WALK_MAX_ROWS = 32
#: ... and from fewer rows where the trees are small, (mean leaves a tree at most, rows):
#: fewer leaves make RapidScorer's byte rows shorter; same command at 4 to 6 rows
RS_SMALL_TREES_MIN_ROWS = ((16.0, 5), (32.0, 6))
#: ... and on AVX2, where a register holds four of ``vqs``'s documents so that calls of 5 to
#: 8 rows take two, from RS_AVX2_TREES_MIN_ROWS[1] rows on trees of at most
#: RS_AVX2_TREES_MIN_ROWS[0] leaves on average: at 6 and 7 rows RapidScorer took 16% to 33%
#: less time than ``vqs`` on YDF's models of depth 7 (39 leaves a tree; the walk of their
#: float32 slots now takes those calls, GROUP_FEW_ROWS_KEYS), and tied with it on the
#: LightGBM lambdarank model (41 leaves on average; AMD Zen 3, ``python -m
#: benchmarks.tuning.small_calls --shapes ydf-uniform-d7,ydf-heavy-d7,ltr-1000x64 --batch
#: 5,6,7,8 --kernels vqs,rapidscorer --rounds 15``). AVX-512's registers hold eight, one for
#: such a call.
RS_AVX2_TREES_MIN_ROWS = (48.0, 6)

#: ``oblivious`` (every tree oblivious) from this many rows per thread: with its row-by-row
#: path for calls of 1 to 3 rows it led the one-row kernel (the walk) at every call size on
#: CatBoost models of 1,000 trees of depth 6, 300 of depth 8 and a 3-class model of 500 of
#: depth 6 (1.5x to 3.0x at 1 and 2 rows) and tied with it on 200 trees of depth 4; from 3
#: rows it led on depths 6 and 8 and was within 16% of the best kernel on the others;
#: ``python -m benchmarks.experiments.oblivious_rows`` and
#: ``python -m benchmarks.tuning.small_calls --shapes
#: cb-d6-uniform-1000,cb-d8-heavy-300,cb-d4-uniform-200 --batch 1,2,3,4,8,16 --kernels
#: oblivious,walk,vqs,rapidscorer --rounds 9``
OBLIVIOUS_MIN_ROWS = 1

#: below this many rows a call runs on one thread whatever was asked (no thread start-up);
#: ``python -m benchmarks.scaling`` shows what threads cost
PARALLEL_MIN_ROWS = 64

#: the one-row walk from this many expected false nodes per node on a row's path: below it
#: the two kernels tie or the scan leads, above it the walk leads;
#: ``python -m benchmarks.tuning.one_row --rounds 9``
WALK_MIN_RATIO = 3.05

#: where the walk lays its trees out complete (``walk.complete_groups``: trees at most
#: COMPLETE_MAX_DEPTH deep, few slots per node) one row walks them eight trees at a time,
#: ``GROUP_TREES * depth`` steps a group whatever the row: the walk from this many expected
#: false nodes per step, where the two counts meet (every model measured led with the walk);
#: ``python -m benchmarks.tuning.small_calls --batch 1 --kernels quickscorer,walk``
GROUP_WALK_MIN_RATIO = 1.0
#: the special nodes a row's expansion decides before the walk of complete trees, counted in
#: its steps (a step costs about 2 ns; a categorical node decided by a table about 2.8 ns,
#: another about 10.9 ns: CODED_NODE_STEPS's measurement)
GROUP_CODED_STEPS = 1.4
GROUP_SPECIAL_STEPS = 5.5

#: a node the walk decides before it starts, one by one, for every row (walk.walk_arrays's
#: special nodes) costs about this many steps of a walk: one for a categorical split whose
#: categories are below 254 (decided by a table), four for another special node (a NaN or
#: +inf threshold; larger categories); ``python -m benchmarks.tuning.one_row --shapes
#: cat8x40-500x64,full-uniform-1000x31`` on a model whose nodes are 90% categorical
CODED_NODE_STEPS = 1.0
SPECIAL_NODE_STEPS = 4.0

#: the walk also for calls of VQS_MIN_ROWS to rs_min_rows - 1 rows (instead of ``vqs``) from
#: this many expected false nodes per node on a row's path: trees so large that an 8-lane
#: scan of their false nodes costs more than 8 walks. At 4 to 6 rows the walk led ``vqs`` by
#: 15% to 25% on full 64-leaf trees (6.09) and tied it on heavy-tailed ones (5.40), where
#: ``vqs`` led on the lambdarank model (3.27) and tied on full 31-leaf trees (3.61);
#: ``python -m benchmarks.tuning.small_calls --shapes full-uniform-1000x64,full-heavy-1000x64
#: --batch 4,5,6,8 --kernels walk,vqs,rapidscorer --rounds 7``
FEW_ROWS_WALK_RATIO = 5.5

#: ... and, where the trees are laid out complete (one row walks eight trees at a time, two
#: rows together through the entry), from this many expected false nodes per step of that
#: walk (GROUP_WALK_MIN_RATIO's count), between the models where ``vqs`` led and those where
#: the walk did;
#: ``python -m benchmarks.tuning.small_calls --batch 1,2,3,4,6,8,9 --kernels walk,vqs,rapidscorer``
GROUP_FEW_ROWS_RATIO = 3.0
#: ... but at any count where those trees are float32 slots (``walk.float32_slots``: XGBoost's
#: and YDF's models), whose steps compare order keys in four instructions: at 4 to 8 rows
#: that walk took less time than ``vqs`` and than RapidScorer, or tied with RapidScorer at 8,
#: on XGBoost models of depth 4, 6 and 8 and YDF's of depth 6 and 7 (1.17 to 9.1 false nodes
#: a step) on Zen 3; RapidScorer led from 9 rows (``python -m benchmarks.tuning.small_calls
#: --shapes xgb-depth4-uniform-1000,ydf-uniform-d6,ydf-uniform-d7,ydf-heavy-d7
#: --batch 4,5,6,7,8,9 --kernels walk,vqs,rapidscorer``)
GROUP_FEW_ROWS_KEYS = True


def candidates(supported: Sequence[str], one_row_kernel: str = "quickscorer",
               few_rows_kernel: str = "vqs") -> tuple[str, ...]:
    """The algorithms predict may choose for a model, among those that can score it
    (``one_row_kernel``, ``few_rows_kernel``: the model's :func:`one_row` and
    :func:`few_rows` choices)."""
    if "oblivious" in supported:        # from OBLIVIOUS_MIN_ROWS, before any few-rows kernel
        return tuple(dict.fromkeys((one_row_kernel, "oblivious")))
    many = "rapidscorer" if "rapidscorer" in supported else few_rows_kernel
    names = dict.fromkeys((one_row_kernel, few_rows_kernel, many))
    return tuple(name for name in names if name in supported)


def special_nodes(ens) -> tuple[int, int]:
    """The nodes the walk decides one by one before it starts (walk.walk_arrays's special
    nodes): the categorical splits it decides by a table (``algorithms.nodes.coded_categorical``)
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
    where its complete trees are float32 slots (GROUP_FEW_ROWS_KEYS), or where the model's
    covers give at least GROUP_FEW_ROWS_RATIO expected false nodes per step of the walk of
    its complete trees (where it has them), else at least
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
        if GROUP_FEW_ROWS_KEYS and float32_slots(ens):
            return "walk"
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


def few_rows_from(one_row_kernel: str, few_rows_kernel: str, complete: bool = False) -> int:
    """Rows per thread from which the few-rows kernel runs: VQS_SCAN_MIN_ROWS from the
    QuickScorer scan to ``vqs``, GROUP_VQS_MIN_ROWS from the walk of complete trees
    (``complete``: the walk lays them out, :func:`group_steps`) to ``vqs``, VQS_MIN_ROWS
    otherwise."""
    if one_row_kernel == "quickscorer" and few_rows_kernel == "vqs":
        return VQS_SCAN_MIN_ROWS
    if one_row_kernel == "walk" and few_rows_kernel == "vqs" and complete:
        return GROUP_VQS_MIN_ROWS
    return VQS_MIN_ROWS


def rs_min_rows(ens, few_rows_kernel: str = "vqs", costs=_COMPUTE, steps=_COMPUTE,
                isa: str | None = None) -> int:
    """Rows per thread from which ``rapidscorer`` runs (where it can score the model):
    after the walk, from the model's nodes over WALK_RS_NODES_PER_STEP times a row's steps
    (:func:`walk_rs_min_rows`); else by the trees' mean number of leaves
    (RS_SMALL_TREES_MIN_ROWS, and on the ``avx2`` path RS_AVX2_TREES_MIN_ROWS), else
    RS_MIN_ROWS. ``costs`` / ``steps`` as for :func:`few_rows`; ``isa``: the instruction-set
    path the kernels run (default: this process's, ``cpu.isa_code``)."""
    if few_rows_kernel == "walk":
        return walk_rs_min_rows(ens, costs, steps)
    leaves = np.asarray(ens.trees.leaf_offset)
    mean = float(leaves[-1]) / max(1, leaves.shape[0] - 1)
    for most, rows in RS_SMALL_TREES_MIN_ROWS:
        if mean <= most:
            return rows
    if isa is None:
        isa = cpu.isa_name(cpu.isa_code(None))
    if isa == "avx2" and mean <= RS_AVX2_TREES_MIN_ROWS[0]:
        return RS_AVX2_TREES_MIN_ROWS[1]
    return RS_MIN_ROWS


def walk_rs_min_rows(ens, costs=_COMPUTE, steps=_COMPUTE) -> int:
    """Rows per thread from which ``rapidscorer`` takes over from the few-rows walk: the
    model's internal nodes over WALK_RS_NODES_PER_STEP times a row's steps through the walk
    (:func:`group_steps` where it lays out complete trees, else the expected path of
    :func:`expected_costs`), rounded up, between RS_AFTER_WALK_MIN_ROWS and
    RS_AFTER_WALK_MAX_ROWS (the least without covers)."""
    if steps is _COMPUTE:
        steps = group_steps(ens)
    if steps is None:
        if costs is _COMPUTE:
            costs = expected_costs(ens)
        steps = costs[0] if costs is not None else None
    nodes = int(ens.trees.node_offset[-1])
    if not steps or steps <= 0:
        return RS_AFTER_WALK_MIN_ROWS
    rows = int(np.ceil(nodes / (WALK_RS_NODES_PER_STEP * steps)))
    return min(RS_AFTER_WALK_MAX_ROWS, max(RS_AFTER_WALK_MIN_ROWS, rows))


def choose(supported: Sequence[str], n_rows: int, n_threads: int = 1,
           one_row_kernel: str = "quickscorer", few_rows_kernel: str = "vqs",
           rs_from: int = RS_MIN_ROWS, complete: bool = False) -> str:
    """The algorithm to run for ``n_rows`` rows on ``n_threads`` threads, among those that
    can score the model (``supported``): ``one_row_kernel`` below VQS_MIN_ROWS rows per
    thread (:func:`one_row`), ``few_rows_kernel`` below ``rs_from`` (:func:`few_rows`,
    :func:`rs_min_rows`), then ``rapidscorer`` (``few_rows_kernel`` where it cannot score
    the model); ``vqs`` from VQS_SCAN_MIN_ROWS where the one-row kernel is the scan, from
    GROUP_VQS_MIN_ROWS where it is the walk of complete trees (``complete``,
    :func:`few_rows_from`), ``rapidscorer`` from ``rs_from`` even where that comes first;
    ``oblivious`` from OBLIVIOUS_MIN_ROWS where it can score the model."""
    per_thread = n_rows / max(1, n_threads)
    if per_thread >= OBLIVIOUS_MIN_ROWS and "oblivious" in supported:
        return "oblivious"
    if per_thread < min(few_rows_from(one_row_kernel, few_rows_kernel, complete), rs_from):
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
             few_rows_kernel: str = "vqs", rs_from: int = RS_MIN_ROWS,
             complete: bool = False) -> str:
    name, why = one_row_choice
    if "oblivious" in supported and OBLIVIOUS_MIN_ROWS <= 1:
        return (f"oblivious at every call size (every tree is oblivious); one thread below "
                f"{PARALLEL_MIN_ROWS} rows")
    if "oblivious" in supported:
        return (f"oblivious for {OBLIVIOUS_MIN_ROWS} or more rows per thread (every tree is "
                f"oblivious), {name} below{f' ({why})' if why else ''}; one thread below "
                f"{PARALLEL_MIN_ROWS} rows")
    fast = ("rapidscorer" if "rapidscorer" in supported
            else f"{few_rows_kernel} (rapidscorer cannot score this model)")
    first = few_rows_from(name, few_rows_kernel, complete)
    if first >= rs_from:                  # the few-rows kernel never runs
        return (f"{fast} for {rs_from} or more rows per thread, {name} below"
                f"{f' ({why})' if why else ''}; one thread below {PARALLEL_MIN_ROWS} rows")
    return (f"{fast} for {rs_from} or more rows per thread, {few_rows_kernel} for "
            f"{first} or more, {name} below{f' ({why})' if why else ''}; one thread "
            f"below {PARALLEL_MIN_ROWS} rows")
