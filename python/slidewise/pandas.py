"""The pandas front end: ``import slidewise.pandas`` registers ``.sw`` on
pandas Series and DataFrames (docs/pandas.md).

    s.sw.rolling(window, agg)                  # as s.rolling(window).agg()
    s.sw.rolling(window, agg, keys=k)          # as s.groupby(k).rolling(window).agg(), on s's index
    df.sw.rolling("v", window, agg, keys="k")  # as df.groupby("k")["v"].rolling(...), on df's index
    df.sw.rolling("v", "5min", agg, on="ts")   # as df.rolling("5min", on="ts")["v"].agg()

pandas' rules, not Spark's, are the defaults here, so that every result
equals pandas' own: NaN is missing (``nan="skip"``); ``min_periods``
defaults to the window for a count window (null until the window is full)
and to 1 for a time window; ``first`` / ``last`` are the first / last
non-NaN value; the sum of a window with no value is 0 (with
``min_periods=0``); for ``count``, ``min_periods`` counts the window's
rows, NaN rows included (pandas' count); ``ddof=`` picks var / std (1) or var_pop / std_pop (0).
``agg="rank"`` is refused: slidewise's rank is bottleneck's ``move_rank``,
not pandas' ``rank()``. Aggregations pandas lacks (geomean, range, argmax,
collect, ...) are there too, with the same defaults.
"""

from __future__ import annotations

import datetime
from typing import Any, Dict, Optional

import numpy as np
import pandas as pd

import slidewise as _sw

__all__ = ["SeriesAccessor", "DataFrameAccessor"]


def _is_span(window: Any) -> bool:
    return isinstance(window, (str, datetime.timedelta, np.timedelta64, pd.offsets.BaseOffset))


def _span(window: Any) -> datetime.timedelta:
    # pandas' spellings ("5min", "2s", Timedelta, a Tick offset) through pandas' parser
    try:
        span: datetime.timedelta = pd.Timedelta(window).to_pytimedelta()
        return span
    except (ValueError, TypeError) as e:
        raise ValueError(f"window {window!r} is not a fixed time span: {e}") from None


def _rolling(s: pd.Series, window: Any, agg: str, keys: Any, timestamps: Any, min_periods: Optional[int],
             nan: str, ddof: int, kw: Dict[str, Any]) -> pd.Series:
    if not isinstance(s, pd.Series):
        raise TypeError(f"expected a pandas Series, got {type(s).__name__}")
    if agg == "rank":
        raise ValueError("agg='rank' is bottleneck's move_rank, not pandas' rolling rank(): "
                         "call slidewise.rolling(s, window, 'rank') for it")
    if ddof not in (0, 1) or isinstance(ddof, bool):
        raise ValueError(f"ddof must be 0 or 1, got {ddof!r}")
    if ddof == 0 and agg in ("var", "std"):
        agg += "_pop"
    time = _is_span(window)
    if time:
        if timestamps is None:
            if not isinstance(s.index, pd.DatetimeIndex):
                raise ValueError(f"a time window ({window!r}) needs a DatetimeIndex or on= (a time column)")
            timestamps = s.index
        window = _span(window)
    elif timestamps is not None:
        raise ValueError("on= is for time windows ('5min', a Timedelta); a count window needs none")
    if min_periods is None:
        # pandas' defaults; a count window is a number of rows (an int, a numpy
        # integer), checked as slidewise.rolling checks it
        min_periods = 1 if time else _sw._arrow.positive_int("window", window)
    if agg in ("first", "last"):
        kw.setdefault("ignore_nulls", True)  # pandas' first / last skip NaN
    if keys is not None and isinstance(keys, pd.Series):
        keys = keys.to_numpy()  # positions, as the rows of s
    if keys is not None and len(s) == 0:
        keys = None  # an empty column has no key type (pandas makes it object); the answer is empty anyway
    if agg == "count" and min_periods:
        # pandas' count: min_periods counts the window's rows, NaN rows too
        out = _sw.rolling(s, window, agg, keys=keys, timestamps=timestamps, min_periods=0, nan=nan, **kw)
        rows = _sw.rolling(pd.Series(np.ones(len(s)), index=s.index), window, "count", keys=keys,
                           timestamps=timestamps, min_periods=0, **kw)
        return out.where(rows >= min_periods)
    out = _sw.rolling(s, window, agg, keys=keys, timestamps=timestamps, min_periods=min_periods, nan=nan, **kw)
    if agg == "sum" and min_periods == 0:
        out = out.fillna(0)  # pandas: a window without a value sums to 0 (nulls only come from such windows here)
    return out


@pd.api.extensions.register_series_accessor("sw")
class SeriesAccessor:
    """``s.sw``: slidewise rolling aggregates of a pandas Series."""

    def __init__(self, s: pd.Series) -> None:
        self._s = s

    def rolling(self, window: Any, agg: str = "sum", *, keys: Any = None, min_periods: Optional[int] = None,
                nan: str = "skip", ddof: int = 1, **kw: Any) -> pd.Series:
        """``agg`` over a rolling ``window`` (rows, or a time span over a
        DatetimeIndex), a Series on this Series' index and name, equal to
        ``s.rolling(window, min_periods=...).<agg>()`` (with ``keys``, to
        ``s.groupby(keys).rolling(...)`` put back in row order). Other
        keywords (``closed``, ``center``, ``step``, ``q``, ``interpolation``,
        ``algorithm``) as in :func:`slidewise.rolling`."""
        return _rolling(self._s, window, agg, keys, None, min_periods, nan, ddof, kw)


@pd.api.extensions.register_dataframe_accessor("sw")
class DataFrameAccessor:
    """``df.sw``: slidewise rolling aggregates of a column, per key."""

    def __init__(self, df: pd.DataFrame) -> None:
        self._df = df

    def _col(self, name: Any) -> pd.Series:
        if name not in self._df.columns:
            raise ValueError(f"the DataFrame has no column {name!r}; its columns are {list(self._df.columns)}")
        return self._df[name]

    def rolling(self, value: Any, window: Any, agg: str = "sum", *, keys: Any = None, on: Any = None,
                min_periods: Optional[int] = None, nan: str = "skip", ddof: int = 1, **kw: Any) -> pd.Series:
        """Column ``value`` aggregated over a rolling ``window``; ``keys``: a
        column name (windows per key, as ``df.groupby(keys)[value].rolling``);
        ``on``: the time column of a time window (as pandas' ``on=``). A
        Series on the frame's index, in its row order, named ``value``."""
        k = None if keys is None else self._col(keys)
        ts = None if on is None else self._col(on)
        return _rolling(self._col(value), window, agg, k, ts, min_periods, nan, ddof, kw)
