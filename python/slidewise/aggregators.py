"""The FIFO final aggregators of the papers, as raw data structures: a queue
of values where you insert at the back, evict from the front, and query the
aggregate of the whole window or of its newest ``k`` entries.

>>> from slidewise.aggregators import FlatFIT
>>> a = FlatFIT("max", "float64")
>>> for x in [3.0, 1.0, 2.0]:
...     a.insert(x)
>>> a.query(), a.query_last(2)
(3.0, 2.0)
>>> a.evict(); a.query()
2.0

Each class is the same Rust trait object (``FifoAggregator``) over one
monomorphised operation: one virtual call per method call.
"""

from __future__ import annotations

from typing import Any, Optional

from . import _arrow, _slidewise
from ._typing import ArrayLike, DTypeLike

__all__ = ["Recalc", "SoE", "TwoStacks", "DABA", "FlatFAT", "BInt", "FlatFIT", "SlideSide", "Aggregator"]


class Aggregator:
    """Base class; ``algorithm`` names the data structure."""

    algorithm: str = "auto"

    def __init__(self, agg: str, dtype: DTypeLike = "float64", *, capacity: int = 1024) -> None:
        agg = _arrow.check_agg(agg)
        self._dtype = _arrow.dtype_name(dtype)
        cap = _arrow.positive_int("capacity", capacity)
        self._raw = _slidewise.RawAggregator(self.algorithm, agg, self._dtype, cap)

    @property
    def agg(self) -> str:
        return self._raw.agg

    @property
    def dtype(self) -> str:
        return self._dtype

    def insert(self, value: Any, pos: Optional[int] = None) -> None:
        """Append one value (None: a null row that counts as a slot).
        ``pos`` is what argmax/argmin report; by default the insert count."""
        self._raw.insert(value, pos)

    def insert_many(self, values: ArrayLike) -> None:
        """Append every value of an array-like (nulls are null rows)."""
        arr = _arrow.values_array(values)
        if str(arr.type) != self._dtype:
            try:
                arr = arr.cast(self._dtype, safe=True)
            except Exception:
                raise TypeError(f"cannot cast {arr.type} values to this aggregator's {self._dtype}") from None
        self._raw.insert_many(arr)

    def evict(self, n: int = 1) -> None:
        """Remove the ``n`` oldest entries (all of them if fewer)."""
        self._raw.evict(n)

    def query(self) -> Any:
        """The aggregate of the window, or None for an empty/all-null one."""
        return self._raw.query()

    def query_last(self, k: int) -> Any:
        """The aggregate of the newest ``k`` entries (``k`` capped at len)."""
        return self._raw.query_last(k)

    def __len__(self) -> int:
        return len(self._raw)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.agg!r}, {self._dtype!r}, len={len(self)})"


class Recalc(Aggregator):
    """Naive recomputation on every query (FlatFIT paper §2.2); the oracle."""

    algorithm = "recalc"


class SoE(Aggregator):
    """Subtract-on-Evict (SlideSide paper §2); invertible operations only."""

    algorithm = "soe"


class TwoStacks(Aggregator):
    """TwoStacks (SlideSide paper §2): amortised O(1) per step."""

    algorithm = "two_stacks"


class DABA(Aggregator):
    """De-Amortized Banker's Aggregator: worst-case O(1) (Tangwongsan et al.)."""

    algorithm = "daba"


class FlatFAT(Aggregator):
    """Flat Fixed-size Aggregator tree (Reactive Aggregator paper §4)."""

    algorithm = "flatfat"


class BInt(Aggregator):
    """B-Int base intervals (FlatFIT paper §2.2)."""

    algorithm = "bint"


class FlatFIT(Aggregator):
    """FlatFIT, Algorithm 1 with wReset (FlatFIT paper §3)."""

    algorithm = "flatfit"


class SlideSide(Aggregator):
    """SlideSide (SlideSide paper §3)."""

    algorithm = "slideside"
