"""``Query``: one continuous query of a ``Stream`` -- an aggregation over a
count window, a time window or a session window."""

from __future__ import annotations

from typing import Any, Dict, Optional, Tuple

from . import _arrow, _time
from ._typing import Duration, Window

_ARG_AGGS = ("argmax", "argmin")


class Query:
    """An aggregate continuous query.

    * ``Query(agg, range=n, slide=s)`` with ``n`` rows: after every ``s``-th
      row, ``agg`` over the last ``n`` rows (fewer at the start of the
      stream).
    * ``Query(agg, range="10m", slide="1m")``: Spark's
      ``F.window(ts, "10 minutes", "1 minute")`` over the stream's event-time
      column; ``slide`` defaults to ``range`` (a tumbling window, as Spark).
    * ``Query(agg, session="30s")``: Spark's ``F.session_window(ts, "30
      seconds")``: a session runs from its first row to its last row plus
      the gap; rows at most ``gap`` apart share a session.

    ``min_periods=k`` gives null where fewer than ``k`` non-null values are in
    the window. ``first`` / ``last`` are Spark's (the window's first / last
    row, null if its value is null); ``ignore_nulls=True`` gives Spark's
    ``first(v, ignorenulls=True)`` (the agg becomes ``first_ignore_nulls``).
    ``arg="col"`` (argmax/argmin only) reports the value of column ``col``
    at the extreme row instead of its position.

    ``"median"``, ``"quantile"`` (with ``q=`` and ``interpolation=``, as
    :func:`slidewise.rolling`) and ``"rank"`` (of the window's last row)
    are count-window queries only (docs/DESIGN.md §5.10); their values are
    float64.
    """

    def __init__(
        self,
        agg: str,
        range: Optional[Window] = None,
        slide: Window = 1,
        *,
        session: Optional[Duration] = None,
        name: Optional[str] = None,
        min_periods: Optional[int] = None,
        arg: Optional[str] = None,
        ignore_nulls: bool = False,
        q: Optional[float] = None,
        interpolation: Optional[str] = None,
    ) -> None:
        self.order, self.q, self.interpolation = _arrow.order_args(agg, q, interpolation)
        if self.order:
            if session is not None or range is None or _time.is_duration(range):
                raise ValueError(f"agg={agg!r} is an order statistic: count windows only (range= a number of rows), "
                                 "no time or session windows")
            if arg is not None:
                raise ValueError(f"arg= is only meaningful for argmax/argmin, not {agg!r}")
        self.agg = agg if self.order else _arrow.check_agg(agg, ignore_nulls)
        self.session: Optional[int] = None
        if session is not None:
            if range is not None:
                raise ValueError("a query has either range= (count or time windows) or session=, not both")
            if not _time.is_duration(session):
                raise ValueError(f"session must be a time span (e.g. '30s', a timedelta), got {session!r}")
            self.session = _time.duration_ns("session", session)
            self.time = True
            self.range, self.slide = 0, 0
            self.min_periods = _arrow.min_periods_int(min_periods, 1 << 62, "2**62")
        elif range is None:
            raise ValueError("a query needs range= (rows or a time span) or session= (a time span)")
        else:
            # A time span ("10m", timedelta) makes a time-window query; a
            # number of rows makes a count window.
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
            name = f"{self.agg}_session_{session}" if session is not None else f"{self.agg}_{range}_{slide}"
        if not isinstance(name, str) or not name:
            raise ValueError(f"a query name must be a non-empty string, got {name!r}")
        self.name = name

    @property
    def kind(self) -> str:
        return "session" if self.session is not None else ("time" if self.time else "count")

    def _spec(self, unit_ns: int = 1) -> Tuple[str, str, int, int, Optional[int], Optional[str]]:
        """The binding's query tuple, times in units of ``unit_ns``."""
        if self.session is not None:
            return (self.agg, "session", _time.to_units("session", self.session, unit_ns), 0, self.min_periods, self.arg)
        if self.time:
            return (self.agg, "time", _time.to_units("range", self.range, unit_ns),
                    _time.to_units("slide", self.slide, unit_ns), self.min_periods, self.arg)
        return (self.agg, "count", self.range, self.slide, self.min_periods, self.arg)

    def __repr__(self) -> str:
        extra = "".join(
            f", {k}={v!r}" for k, v in (("min_periods", self.min_periods), ("arg", self.arg), ("q", self.q),
                                        ("interpolation", self.interpolation)) if v is not None
        )
        if self.session is not None:
            return f"Query({self.agg!r}, session={self.session}, name={self.name!r}{extra})"
        return f"Query({self.agg!r}, range={self.range}, slide={self.slide}, name={self.name!r}{extra})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Query) and vars(self) == vars(other)

    def __hash__(self) -> int:
        return hash((self.name, self._spec(), self.arg, self.q, self.interpolation))

    def __setstate__(self, st: Dict[str, Any]) -> None:
        st.setdefault("session", None)  # pickles from before session windows
        for k in ("order", "q", "interpolation"):  # before order statistics
            st.setdefault(k, None)
        self.__dict__.update(st)
