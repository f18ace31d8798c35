"""The algorithms a :class:`~quickscorer.Model` can run, by name."""
from __future__ import annotations

from .arithmetic import ARITHMETIC
from .base import Algorithm
from .oblivious import Oblivious
from .qs.qs import QuickScorer
from .qs.vqs import VQuickScorer
from .rapidscorer.rapidscorer import RapidScorer
from .traversal import Traversal
from .walk import Walk

#: name -> class: the fast kernels first, then the reference walk and the paper's traversals
#: (docs/algorithms.md describes each)
ALGORITHMS: dict[str, type[Algorithm]] = {
    cls.name: cls for cls in (RapidScorer, Oblivious, VQuickScorer, QuickScorer, Walk, Traversal,
                              *ARITHMETIC)}


def available() -> list[str]:
    """The names of every algorithm, sorted."""
    return sorted(ALGORITHMS)


def get(name: str) -> type[Algorithm]:
    try:
        return ALGORITHMS[name]
    except KeyError:
        raise ValueError(f"unknown algorithm {name!r}; available: {available()}") from None


def supported(ens) -> list[str]:
    """The names of the algorithms that can score ``ens``, sorted."""
    return [name for name in available() if ALGORITHMS[name].unsupported(ens) is None]
