"""Which exact algorithm ``Model.predict`` runs when none is named.

Every algorithm gives the same scores; they differ in speed, and which is fastest depends on
the rows per thread of a call and on the model's trees. Each kernel family declares the call
sizes it competes for (``Algorithm.regimes``), what a row costs it there on a given model
(``Algorithm.cost``, from the :class:`Facts` the families read of the model: the node covers
the model file holds and the shape of their layouts) and from how many rows it takes over from
the family of the smaller calls (``Algorithm.first_rows``). This module orders the regimes:

* below the few-rows family's first rows, the ``one_row`` family of least cost: the QuickScorer
  scan, which pays for each false node a row meets, or the ``walk``, which pays for each step
  of a row's path (or, on complete trees, a fixed number of steps a group of eight trees);
* up to the ``many_rows`` family's first rows, the ``few_rows`` family of least cost: ``vqs``,
  or the walk on models of large trees, where an 8-lane scan of their false nodes costs more
  than the walks;
* from there on the ``many_rows`` family (``rapidscorer``) where it can score the model, the
  few-rows family otherwise;
* a family of ``every`` call size (``oblivious``, on models whose every tree is oblivious) from
  its first rows, whatever the rest would choose;
* calls under ``Tuning.parallel_min_rows`` rows on one thread (:func:`threads_for`).

The arithmetic traversals of the paper are for study and are never chosen. The constants are
fields of the model's :class:`~quickscorer.tuning.Tuning`, which says why each has its value
and which command re-measures it. A change to any of them is followed by a matrix run
(``docs/benchmarks.md``).
"""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence

import numpy as np

from ..errors import ModelFileError
from ..tuning import Tuning, current
from . import cpu, registry

#: the call sizes, smallest first, that families declare (``Algorithm.regimes``); ``every``:
#: a family that takes every call it can from its first rows
REGIMES = ("one_row", "few_rows", "many_rows", "every")

#: the one-row and few-rows kernels where no family's cost says otherwise: the scan and its
#: vectorised form, which score every model
ONE_ROW_DEFAULT, FEW_ROWS_DEFAULT = "quickscorer", "vqs"


def _t(t: Tuning | None) -> Tuning:
    return current() if t is None else t


@dataclasses.dataclass(frozen=True)
class Facts:
    """What the families' costs read of one model: its size (``nodes``: internal nodes,
    ``n_trees``, ``mean_leaves``), the instruction-set path its kernels run (``isa``), and
    each family's own facts (``Algorithm.facts``): the walk's ``path`` (a row's expected
    steps), ``steps`` (through its complete trees, None where it lays out none) and
    ``float32`` (those are float32 slots), the scan's ``false`` (a row's expected false
    nodes). ``path`` and ``false`` are None without covers."""

    nodes: int
    n_trees: int
    mean_leaves: float
    isa: str
    path: float | None = None
    false: float | None = None
    steps: float | None = None
    float32: bool = False

    @property
    def complete(self) -> bool:
        """Whether the walk lays the trees out complete (eight trees a step)."""
        return self.steps is not None

    @classmethod
    def checked(cls, d) -> Facts:
        """The facts of dict ``d`` (a model file's record), each field of its type
        (ModelFileError otherwise)."""
        names = [f.name for f in dataclasses.fields(cls)]
        if not isinstance(d, dict) or sorted(d) != sorted(names):
            raise ModelFileError(f"the record of the model's facts has fields "
                                 f"{sorted(d) if isinstance(d, dict) else d!r}")
        def number(v) -> bool:
            return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)

        ok = (all(isinstance(d[k], int) and number(d[k]) and d[k] >= 0
                  for k in ("nodes", "n_trees"))
              and number(d["mean_leaves"]) and isinstance(d["isa"], str)
              and isinstance(d["float32"], bool)
              and all(d[k] is None or (number(d[k]) and d[k] >= 0)
                      for k in ("path", "false", "steps"))
              # both come from the node covers, or neither
              and (d["path"] is None) == (d["false"] is None))
        if not ok:
            raise ModelFileError("the record of the model's facts holds a value of the "
                                 "wrong type")
        return cls(**d)


def facts(ens, t: Tuning | None = None, isa: str | None = None,
          families: Mapping | None = None) -> Facts:
    """The model's :class:`Facts` under table ``t``, each family's own read once (``isa``:
    the path the kernels run, default the table's, else this CPU's widest)."""
    t = _t(t)
    families = registry.ALGORITHMS if families is None else families
    leaves = np.asarray(ens.trees.leaf_offset)
    own: dict = {}
    for cls in families.values():
        own.update(cls.facts(ens, t))
    return Facts(nodes=int(ens.trees.node_offset[-1]), n_trees=ens.n_trees,
                 mean_leaves=float(leaves[-1]) / max(1, leaves.shape[0] - 1),
                 isa=isa or cpu.isa_name(cpu.isa_code(t.isa)), **own)


def _facts(model, t: Tuning) -> Facts:
    return model if isinstance(model, Facts) else facts(model, t)


def least_cost(regime: str, supported: Sequence[str], f: Facts, t: Tuning,
               families: Mapping | None = None) -> str | None:
    """The supported family of ``regime`` whose row costs least on the model of ``f`` (at a
    tie, the lower ``tie_rank``); None where none competes."""
    families = registry.ALGORITHMS if families is None else families
    best = None
    for name in supported:
        cls = families[name]
        cost = cls.cost(regime, f, t) if regime in cls.regimes else None
        if cost is not None and (best is None or (cost, cls.tie_rank) < best[0]):
            best = ((cost, cls.tie_rank), name)
    return None if best is None else best[1]


def _in_regime(regime: str, names) -> list[str]:
    return [n for n in names if regime in registry.ALGORITHMS[n].regimes]


def expected_costs(ens, t: Tuning | None = None) -> tuple[float, float] | None:
    """A row's expected cost for the walk, in steps (``Facts.path``), and its expected false
    nodes (``Facts.false``); None without covers."""
    f = facts(ens, t)
    return None if f.false is None else (f.path, f.false)


def group_steps(ens, t: Tuning | None = None) -> float | None:
    """A row's steps through the walk's complete trees (``Facts.steps``), or None where the
    walk lays out none under the table's ``walk_complete``."""
    return facts(ens, t).steps


def one_row(model, supported: Sequence[str], t: Tuning | None = None) -> tuple[str, str]:
    """The kernel for calls below the few-rows family's first rows, and why (``model``: an
    ensemble or its :class:`Facts`)."""
    t = _t(t)
    f = _facts(model, t)
    name = least_cost("one_row", supported, f, t) or ONE_ROW_DEFAULT
    n = max(1, f.n_trees)
    if f.steps is not None:
        false = f.false if f.false is not None else 0.5 * f.nodes
        why = (f"{false / n:.1f} expected false nodes against {f.steps / n:.1f} steps a tree "
               f"through complete trees"
               f"{'' if f.false is not None else ' (no node covers: half the nodes)'}")
    elif f.false is None:
        why = "the model gives no node covers"
    else:
        why = (f"{f.false / n:.1f} expected false nodes against a walk of {f.path / n:.1f} "
               f"steps a tree")
    return name, why


def few_rows(model, supported: Sequence[str], t: Tuning | None = None) -> str:
    """The kernel for calls from the few-rows family's first rows to the many-rows family's
    (``model`` as for :func:`one_row`)."""
    t = _t(t)
    return least_cost("few_rows", supported, _facts(model, t), t) or FEW_ROWS_DEFAULT


def few_rows_from(one_row_kernel: str, few_rows_kernel: str, complete: bool = False,
                  t: Tuning | None = None) -> int:
    """Rows per thread from which the few-rows kernel runs after the one-row kernel
    (``Algorithm.first_rows``; ``complete``: the walk lays out complete trees)."""
    shape = Facts(nodes=0, n_trees=0, mean_leaves=0.0, isa="", steps=0.0 if complete else None)
    return registry.get(few_rows_kernel).first_rows(one_row_kernel, shape, _t(t))


def rs_min_rows(model, few_rows_kernel: str = FEW_ROWS_DEFAULT, isa: str | None = None,
                t: Tuning | None = None) -> int:
    """Rows per thread from which the many-rows family (``rapidscorer``) takes over from
    ``few_rows_kernel`` (its ``first_rows``); ``isa`` as for :func:`facts`."""
    t = _t(t)
    f = _facts(model, t)
    if isa is not None:
        f = dataclasses.replace(f, isa=isa)
    many = _in_regime("many_rows", registry.ALGORITHMS)[0]
    return registry.get(many).first_rows(few_rows_kernel, f, t)


def bounds(supported: Sequence[str], one_row_kernel: str = ONE_ROW_DEFAULT,
           few_rows_kernel: str = FEW_ROWS_DEFAULT, rs_from: int | None = None,
           complete: bool = False, t: Tuning | None = None) -> tuple:
    """The choice of :func:`choose` as the rows a thread where it changes kernel, for
    :func:`choose_in`: (the family of every call size or None, its first rows, the one-row
    kernel, the few-rows kernel's first rows, the few-rows kernel, ``rs_from``, the kernel
    from ``rs_from``)."""
    t = _t(t)
    if rs_from is None:
        rs_from = t.rs_min_rows
    every = _in_regime("every", supported)
    every_from = (registry.get(every[0]).first_rows(one_row_kernel, None, t) if every
                  else float("inf"))
    few_from = min(few_rows_from(one_row_kernel, few_rows_kernel, complete, t), rs_from)
    many = _in_regime("many_rows", supported)
    return (every[0] if every else None, every_from, one_row_kernel, few_from, few_rows_kernel,
            rs_from, many[0] if many else few_rows_kernel)


def choose_in(b: tuple, n_rows: int, n_threads: int) -> str:
    """The kernel of a call of ``n_rows`` rows on ``n_threads`` threads by :func:`bounds`."""
    every, every_from, one, few_from, few, rs_from, many = b
    per_thread = n_rows / max(1, n_threads)
    if every is not None and per_thread >= every_from:
        return every
    if per_thread < few_from:
        return one
    return few if per_thread < rs_from else many


def choose(supported: Sequence[str], n_rows: int, n_threads: int = 1,
           one_row_kernel: str = ONE_ROW_DEFAULT, few_rows_kernel: str = FEW_ROWS_DEFAULT,
           rs_from: int | None = None, complete: bool = False,
           t: Tuning | None = None) -> str:
    """The algorithm to run for ``n_rows`` rows on ``n_threads`` threads, among those that
    can score the model (``supported``): a family of every call size from its first rows;
    ``one_row_kernel`` below the few-rows kernel's first rows (:func:`few_rows_from`;
    ``complete``: the walk lays out complete trees) and ``rs_from`` (default
    ``t.rs_min_rows``); ``few_rows_kernel`` below ``rs_from``; then the many-rows family where
    it can score the model, ``few_rows_kernel`` where not."""
    return choose_in(bounds(supported, one_row_kernel, few_rows_kernel, rs_from, complete, t),
                     n_rows, n_threads)


def candidates(supported: Sequence[str], one_row_kernel: str = ONE_ROW_DEFAULT,
               few_rows_kernel: str = FEW_ROWS_DEFAULT) -> tuple[str, ...]:
    """The algorithms predict may choose for a model, among those that can score it
    (``one_row_kernel``, ``few_rows_kernel``: the model's :func:`one_row` and
    :func:`few_rows` choices)."""
    every = _in_regime("every", supported)
    if every:                           # from its first rows, before any few-rows kernel
        return tuple(dict.fromkeys((one_row_kernel, *every)))
    many = _in_regime("many_rows", supported)
    names = dict.fromkeys((one_row_kernel, few_rows_kernel, *(many or [few_rows_kernel])))
    return tuple(name for name in names if name in supported)


def threads_for(n_rows: int, n_threads: int, t: Tuning | None = None) -> int:
    """Threads worth starting for a call of ``n_rows`` rows."""
    if n_rows < _t(t).parallel_min_rows:
        return 1
    return max(1, min(n_threads, n_rows // 8))


def describe(supported: Sequence[str], one_row_choice: tuple[str, str] = (ONE_ROW_DEFAULT, ""),
             few_rows_kernel: str = FEW_ROWS_DEFAULT, rs_from: int | None = None,
             complete: bool = False, t: Tuning | None = None) -> str:
    """The choice in words, call size by call size."""
    t = _t(t)
    if rs_from is None:
        rs_from = t.rs_min_rows
    name, why = one_row_choice
    because = f" ({why})" if why else ""
    one_thread = f"one thread below {t.parallel_min_rows} rows"
    for every in _in_regime("every", supported):
        first = registry.get(every).first_rows(name, None, t)
        if first <= 1:
            return f"{every} at every call size (every tree is {every}); {one_thread}"
        return (f"{every} for {first} or more rows per thread (every tree is {every}), "
                f"{name} below{because}; {one_thread}")
    many = _in_regime("many_rows", supported)
    fast = many[0] if many else (f"{few_rows_kernel} ("
                                 f"{', '.join(_in_regime('many_rows', registry.ALGORITHMS))} "
                                 f"cannot score this model)")
    first = few_rows_from(name, few_rows_kernel, complete, t)
    if first >= rs_from:                  # the few-rows kernel never runs
        return f"{fast} for {rs_from} or more rows per thread, {name} below{because}; {one_thread}"
    return (f"{fast} for {rs_from} or more rows per thread, {few_rows_kernel} for "
            f"{first} or more, {name} below{because}; {one_thread}")
