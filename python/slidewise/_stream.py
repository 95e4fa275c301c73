"""Continuous count-window queries over a stream of batches."""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Optional, Union

import pyarrow as pa
import pyarrow.compute as pc

from . import _arrow, _keys, _late, _slidewise, _time

_ARG_AGGS = ("argmax", "argmin")
# 6: count windows without min_periods save no per-partial row counts;
# 5: keys; 4: lateness (out-of-order streams); 3, 4 and 5 still load
_STATE_VERSION = 6
_PARTIALS = ("pairs", "panes", "cutty")


class Query:
    """An aggregate continuous query: after every ``slide`` rows, ``agg`` over
    the last ``range`` rows (fewer at the start of the stream).

    ``min_periods=k`` gives null where fewer than ``k`` non-null values are in
    the window. ``arg="col"`` (argmax/argmin only) reports the value of column
    ``col`` at the extreme row instead of its position.
    """

    def __init__(
        self,
        agg: str,
        range: int,
        slide: int = 1,
        *,
        name: Optional[str] = None,
        min_periods: Optional[int] = None,
        arg: Optional[str] = None,
    ) -> None:
        self.agg = _arrow.check_agg(agg)
        # A time span ("10m", timedelta) makes a time-window query (Spark's
        # window(ts, range, slide); slide defaults to range, a tumbling
        # window, as in Spark); a number of rows makes a count window.
        self.time = _time.is_duration(range)
        if self.time:
            if slide == 1:
                slide = range
            self.range = _time.duration_ns("range", range)
            self.slide = _time.duration_ns("slide", slide)
            self.min_periods = _arrow.min_periods_int(min_periods, 1 << 62, "2**62")
        else:
            if _time.is_duration(slide):
                raise ValueError(f"a count-window query (range={range!r} rows) needs a slide in rows, got {slide!r}")
            self.range = _arrow.positive_int("range", range)
            self.slide = _arrow.positive_int("slide", slide)
            self.min_periods = _arrow.min_periods_int(min_periods, self.range, "range")
        if arg is not None:
            if self.agg not in _ARG_AGGS:
                raise ValueError(f"arg= is only meaningful for argmax/argmin, not {self.agg!r}")
            if not isinstance(arg, str):
                raise ValueError(f"arg must be a column name, got {arg!r}")
        self.arg = arg
        if name is None:
            name = f"{agg}_{range}_{slide}"
        if not isinstance(name, str) or not name:
            raise ValueError(f"a query name must be a non-empty string, got {name!r}")
        self.name = name

    def _spec(self):
        return (self.agg, self.range, self.slide, self.min_periods)

    def _time_spec(self, unit_ns: int):
        return (self.agg, _time.to_units("range", self.range, unit_ns),
                _time.to_units("slide", self.slide, unit_ns), self.min_periods)

    def __repr__(self) -> str:
        extra = "".join(
            f", {k}={v!r}" for k, v in (("min_periods", self.min_periods), ("arg", self.arg)) if v is not None
        )
        return f"Query({self.agg!r}, range={self.range}, slide={self.slide}, name={self.name!r}{extra})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Query) and vars(self) == vars(other)

    def __hash__(self) -> int:
        return hash((self.name, self._spec(), self.arg))


class Stream:
    """Several count-window queries over one value column; push batches,
    get back the windows each batch completes. Results do not depend on how
    the stream is cut into batches. Picklable at any point (a checkpoint).

    ``key="k"``: column ``k`` (integers or strings, no nulls) partitions the
    stream; every key runs the queries on its own rows alone (count windows
    count that key's rows; time windows need times non-decreasing per key
    only). Result tables get the key column first, named ``k``. Within one
    push, rows are grouped by key (keys in order of their first row in the
    batch; at flush, of their first row in the stream), each key's windows
    in order; sorted by (key, window_start) results do not depend on how the
    stream is cut into batches.
    """

    def __init__(
        self,
        queries: Union[Query, Iterable[Query]],
        value: str = "v",
        time: Optional[str] = None,
        key: Optional[str] = None,
        lateness: Any = None,
        algorithm: str = "auto",
        *,
        plan: Any = None,
        rate: Optional[float] = None,
        partial: str = "pairs",
    ) -> None:
        if key is not None and not isinstance(key, str):
            raise ValueError(f"key must be a column name, got {key!r}")
        if key is not None and lateness is not None:
            # Keyed out-of-order streams need a per-key (or global) watermark
            # and keyed late rows: not built yet, so refuse rather than
            # answer wrongly.
            raise ValueError("key= with lateness= is not supported yet")
        # lateness=None: rows must come in time order; any lateness (0
        # included) makes an out-of-order stream with a watermark whose late
        # rows come back through late_rows().
        self._lateness = None if lateness is None else _late.lateness_ns(lateness)
        if self._lateness is not None and time is None:
            raise ValueError(
                "lateness=... needs time windows over an event-time column (time='ts'); "
                "count windows are never out of order"
            )
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
        if not isinstance(value, str):
            raise ValueError(f"value must be a column name, got {value!r}")
        if time is not None and not isinstance(time, str):
            raise ValueError(f"time must be a column name, got {time!r}")
        for q in queries:
            if q.time and time is None:
                raise ValueError(f"{q.name}: a time-window query needs the stream's event-time column (time='ts')")
            if not q.time and time is not None:
                raise ValueError(f"{q.name}: a stream with time= runs time windows; give range/slide as time spans")
        self._time = time
        self._unit_ns: Optional[int] = None
        self._ts_type: Optional[pa.DataType] = None
        self._queries: List[Query] = queries
        self._value = value
        if self._lateness is not None:
            self._algorithm = _late.check_algorithm(algorithm)
        else:
            self._algorithm = _arrow.check_algorithm(algorithm)
        self._key = key
        self._key_type: Optional[pa.DataType] = None
        self._rows = 0
        if key is not None and key in (value, time):
            raise ValueError(f"the key column {key!r} cannot also be the value or time column")
        # plan="weaveshare" (or a slidewise.Plan, or "none"): which queries
        # share a plan; None keeps one plan per (agg, arg). See _plan.py.
        from ._plan import stream_groups

        self._plan_groups: Optional[List[int]] = stream_groups(queries, plan, rate)
        # Partial aggregation of count windows (FlatFIT §2.1): same results,
        # different partials per window.
        if partial not in _PARTIALS:
            raise ValueError(f"unknown partial aggregation {partial!r}; expected one of {', '.join(_PARTIALS)}")
        if time is not None and partial != "pairs":
            raise ValueError(f"time windows use partial='pairs'; got {partial!r}")
        self._partial = partial
        # Build once now so that an algorithm the operations cannot run
        # (soe with max, ...) fails here, not at the first push.
        if key is not None:
            self._keyed_new("float64", 1)
        elif time is None:
            _slidewise.CountStream(self._specs(), "float64", self._algorithm, self._groups(), self._partial)
        elif self._lateness is not None:
            _slidewise.LateStream([q._time_spec(1) for q in queries], self._lateness, "float64", self._algorithm,
                                  self._groups())
        else:
            _slidewise.TimeStream([q._time_spec(1) for q in queries], "float64", self._algorithm, self._groups())
        self._dtype: Optional[str] = None
        self._inner: Optional[_slidewise.CountStream] = None

    # -- public -------------------------------------------------------------

    @property
    def queries(self) -> List[Query]:
        return list(self._queries)

    @property
    def rows_seen(self) -> int:
        if self._key is not None:
            return self._rows
        if self._inner is None:
            return 0
        if self._lateness is not None:
            return self._inner.counts()[0]
        return self._inner.rows_seen()

    def late_rows(self) -> pa.Table:
        """Rows that arrived behind the watermark since the last call (only
        streams with ``lateness=``): the time and value columns, in arrival
        order. Every row pushed is either aggregated or returned here once."""
        if self._lateness is None:
            raise ValueError("late_rows() needs an out-of-order stream: pass lateness=... (and time=...)")
        if self._inner is None:
            return _late.late_table(None, None, self._ts_type, self._time, self._value)
        values, ts = self._inner.take_late()
        return _late.late_table(values, ts, self._ts_type, self._time, self._value)

    @property
    def row_counts(self) -> Dict[str, int]:
        """Out-of-order streams: rows in, rows aggregated (on time) and rows
        reported late; ``rows_in == on_time + late``."""
        if self._lateness is None:
            raise ValueError("row_counts needs an out-of-order stream: pass lateness=...")
        c = (0, 0, 0) if self._inner is None else self._inner.counts()
        return {"rows_in": c[0], "on_time": c[1], "late": c[2]}

    def push(self, batch: Any) -> Dict[str, pa.Table]:
        """Feed one batch (RecordBatch, Table, dict of arrays, polars
        DataFrame, any ``__arrow_c_stream__`` object); returns, per query
        name, a table (window_start, window_end, value) of the windows this
        batch completed."""
        if getattr(self, "_flushed", False):
            raise ValueError("this stream was flushed (end of stream); create a new one to push more rows")
        values = _arrow.values_array(_arrow.column(batch, self._value), f"column {self._value!r}")
        if self._key is not None:
            return self._push_keyed(batch, values)
        if self._time is not None:
            return self._push_time(batch, values)
        inner = self._ensure(str(values.type))
        if str(values.type) != self._dtype:
            values = self._cast(values)
        args = None
        if any(q.arg for q in self._queries):
            args = [self._arg(batch, q.arg, values) if q.arg else None for q in self._queries]
        return self._tables(inner.push(values, args))

    def flush(self) -> Dict[str, pa.Table]:
        """End of stream: the last, partial window of each query (the rows
        after the last slide edge, with window_end = rows seen). Pushing
        after a flush is an error."""
        # Also when nothing was pushed yet (no state exists to remember it).
        self._flushed = True
        if self._key is not None:
            if self._inner is None:
                return self._keyed_tables(self._keyed_new("float64", 1).flush())
            return self._keyed_tables(self._inner.flush())
        if self._time is not None:
            if self._inner is None:
                return self._tables([(pa.array([], pa.int64()),) * 2 + (pa.array([], pa.float64()),)
                                     for _ in self._queries])
            return self._tables(self._inner.flush())
        return self._tables(self._ensure("float64").flush())

    def __repr__(self) -> str:
        extra = "" if self._partial == "pairs" else f", partial={self._partial!r}"
        return f"Stream({self._queries!r}, value={self._value!r}, algorithm={self._algorithm!r}{extra})"

    # -- pickle -------------------------------------------------------------

    def __getstate__(self) -> dict:
        return {
            "version": _STATE_VERSION,
            "queries": self._queries,
            "value": self._value,
            "algorithm": self._algorithm,
            "dtype": self._dtype,
            "state": None if self._inner is None else self._inner.save(),
            "time": self._time,
            "unit_ns": self._unit_ns,
            "ts_type": self._ts_type,
            "plan_groups": self._plan_groups,
            "lateness": self._lateness,
            "partial": self._partial,
            "flushed": getattr(self, "_flushed", False),
            "key": self._key,
            "key_type": self._key_type,
            "rows": self._rows,
        }

    def __setstate__(self, st: dict) -> None:
        if st.get("version") not in (3, 4, 5, _STATE_VERSION):
            raise ValueError(f"cannot restore a slidewise Stream saved with state version {st.get('version')!r}")
        self._queries = st["queries"]
        self._value = st["value"]
        self._algorithm = st["algorithm"]
        self._dtype = st["dtype"]
        self._inner = None
        self._plan_groups = st.get("plan_groups")
        self._time, self._unit_ns, self._ts_type = st["time"], st["unit_ns"], st["ts_type"]
        self._lateness = st.get("lateness")
        self._partial = st.get("partial", "pairs")
        self._flushed = st.get("flushed", False)
        self._key, self._key_type, self._rows = st.get("key"), st.get("key_type"), st.get("rows", 0)
        if st["state"] is not None and self._key is not None:
            # Keyed state bytes carry their own format tag.
            self._inner = _slidewise.KeyedStream.load(
                self._keyed_specs(self._unit_ns or 1), self._dtype, self._algorithm, st["state"],
                self._time is not None, self._groups(), self._partial)
        elif st["state"] is not None and self._lateness is not None:
            self._inner = _slidewise.LateStream.load(
                [q._time_spec(self._unit_ns) for q in self._queries],
                self._late_units(self._unit_ns),
                self._dtype, self._algorithm, st["state"], self._groups())
        elif st["state"] is not None and self._time is not None:
            self._inner = _slidewise.TimeStream.load(
                [q._time_spec(self._unit_ns) for q in self._queries], self._dtype, self._algorithm, st["state"],
                self._groups())
        elif st["state"] is not None:
            self._inner = _slidewise.CountStream.load(
                self._specs(), self._dtype, self._algorithm, st["state"], self._groups(), self._partial
            )

    # -- internals ----------------------------------------------------------

    def _specs(self):
        return [q._spec() for q in self._queries]

    def _groups(self) -> List[int]:
        """Queries with the same aggregation and argument column share one
        plan (one set of partials, one final aggregator), unless a plan=
        chose the groups."""
        if self._plan_groups is not None:
            return list(self._plan_groups)
        ids: Dict[Any, int] = {}
        return [ids.setdefault((q.agg, q.arg), len(ids)) for q in self._queries]

    def _ensure(self, dtype: str) -> "_slidewise.CountStream":
        # The value dtype is fixed by the first batch.
        if self._inner is None:
            self._dtype = dtype
            self._inner = _slidewise.CountStream(self._specs(), dtype, self._algorithm, self._groups(), self._partial)
        return self._inner

    def _push_time(self, batch: Any, values: pa.Array) -> Dict[str, pa.Table]:
        ts, unit_ns, ts_type = _time.time_column(_arrow.column(batch, self._time), f"column {self._time!r}")
        if self._inner is None:
            self._dtype, self._unit_ns, self._ts_type = str(values.type), unit_ns, ts_type
            specs = [q._time_spec(unit_ns) for q in self._queries]
            if self._lateness is not None:
                self._inner = _slidewise.LateStream(specs, self._late_units(unit_ns), self._dtype, self._algorithm,
                                                    self._groups())
            else:
                self._inner = _slidewise.TimeStream(specs, self._dtype, self._algorithm, self._groups())
        elif unit_ns != self._unit_ns:
            ts = pa.array(ts.to_numpy() * unit_ns // self._unit_ns, pa.int64())
        if str(values.type) != self._dtype:
            values = self._cast(values)
        return self._tables(self._inner.push(values, ts))

    def _late_units(self, unit_ns: int) -> int:
        # A lateness finer than the timestamps' unit rounds down: a row is
        # on time iff ts >= max_ts - lateness, and ts are whole units.
        return self._lateness // unit_ns

    # -- keys -----------------------------------------------------------------

    def _keyed_specs(self, unit_ns: int):
        if self._time is not None:
            return [q._time_spec(unit_ns) for q in self._queries]
        return self._specs()

    def _keyed_new(self, dtype: str, unit_ns: int) -> "_slidewise.KeyedStream":
        return _slidewise.KeyedStream(self._keyed_specs(unit_ns), dtype, self._algorithm,
                                      self._time is not None, self._groups(), self._partial)

    def _push_keyed(self, batch: Any, values: pa.Array) -> Dict[str, pa.Table]:
        keys = _keys.key_array(_arrow.column(batch, self._key), f"key column {self._key!r}")
        if len(keys) != len(values):
            raise ValueError(f"key column {self._key!r} has {len(keys)} rows, value column {len(values)}")
        ts = None
        if self._time is not None:
            ts, unit_ns, ts_type = _time.time_column(_arrow.column(batch, self._time), f"column {self._time!r}")
            if self._inner is None:
                self._unit_ns, self._ts_type = unit_ns, ts_type
            elif unit_ns != self._unit_ns:
                ts = pa.array(ts.to_numpy() * unit_ns // self._unit_ns, pa.int64())
        if self._inner is None:
            self._dtype = str(values.type)
            self._inner = self._keyed_new(self._dtype, self._unit_ns or 1)
        if str(values.type) != self._dtype:
            values = self._cast(values)
        if self._key_type is None and len(keys):
            self._key_type = keys.type
        args = None
        if any(q.arg for q in self._queries):
            args = [self._arg(batch, q.arg, values) if q.arg else None for q in self._queries]
        out = self._keyed_tables(self._inner.push(keys, values, ts, args))
        self._rows += len(values)
        return out

    def _keyed_tables(self, results) -> Dict[str, pa.Table]:
        out = {}
        for q, (k, s, e, v) in zip(self._queries, results):
            if self._time is not None:
                s, e = _time.restore(s, self._ts_type), _time.restore(e, self._ts_type)
            if self._key_type is not None and k.type != self._key_type:
                k = k.cast(self._key_type)
            out[q.name] = pa.Table.from_arrays([k, s, e, v], names=[self._key, "window_start", "window_end", "value"])
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

    def _tables(self, results) -> Dict[str, pa.Table]:
        if self._time is not None:
            results = [(_time.restore(s, self._ts_type), _time.restore(e, self._ts_type), v) for s, e, v in results]
        return {
            q.name: pa.Table.from_arrays([s, e, v], names=["window_start", "window_end", "value"])
            for q, (s, e, v) in zip(self._queries, results)
        }
