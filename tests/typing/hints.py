"""What the hints must accept and refuse, for ``make typecheck`` (never run).

Each refused call carries a ``type: ignore[code]``: mypy --strict reports an
ignore that is not needed (warn_unused_ignores), so a hint that grew too
wide fails the type check as surely as one too narrow.
"""

import datetime

import numpy as np
import polars as pl
import pyarrow as pa

import slidewise as sw
from slidewise.polars import SlidewiseExpr

ts = pa.array([0, 1, 2], pa.timestamp("s"))
x = np.arange(3.0)

# accepted: every kind of column, windows in rows or as time spans
sw.rolling([1.0, 2.0, 3.0], "5m", timestamps=ts)
sw.rolling(x, datetime.timedelta(minutes=5), "max", timestamps=ts)
sw.rolling(x, np.timedelta64(5, "m"), "max", timestamps=ts)
sw.rolling(pl.Series([1.0, 2.0]), np.int64(2), "max")
sw.rolling(np.ma.masked_array([1.0, 2.0], mask=[False, True]), 2, keys=(1, 2))
sw.rolling(range(5), 2, "sum", keys=pl.Series(["a", "b", "a", "b", "a"]), min_periods=1)
sw.rolling_many(x, [2, np.int32(3)], ["max", "mean"])
sw.Query("max", range="10m", slide="1m")
sw.Query("max", range=100, slide=10)
sw.Query("count", session=datetime.timedelta(seconds=30))
sw.Stream(sw.Query("sum", range="1m"), value="v", time="ts", lateness="30s")
sw.Stream([sw.Query("max", range=10)], plan="weaveshare")
stream = sw.Stream([sw.Query("max", range=10)])
stream.push({"v": x})
stream.push(pl.DataFrame({"v": [1.0, 2.0]}))
sw.plan([(10, 2), (20, 4)])
sw.count_edges(np.array([[10, 2], [20, 4]]))
sw.aggregators.TwoStacks("max", np.float64).insert_many(x)

# the polars namespace: ``pl.col(v).sw`` is ``SlidewiseExpr(pl.col(v))``,
# registered at run time, which mypy cannot see (the docs/polars.md copy is
# let off attr-defined for it in pyproject.toml); its calls are checked here
v = SlidewiseExpr(pl.col("v"))
exprs: list[pl.Expr] = [
    v.rolling(2, "max"),
    v.rolling(2, "max", over="k"),
    v.rolling("2i", "sum", by="t"),
    v.rolling(datetime.timedelta(hours=1), "mean", by=pl.col("t"), closed="both"),
    v.rolling(3, "quantile", quantile=0.9, interpolation="linear", min_samples=1),
    v.rolling_many([2, 3], ["sum", "mean"], over=["k"]),
]

# refused
v.rolling(2, "max", min_samples=1.5)  # type: ignore[arg-type]
sw.rolling(x, 2.5)  # type: ignore[arg-type]
sw.rolling(3.0, 2)  # type: ignore[arg-type]
sw.rolling(x, 2, keys=5)  # type: ignore[arg-type]
sw.Query("max", range=1.5)  # type: ignore[arg-type]
sw.Query("max", session=30)  # type: ignore[arg-type]
sw.Stream([sw.Query("max", range=10)], plan=3)  # type: ignore[arg-type]
stream.push(3)  # type: ignore[arg-type]
