"""``Stream``: continuous queries over a stream of batches -- count, time or
session windows, keyed or not, in order or out of order. A forwarder: it
turns the columns of each batch into Arrow arrays of one dtype, time unit
and key type, and hands them to the one stream of the Rust core
(``slidewise-core``'s ``stream`` module, docs/DESIGN.md §3)."""

from __future__ import annotations

import copy
import hashlib
import pickle
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple, Union

import pyarrow as pa
import pyarrow.compute as pc

from . import _arrow, _convert, _keys, _late, _slidewise, _time
from ._order_stream import OrderQueries
from ._plan import Plan, stream_groups
from ._query import Query
from ._typing import Batch, Duration

# 7: one format for every stream (the core's stream spine); 6: count windows
# without min_periods saved no per-partial row counts; 5: keys; 4: lateness.
# 3-6 still load, except out-of-order streams (their watermark rule changed).
# 8: first / last follow Spark's default (null rows count); before, they
# skipped nulls, which is now first_ignore_nulls / last_ignore_nulls.
_STATE_VERSION = 8
# 9: the version-8 dict pickled into bytes under a BLAKE2b checksum, with
# the writer's slidewise version beside it; 3-8 load unchecked.
_SEALED_VERSION = 9
_PARTIALS = ("pairs", "panes", "cutty")
_Spec = Tuple[str, str, int, int, Optional[int], Optional[str]]  # Query._spec()

__all__ = ["Query", "Stream"]


class Stream:
    """Continuous queries over one value column; push batches, get back the
    windows each batch completed. Picklable at any point (a checkpoint).

    * ``time="ts"``: time and session windows over that event-time column.
      Rows must come in time order (per key when keyed), unless
    * ``lateness="30s"``: rows may come in any order. The watermark is the
      largest event time seen over every key minus the lateness, moved once
      per pushed batch, as Spark Structured Streaming's ``withWatermark``; a
      window is emitted when the watermark passes its end; a row is late when
      every window it could join was already emitted. Late rows are never
      dropped: ``late_rows()`` returns them (with their key), and
      ``row_counts`` shows ``rows_in == on_time + late``.
    * ``key="k"``: column ``k`` (integers or strings, no nulls) partitions
      the stream; every key runs the queries on its own rows alone. Result
      tables get the key column first. Within one push, rows are grouped by
      key (keys in order of their first row in the batch; windows closed by
      the watermark and at flush, in order of each key's first row in the
      stream), each key's windows in order.

    In-order results do not depend on how the stream is cut into batches;
    out of order, which rows are late depends on the batches, as in Spark.

    * ``nan="skip"``: a NaN in the value column is missing, as a null
      (pandas' rule); ``"propagate"`` (default): a value (Spark's rule).
    * ``output="polars"`` / ``"pandas"``: ``push``, ``flush`` and
      ``late_rows`` return polars / pandas DataFrames instead of pyarrow
      Tables (``"arrow"``, the default); polars zero copy, pandas through
      ``Table.to_pandas`` (nulls become NaN / NaT).
    """

    def __init__(
        self,
        queries: Union[Query, Iterable[Query]],
        value: str = "v",
        time: Optional[str] = None,
        key: Optional[str] = None,
        lateness: Union[Duration, int, None] = None,
        algorithm: str = "auto",
        *,
        plan: Union[str, Plan, None] = None,
        rate: Optional[float] = None,
        partial: str = "pairs",
        nan: str = "propagate",
        output: str = "arrow",
    ) -> None:
        if isinstance(queries, Query):
            queries = [queries]
        queries = list(queries)
        if not queries:
            raise ValueError("a Stream needs at least one Query")
        for q in queries:
            if not isinstance(q, Query):
                raise TypeError(f"queries must be slidewise.Query objects, got {type(q).__name__}")
        names = [q.name for q in queries]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"query names must be unique; repeated: {dup} (pass name=...)")
        for what, col in (("value", value), ("time", time), ("key", key)):
            if col is not None and not isinstance(col, str):
                raise ValueError(f"{what} must be a column name, got {col!r}")
        if key is not None and key in (value, time):
            raise ValueError(f"the key column {key!r} cannot also be the value or time column")
        for q in queries:
            if q.time and time is None:
                raise ValueError(f"{q.name}: a time or session query needs the stream's event-time column (time='ts')")
            if not q.time and time is not None:
                raise ValueError(f"{q.name}: a stream with time= runs time windows; give range/slide as time spans")
        # lateness=None: rows must come in order; any lateness (0 included)
        # makes an out-of-order stream whose late rows come back through
        # late_rows().
        self._lateness = None if lateness is None else _late.lateness_ns(lateness)
        if self._lateness is not None and time is None:
            raise ValueError(
                "lateness=... needs time windows over an event-time column (time='ts'); "
                "count windows are never out of order"
            )
        self._algorithm = (_late.check_algorithm if self._lateness is not None else _arrow.check_algorithm)(algorithm)
        if partial not in _PARTIALS:
            raise ValueError(f"unknown partial aggregation {partial!r}; expected one of {', '.join(_PARTIALS)}")
        if time is not None and partial != "pairs":
            raise ValueError(f"time windows use partial='pairs'; got {partial!r}")
        self._queries: List[Query] = queries
        # median / quantile / rank run beside the core stream (_order_stream.py)
        self._core_queries = [q for q in queries if not q.order]
        order = [q for q in queries if q.order]
        self._order: Optional[OrderQueries] = OrderQueries(order) if order else None
        self._value, self._time, self._key = value, time, key
        self._partial = partial
        self._nan = _convert.check_nan(nan)
        self._output = _convert.check_output(output)
        # plan="weaveshare" (or a slidewise.Plan, or "none"): which queries
        # share a plan; None: one per (agg, arg, window kind). See _plan.py.
        self._plan_groups: Optional[List[int]] = \
            stream_groups(self._core_queries, plan, rate) if self._core_queries else None
        self._dtype: Optional[str] = None
        self._unit_ns: Optional[int] = None
        self._ts_type: Optional[pa.DataType] = None
        self._key_type: Optional[pa.DataType] = None
        self._rows_base = 0
        # Build once now so that an algorithm the operations cannot run
        # (soe with max, ...) fails here, not at the first push.
        if self._core_queries:
            self._new("float64", 1)
        self._inner: Optional[_slidewise.Stream] = None

    # -- public -------------------------------------------------------------

    @property
    def queries(self) -> List[Query]:
        return list(self._queries)

    @property
    def rows_seen(self) -> int:
        """Rows pushed so far."""
        if not self._core_queries:
            return 0 if self._order is None else self._order.rows
        return self._rows_base + (0 if self._inner is None else self._inner.counts()[0])

    def late_rows(self) -> Any:
        """Rows refused as late since the last call (streams with
        ``lateness``): the key column (keyed streams), the time and value
        columns, in arrival order. Every row pushed is either aggregated or
        returned here once."""
        if self._lateness is None:
            raise ValueError("late_rows() needs an out-of-order stream: pass lateness=... (and time=...)")
        if self._inner is None:  # nothing pushed yet (no time unit either)
            k, ts, v = None, pa.array([], pa.int64()), pa.array([], pa.float64())
        else:
            k, ts, v = self._inner.take_late()
        cols = [_time.restore(ts, self._ts_type), v if self._dtype else v.cast(pa.float64())]
        names = [self._time, self._value]
        if self._key is not None:
            cols.insert(0, self._keys_out(k))
            names.insert(0, self._key)
        return _convert.table_out(pa.Table.from_arrays(cols, names=names), self._output)

    @property
    def row_counts(self) -> Dict[str, int]:
        """Out-of-order streams: rows in, rows aggregated (on time) and rows
        returned late; ``rows_in == on_time + late``."""
        if self._lateness is None:
            raise ValueError("row_counts needs an out-of-order stream: pass lateness=...")
        c = (0, 0, 0) if self._inner is None else self._inner.counts()
        return {"rows_in": c[0], "on_time": c[1], "late": c[2]}

    @property
    def watermark(self) -> Any:
        """Out-of-order streams: the watermark (in the time column's type),
        None before the first batch."""
        if self._lateness is None or self._inner is None:
            return None
        w = self._inner.watermark()
        return None if w is None else _time.restore(pa.array([w], pa.int64()), self._ts_type)[0].as_py()

    def push(self, batch: Batch) -> Dict[str, Any]:
        """Feed one batch (RecordBatch, Table, dict of arrays, polars
        DataFrame, any ``__arrow_c_stream__`` object); returns, per query
        name, a table (window_start, window_end, value) of the windows this
        batch completed, with the key column first when keyed."""
        values = _convert.values_in(_convert.column(batch, self._value), self._nan, f"column {self._value!r}")
        ts = keys = None
        if self._time is not None:
            ts, unit_ns, ts_type = _time.time_column(_arrow.column(batch, self._time), f"column {self._time!r}")
        if self._key is not None:
            keys = _keys.key_array(_arrow.column(batch, self._key), f"key column {self._key!r}")
            if len(keys) != len(values):
                raise ValueError(f"key column {self._key!r} has {len(keys)} rows, value column {len(values)}")
        if ts is not None and self._unit_ns is None:
            self._unit_ns, self._ts_type = unit_ns, ts_type
        if self._dtype is None:
            self._dtype = str(values.type)
        if self._inner is None and self._core_queries:
            self._inner = self._new(self._dtype, self._unit_ns or 1)
        if ts is not None and unit_ns != self._unit_ns:
            ts = pa.array(ts.to_numpy() * unit_ns // self._unit_ns, pa.int64())
        if str(values.type) != self._dtype:
            values = self._cast(values)
        if keys is not None and self._key_type is None and len(keys):
            self._key_type = keys.type
        args = None
        if any(q.arg for q in self._core_queries):
            args = [self._arg(batch, q.arg, values) if q.arg else None for q in self._core_queries]
        core = self._stream().push(values, ts, keys, args) if self._core_queries else []  # made above
        order = self._order.push(values, keys) if self._order is not None else []
        return self._tables(core, order)

    def flush(self) -> Dict[str, Any]:
        """End of stream: every window still holding a row (count windows:
        the last, partial window of each query, with window_end = rows
        seen). Pushing after a flush is an error."""
        core = self._stream().flush() if self._core_queries else []
        return self._tables(core, self._order.flush() if self._order is not None else [])

    def __repr__(self) -> str:
        extra = "".join(f", {k}={v!r}" for k, v in (("time", self._time), ("key", self._key),
                                                     ("lateness", self._lateness)) if v is not None)
        if self._partial != "pairs":
            extra += f", partial={self._partial!r}"
        if self._nan != "propagate":
            extra += f", nan={self._nan!r}"
        if self._output != "arrow":
            extra += f", output={self._output!r}"
        return f"Stream({self._queries!r}, value={self._value!r}{extra}, algorithm={self._algorithm!r})"

    # -- pickle -------------------------------------------------------------

    def _state(self) -> Dict[str, Any]:
        return {
            "version": _STATE_VERSION,
            "queries": self._queries,
            "value": self._value,
            "time": self._time,
            "key": self._key,
            "lateness": self._lateness,
            "algorithm": self._algorithm,
            "plan_groups": self._plan_groups,
            "partial": self._partial,
            "nan": self._nan,
            "output": self._output,
            "dtype": self._dtype,
            "unit_ns": self._unit_ns,
            "ts_type": self._ts_type,
            "key_type": self._key_type,
            "rows_base": self._rows_base,
            "state": None if self._inner is None else self._inner.save(),
            "order": self._order,
        }

    def __getstate__(self) -> Dict[str, Any]:
        # Everything a restore reads (specs, options, the core's partials)
        # goes into one pickle under a checksum, so a corrupt checkpoint is
        # refused instead of restoring other queries or partials.
        body = pickle.dumps(self._state(), protocol=4)
        return {"version": _SEALED_VERSION, "slidewise": _slidewise.__version__, "body": body,
                "blake2b": hashlib.blake2b(body, digest_size=16).digest()}

    def __setstate__(self, st: Dict[str, Any]) -> None:
        writer = st.get("slidewise") if isinstance(st, dict) else None
        by = f"written by slidewise {writer}" if isinstance(writer, str) else "written by a slidewise before 0.2"
        try:
            if isinstance(st, dict) and st.get("version") == _SEALED_VERSION:
                body = st["body"]
                if not isinstance(body, bytes) or hashlib.blake2b(body, digest_size=16).digest() != st["blake2b"]:
                    raise ValueError("checksum mismatch: the checkpoint is corrupt")
                st = pickle.loads(body)
            self._restore(st)
        except ValueError as e:
            raise ValueError(f"cannot restore a slidewise Stream ({by}; this is slidewise "
                             f"{_slidewise.__version__}): {e}") from None
        except Exception as e:  # a corrupt pickle of an old, unchecked version
            raise ValueError(f"cannot restore a slidewise Stream ({by}; this is slidewise "
                             f"{_slidewise.__version__}): {type(e).__name__}: {e}") from None

    def _restore(self, st: Dict[str, Any]) -> None:
        version = st.get("version")
        if version not in (3, 4, 5, 6, 7, _STATE_VERSION):
            raise ValueError(f"saved with state version {version!r}")
        self._queries = st["queries"]
        self._order = st.get("order")
        if version < 8:
            # Saved when first / last skipped nulls: keep that meaning (the
            # saved partials are the same bytes).
            self._queries = [_renamed_first_last(q) for q in self._queries]
        self._core_queries = [q for q in self._queries if not q.order]
        self._value, self._time, self._key = st["value"], st["time"], st.get("key")
        self._lateness = st.get("lateness")
        self._algorithm = st["algorithm"]
        self._plan_groups = st.get("plan_groups")
        self._partial = st.get("partial", "pairs")
        self._nan = st.get("nan", "propagate")  # saved since the front ends; older states: the defaults
        self._output = st.get("output", "arrow")
        self._dtype, self._unit_ns, self._ts_type = st["dtype"], st["unit_ns"], st["ts_type"]
        self._key_type = st.get("key_type")
        # Before version 7 rows were counted outside the saved state.
        self._rows_base = st.get("rows_base", st.get("rows", 0) if version < 7 else 0)
        self._inner = None
        if st["state"] is not None:
            self._inner = _slidewise.Stream.restore(st["state"], *self._args(self._dtype, self._unit_ns or 1))
        elif version < 7 and st.get("flushed"):
            self._stream().flush()

    # -- internals ----------------------------------------------------------

    def _args(self, dtype: str, unit_ns: int) -> Tuple[List[_Spec], str, str, Optional[int], bool, str, Optional[List[int]]]:
        return ([q._spec(unit_ns) for q in self._core_queries], dtype, self._algorithm,
                None if self._lateness is None else self._lateness // unit_ns,
                self._key is not None, self._partial, self._plan_groups)

    def _new(self, dtype: str, unit_ns: int) -> "_slidewise.Stream":
        # A lateness finer than the time unit rounds down: times are whole
        # units.
        return _slidewise.Stream(*self._args(dtype, unit_ns))

    def _stream(self) -> "_slidewise.Stream":
        """The core stream, made (float64) if nothing was pushed yet."""
        if self._inner is None:
            self._dtype = self._dtype or "float64"
            self._inner = self._new(self._dtype, self._unit_ns or 1)
        return self._inner

    def _keys_out(self, k: pa.Array) -> pa.Array:
        if self._key_type is None:
            return k if k is not None else pa.array([], pa.int64())
        return k.cast(self._key_type) if k.type != self._key_type else k

    def _tables(self, core: Sequence[Tuple[Optional[pa.Array], pa.Array, pa.Array, pa.Array]],
                order: Sequence[Tuple[Optional[pa.Array], pa.Array, pa.Array, pa.Array]]) -> Dict[str, Any]:
        """Per query, in the order given: the core's results, then the order
        statistics' (each a (keys, window_start, window_end, value))."""
        out = {}
        done = dict(zip([q.name for q in self._core_queries], core))
        done.update(zip([q.name for q in self._order.queries] if self._order else [], order))
        for q in self._queries:
            k, s, e, v = done[q.name]
            if self._time is not None:
                s, e = _time.restore(s, self._ts_type), _time.restore(e, self._ts_type)
            cols, names = [s, e, v], ["window_start", "window_end", "value"]
            if self._key is not None:
                cols.insert(0, self._keys_out(k))
                names.insert(0, self._key)
            out[q.name] = _convert.table_out(pa.Table.from_arrays(cols, names=names), self._output)
        return out

    def _cast(self, values: pa.Array) -> pa.Array:
        try:
            return values.cast(self._dtype, safe=True)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            raise TypeError(
                f"this stream's value column is {self._dtype} (fixed by its first batch); "
                f"cannot cast a {values.type} batch to it without loss"
            ) from None

    def _arg(self, batch: Any, name: str, values: pa.Array) -> pa.Array:
        a = _arrow.to_arrow(_arrow.column(batch, name), f"column {name!r}")
        if not (pa.types.is_integer(a.type) or pa.types.is_null(a.type)):
            raise TypeError(f"arg column {name!r} must hold integers, got {a.type}")
        try:
            a = a.cast(pa.int64(), safe=True)
        except pa.ArrowInvalid:
            raise ValueError(f"arg column {name!r} holds values outside int64") from None
        if a.null_count:
            # A null argument is only a problem where the value is counted.
            if pc.any(pc.and_(values.is_valid(), a.is_null())).as_py():
                raise ValueError(f"arg column {name!r} is null where {self._value!r} is not")
            a = a.fill_null(0)
        return a


def _renamed_first_last(q: Query) -> Query:
    if q.agg not in ("first", "last"):
        return q
    q = copy.copy(q)
    q.agg += "_ignore_nulls"
    return q
