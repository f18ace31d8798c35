"""The tuning table: every constant of the automatic choice and every run-time switch of the
kernels, in one frozen value.

A :class:`Tuning` is resolved once per process, the defaults below and then the
``QUICKSCORER_*`` variables of the environment (:func:`current`), and every
:class:`~quickscorer.Model` reads the table it was given (``Model(ensemble, tuning=...)``,
``quickscorer.load(..., tuning=...)``), so a test or a benchmark passes a table rather than
changing the environment or a module::

    t = quickscorer.current_tuning().replace(walk_complete=False, isa="avx2")
    model = quickscorer.load("model.txt", tuning=t)

Every field says why it has its value and which command re-measures it; the figures of those
measurements live on the report page of the machine they were taken on
(``benchmarks/reports/``), under the field's name. A change to a field of the automatic choice
is followed by a matrix run (``docs/benchmarks.md``).
"""
from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from typing import Any

_INT, _BOOL, _TEXT = "int", "bool", "text"


def _f(default, why: str, command: str = "", env: str = "", kind: str = _INT):
    """A field of the table: its default, one sentence of why, the command that re-measures
    it and the environment variable that sets it (run-time switches only)."""
    return dataclasses.field(default=default, metadata={"why": why, "command": command,
                                                        "env": env, "kind": kind})


_SMALL = "python -m benchmarks.tuning.small_calls"


@dataclasses.dataclass(frozen=True)
class Tuning:
    """The constants of the automatic choice and the kernels' run-time switches (frozen;
    :meth:`replace` makes a changed copy). ``None`` in a switch means "as the model and the
    CPU are best served"."""

    # -- the automatic choice (algorithms/autoselect.py) ----------------------------------
    vqs_min_rows: int = _f(
        4, "below this many rows a thread a one-row kernel wins: an 8-lane scan runs half empty",
        "python -m benchmarks.tuning.autoselect_sweep")
    group_vqs_min_rows: int = _f(
        6, "vqs from this many rows a thread where the one-row kernel is the walk of complete "
        "trees, which takes two rows together through its entry", f"{_SMALL} --shapes "
        "ydf-uniform-d6,ydf-uniform-d7,ydf-heavy-d7 --batch 3,4,5,6,7,8,9 --kernels "
        "walk,vqs,rapidscorer --rounds 7")
    vqs_scan_min_rows: int = _f(
        3, "vqs's group of 4 documents already from this many rows where the one-row kernel is "
        "the QuickScorer scan", f"{_SMALL} --batch 2,3,4 --kernels quickscorer,walk,vqs")
    rs_min_rows: int = _f(
        8, "RapidScorer's 32- or 64-document groups win over vqs from this many rows a thread",
        f"{_SMALL} --batch 6,7,8,9 --kernels vqs,rapidscorer")
    rs_after_walk_min_rows: int = _f(
        9, "the same where the few-rows kernel is the walk, which holds its lead one row longer",
        f"{_SMALL} --batch 6,7,8,9 --kernels walk,rapidscorer")
    walk_rs_nodes_per_step: float = _f(
        5.0, "the walk keeps calls of fewer rows than nodes / (this x a row's steps): "
        "RapidScorer scans every node whatever its rows, a walk pays only its rows' steps, and "
        "a call that switches kernel pays to bring the other layout back into the caches",
        "python -m benchmarks.tuning.per_query_switch --values 2.9,4,5,7")
    rs_after_walk_max_rows: int = _f(
        32, "the latest RapidScorer takes over from the walk: one AVX2 group, past which its "
        "cost a document falls and the walk's does not",
        f"{_SMALL} --batch 8,12,16,24,32 --kernels walk,rapidscorer")
    rs_small_trees_min_rows: tuple = _f(
        ((16.0, 5), (32.0, 6)), "(mean leaves a tree at most, rows): RapidScorer from fewer "
        "rows on small trees, whose byte rows are shorter",
        f"{_SMALL} --batch 4,5,6 --kernels vqs,rapidscorer")
    rs_avx2_trees_min_rows: tuple = _f(
        (48.0, 6), "(mean leaves at most, rows) on AVX2, where a register holds four of vqs's "
        "documents so that calls of 5 to 8 rows take two", f"{_SMALL} --shapes "
        "ydf-uniform-d7,ydf-heavy-d7,ltr-1000x64 --batch 5,6,7,8 --kernels vqs,rapidscorer "
        "--rounds 15")
    oblivious_min_rows: int = _f(
        1, "oblivious from this many rows a thread on models of oblivious trees: with its "
        "row-by-row path it leads or ties the one-row kernel at every call size",
        f"python -m benchmarks.experiments.oblivious_rows; {_SMALL} --shapes "
        "cb-d6-uniform-1000,cb-d8-heavy-300,cb-d4-uniform-200 --batch 1,2,3,4,8,16 --kernels "
        "oblivious,walk,vqs,rapidscorer --rounds 9")
    parallel_min_rows: int = _f(
        64, "below this many rows a call runs on one thread whatever was asked (no thread "
        "start-up)", "python -m benchmarks.scaling")
    walk_min_ratio: float = _f(
        3.05, "the one-row walk from this many expected false nodes per node on a row's path "
        "(where the two kernels' costs meet)", "python -m benchmarks.tuning.one_row --rounds 9")
    group_walk_min_ratio: float = _f(
        1.0, "the one-row walk of complete trees from this many expected false nodes per step "
        "(GROUP_TREES x depth steps a group whatever the row): where the two counts meet",
        f"{_SMALL} --batch 1 --kernels quickscorer,walk")
    group_coded_steps: float = _f(
        1.4, "steps of the complete-tree walk a categorical node decided by a table costs "
        "before the walk", "python -m benchmarks.tuning.one_row --shapes "
        "cat8x40-500x64,full-uniform-1000x31")
    group_special_steps: float = _f(
        5.5, "steps of the complete-tree walk another special node (NaN or +inf threshold, "
        "large categories) costs before the walk", "python -m benchmarks.tuning.one_row "
        "--shapes cat8x40-500x64,full-uniform-1000x31")
    coded_node_steps: float = _f(
        1.0, "steps of a walk a categorical split decided by a table costs, decided one by one "
        "before the walk", "python -m benchmarks.tuning.one_row --shapes "
        "cat8x40-500x64,full-uniform-1000x31")
    special_node_steps: float = _f(
        4.0, "steps of a walk another special node costs, decided one by one before the walk",
        "python -m benchmarks.tuning.one_row --shapes cat8x40-500x64,full-uniform-1000x31")
    few_rows_walk_ratio: float = _f(
        5.5, "the walk instead of vqs for few-row calls from this many expected false nodes "
        "per node on a row's path: trees so large that an 8-lane scan of their false nodes "
        "costs more than 8 walks", f"{_SMALL} --shapes full-uniform-1000x64,"
        "full-heavy-1000x64 --batch 4,5,6,8 --kernels walk,vqs,rapidscorer --rounds 7")
    group_few_rows_ratio: float = _f(
        3.0, "the same on complete trees, per step of their walk (between the models where vqs "
        "led and those where the walk did)",
        f"{_SMALL} --batch 1,2,3,4,6,8,9 --kernels walk,vqs,rapidscorer")
    group_few_rows_keys: bool = _f(
        True, "the walk for few-row calls at any count where the complete trees are float32 "
        "slots, whose steps compare order keys in four instructions", f"{_SMALL} --shapes "
        "xgb-depth4-uniform-1000,ydf-uniform-d6,ydf-uniform-d7,ydf-heavy-d7 --batch "
        "4,5,6,7,8,9 --kernels walk,vqs,rapidscorer", kind=_BOOL)

    # -- run-time switches (the environment's QUICKSCORER_* variables) --------------------
    isa: str | None = _f(
        None, "the instruction-set path every kernel runs (scalar, avx2, avx512, neon); None: "
        "the widest this CPU has", "python -m benchmarks.matrix (and with "
        "QUICKSCORER_ISA=avx2 on an AVX-512 CPU)", "QUICKSCORER_ISA", _TEXT)
    thread_pool: bool = _f(
        False, "threads from a pool of Python threads instead of OpenMP (a build without OpenMP "
        "always takes the pool)", "python -m benchmarks.scaling", "QUICKSCORER_THREAD_POOL",
        _BOOL)
    block_bytes: int | None = _f(
        None, "QuickScorer and vqs layout bytes per tree block; None: half the L2 cache, so a "
        "block stays in L2 while a document block is scanned",
        "python -m benchmarks.tuning.vqs_blocks", "QUICKSCORER_BLOCK_BYTES")
    lanes: int | None = _f(
        None, "vqs's documents a scan (4, 8, 16, 32); None: the widest group the rows a thread "
        "fill", "python -m benchmarks.tuning.vqs_variants", "QUICKSCORER_LANES")
    doc_groups: int = _f(
        8, "vqs's groups of documents scanned against one tree block before the next",
        "python -m benchmarks.tuning.vqs_blocks", "QUICKSCORER_DOC_GROUPS")
    merge: bool = _f(
        False, "vqs compares a feature's distinct thresholds once for all their nodes (slower)",
        "python benchmarks/tuning/vqs_variants.py", "QUICKSCORER_MERGE", _BOOL)
    block_trees: int | None = _f(
        None, "vqs's most trees a tree block; None: as many as fit block_bytes",
        "python -m benchmarks.tuning.vqs_blocks", "QUICKSCORER_BLOCK_TREES")
    walk_complete: bool | None = _f(
        None, "the walk lays its trees out complete: True where they are shallow enough, False "
        "never, None where they also hold few slots a node", "python -m benchmarks.matrix "
        "--shapes xgb-depth9-uniform-1000 --batch 9,12,16 --algorithms walk",
        "QUICKSCORER_WALK_COMPLETE", _BOOL)
    walk_block_bytes: int | None = _f(
        None, "walk nodes per tree block of many-row calls; None: twice the L2 cache (half of "
        "it for complete trees)", "python -m benchmarks.matrix --shapes "
        "xgb-depth9-uniform-1000,xgb-depth10-uniform-1000 --batch 100,4000 --algorithms walk",
        "QUICKSCORER_WALK_BLOCK_BYTES")
    walk_chunk_rows: int | None = _f(
        None, "rows a thread walks through each tree block together; None: 64 (48 on complete "
        "trees), held to twice the L2 cache", "python -m benchmarks.matrix --shapes "
        "xgb-depth9-uniform-1000 --batch 100,4000 --algorithms walk",
        "QUICKSCORER_WALK_CHUNK_ROWS")
    rs_block_bytes: int | None = _f(
        None, "RapidScorer bitvector bytes per tree block and group; None: a quarter of the L2 "
        "cache, the best worst case over six 1,000-tree models",
        "python -m benchmarks.tuning.rs_blocks", "QUICKSCORER_RS_BLOCK_BYTES")
    rs_lane_nodes: int = _f(
        64, "RapidScorer's level path walks a tree lane by lane from its first level of more "
        "nodes than this (a level that wide costs about the same either way)",
        "python -m benchmarks.tuning.rs_level_sweep --values 48,64,96,128",
        "QUICKSCORER_RS_LANE_NODES")
    rs_levels: bool | None = _f(
        None, "RapidScorer's level path (trees of depth <= 10): True in every group of a model "
        "it can score, False the scans, None as rapidscorer.levels.levels_choice decides",
        "python -m benchmarks.tuning.rs_level_sweep --setting rs_levels --values 0,1",
        "QUICKSCORER_RS_LEVELS", _BOOL)
    rs_mirror: bool = _f(
        True, "RapidScorer's layout puts some nodes' right subtree first where that saves "
        "work; False: every node's left first (smaller, no copy of the leaf values)",
        "python -m benchmarks.matrix --algorithms rapidscorer", "QUICKSCORER_RS_MIRROR", _BOOL)
    rs_vbmi: bool = _f(
        True, "on AVX-512, the level walk takes AVX512_VBMI's byte permutations where the CPU "
        "has them (False: a node at a time)",
        "python -m benchmarks.tuning.rs_level_sweep --setting rs_vbmi --values 0,1",
        "QUICKSCORER_RS_VBMI", _BOOL)
    rs_halves: bool | None = _f(
        None, "on AVX-512, the level walk in two 256-bit registers a column (False: by byte "
        "permutations in 512-bit registers); None: on every AVX-512 CPU",
        "python -m benchmarks.tuning.rs_level_sweep --setting rs_halves --values 0,1",
        "QUICKSCORER_RS_HALVES", _BOOL)
    rs_gathered: bool | None = _f(
        None, "on AVX-512, groups of 64 documents take RapidScorer's gathered walk where the "
        "model has its fields (trees of 100 leaves or more on average); None: on Intel cores",
        "python -m benchmarks.tuning.rs_level_sweep --setting rs_gathered --values 0,1",
        "QUICKSCORER_RS_GATHERED", _BOOL)
    rs_wide_add: bool | None = _f(
        None, "on AVX-512, RapidScorer's scan adds the exit leaves of tree blocks of trees of "
        "more than 32 leaves as the AVX2 wide path does (False: tree by tree); None: on cores "
        "that run 512-bit operations as two halves (AMD Zen 4)",
        "python -m benchmarks.tuning.rs_level_sweep --setting rs_wide_add --values 0,1",
        "QUICKSCORER_RS_WIDE_ADD", _BOOL)
    rs_lv_block_bytes: int | None = _f(
        None, "bytes of level fields per tree block of the level path; None: a quarter of the "
        "L2 cache", "python -m benchmarks.tuning.rs_level_chunks",
        "QUICKSCORER_RS_LV_BLOCK_BYTES")
    rs_lv_chunk: int | None = _f(
        None, "groups a thread walks through each tree block of the level path (or scans "
        "through each block of the scan's) together; None: 64, fewer where their columns "
        "pass rs_lv_chunk_bytes",
        "python -m benchmarks.tuning.rs_level_chunks", "QUICKSCORER_RS_LV_CHUNK")
    rs_lv_chunk_bytes: int = _f(
        2 << 20, "a level chunk's columns stay within this many bytes (a choice: about a "
        "core's share of a server's L3 cache)", "python -m benchmarks.tuning.rs_level_chunks")

    # -- construction ---------------------------------------------------------------------
    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Tuning:
        """The defaults, then each switch's ``QUICKSCORER_*`` variable where ``environ``
        (default: ``os.environ``) sets it. Raises ValueError naming a variable that does not
        read as its kind."""
        environ = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for f in dataclasses.fields(cls):
            name = f.metadata["env"]
            text = environ.get(name, "") if name else ""
            if text != "":
                values[f.name] = cls.parse(f.name, text, f"${name}")
        return cls(**values)

    @classmethod
    def parse(cls, field: str, text: str, what: str | None = None) -> Any:
        """A switch's value from its text, as the environment gives it: the text itself for
        ``isa``, an integer otherwise, 0 and 1 for the yes-or-no switches, ``""`` or
        ``none`` for None where the field allows it. ``what`` names the text in an error."""
        f = {f.name: f for f in dataclasses.fields(cls)}.get(field)
        if f is None:
            raise ValueError(f"Tuning has no field {field!r}")
        kind = f.metadata["kind"]
        if text.strip().lower() in ("", "none"):
            return None
        if kind == _TEXT:
            return text
        try:
            number = float(text) if isinstance(f.default, float) else int(text)
        except ValueError:
            raise ValueError(f"{what or field} must be a number, got {text!r}") from None
        return number != 0 if kind == _BOOL else number

    def __post_init__(self):
        for name in ("doc_groups", "rs_lv_chunk_bytes", "parallel_min_rows"):
            if getattr(self, name) < 1:
                raise ValueError(f"Tuning.{name} must be >= 1, got {getattr(self, name)}")
        if self.rs_lane_nodes < 0:
            raise ValueError(f"Tuning.rs_lane_nodes must be >= 0, got {self.rs_lane_nodes}")

    def replace(self, **changes) -> Tuning:
        """A copy with ``changes`` (field names; an unknown one raises TypeError)."""
        return dataclasses.replace(self, **changes)

    def switches(self) -> dict[str, Any]:
        """The run-time switches that differ from their defaults, by environment variable."""
        out = {}
        for f in dataclasses.fields(self):
            if f.metadata["env"] and getattr(self, f.name) != f.default:
                out[f.metadata["env"]] = getattr(self, f.name)
        return out

    @classmethod
    def explain(cls) -> list[tuple[str, Any, str, str, str]]:
        """Each field as (name, default, why, command, environment variable), for the docs."""
        return [(f.name, f.default, f.metadata["why"], f.metadata["command"],
                 f.metadata["env"]) for f in dataclasses.fields(cls)]


_CURRENT: Tuning | None = None


def current() -> Tuning:
    """The process's table: the defaults and the environment, read on first use and kept."""
    global _CURRENT
    if _CURRENT is None:
        _CURRENT = Tuning.from_env()
    return _CURRENT
