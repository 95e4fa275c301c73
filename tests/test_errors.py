"""Every bad input raises a Python exception that says what was wrong."""

import datetime

import numpy as np
import pyarrow as pa
import pytest

import slidewise as sw
from slidewise import _slidewise


@pytest.mark.parametrize(
    "values, dtype",
    [(["a", "b"], "string"), ([True, False], "bool"), (pa.array([datetime.date(2024, 1, 1)]), "date32"),
     (pa.array([1], pa.uint64()), "uint64"), (np.array(["2024-01-01"], dtype="datetime64[ns]"), "timestamp"),
     (pa.array([1], pa.decimal128(5, 2)), "decimal")],
)
def test_wrong_dtype_is_a_type_error_naming_it(values, dtype):
    with pytest.raises(TypeError, match=f"unsupported values dtype {dtype}.*int32, int64, float32 and float64"):
        sw.rolling(values, 3)


def test_a_python_int_past_64_bits_is_a_type_error_naming_the_column():
    # pyarrow alone raises a bare OverflowError ("Python int too large to
    # convert to C long") that names neither the argument nor a way out
    with pytest.raises(TypeError, match="cannot read values as an Arrow array: a number does not fit 64 bits"):
        sw.rolling([1, 2**70], 2, "sum")


@pytest.mark.parametrize("dtype", [np.longdouble, np.complex128])
def test_numpy_dtypes_without_an_arrow_type_are_type_errors_naming_them(dtype):
    # pyarrow alone raises ArrowNotImplementedError("Unsupported numpy type 13")
    with pytest.raises(TypeError, match=f"unsupported values dtype {np.dtype(dtype)}; slidewise aggregates int32"):
        sw.rolling(np.array([1, 2], dtype=dtype), 2)


@pytest.mark.parametrize("dtype", [">f8", ">i4", ">f4", ">i8"])
def test_big_endian_numpy_arrays_read_as_their_values(dtype):
    x = np.array([3, -1, 4, 1, 5], dtype=dtype)
    native = x.astype(x.dtype.newbyteorder("="))
    assert sw.rolling(x, 2, "sum").equals(sw.rolling(native, 2, "sum"))
    assert sw.rolling(x, 2, "sum").to_pylist() == [3, 2, 3, 5, 6]


def test_numpy_scalars_are_accepted_for_shape_arguments():
    x = [1.0, 2.0, 3.0, 4.0, 5.0]
    want = sw.rolling(x, 3, "sum", center=True, step=2)
    assert sw.rolling(x, np.int64(3), "sum", center=np.True_, step=np.int32(2)).equals(want)
    with pytest.raises(ValueError, match="center must be True or False, got 1"):
        sw.rolling(x, 3, center=1)
    with pytest.raises(ValueError, match="step must be a positive integer, got 2.0"):
        sw.rolling(x, 3, step=2.0)


@pytest.mark.parametrize("span", ["1M", "2MS", "1ME", "1mo", "1Y", "1y", "1Q"])
def test_calendar_offsets_are_refused_not_read_as_minutes(span):
    # pandas' '1M' is a month end; lower-cased it read as one minute, and
    # '2MS' (month start) as two milliseconds
    ts = np.array(["2024-01-01", "2024-01-02"], dtype="datetime64[ns]")
    with pytest.raises(ValueError, match=f"window '{span}' is a calendar offset .*not a fixed time span"):
        sw.rolling([1.0, 2.0], span, "sum", timestamps=ts)
    assert sw.rolling([1.0, 2.0], "1MIN", "sum", timestamps=ts).equals(
        sw.rolling([1.0, 2.0], "1min", "sum", timestamps=ts))


def test_rolling_many_aggregations_that_ignore_nulls_makes_equal_are_refused():
    # ignore_nulls=True turns "first" into "first_ignore_nulls": two columns
    # of one name
    for keys in (None, [0, 0, 1]):
        with pytest.raises(ValueError, match="aggregations must be distinct, got .'first', 'first_ignore_nulls'."):
            sw.rolling_many([1.0, None, 3.0], [1], ["first", "first_ignore_nulls"], keys=keys, ignore_nulls=True)
    t = sw.rolling_many([1.0, None, 3.0], [2], ["first", "first_ignore_nulls"])
    assert t.column_names == ["first_2", "first_ignore_nulls_2"]
    assert t.column("first_2").to_pylist() == [1.0, 1.0, None]


@pytest.mark.parametrize("window", [0, -1, 2.5, True, None, [3]])
def test_bad_window_is_a_value_error(window):
    with pytest.raises(ValueError, match="window must be a positive integer"):
        sw.rolling([1.0], window)


def test_argument_errors():
    with pytest.raises(ValueError, match="unknown agg 'mode'; expected one of count, sum, min, max"):
        sw.rolling([1.0], 2, "mode")
    with pytest.raises(ValueError, match="unknown algorithm 'fast'; expected one of auto, recalc, soe"):
        sw.rolling([1.0], 2, algorithm="fast")
    with pytest.raises(ValueError, match="algorithm 'soe' needs an invertible aggregation, and 'max'"):
        sw.rolling([1.0], 2, "max", algorithm="soe")
    with pytest.raises(ValueError, match="cbix"):
        sw.rolling([1.0], 2, algorithm="cbix")
    with pytest.raises(ValueError, match=r"min_periods \(3\) must be <= window \(2\)"):
        sw.rolling([1.0], 2, min_periods=3)
    with pytest.raises(ValueError, match="min_periods must be a non-negative integer"):
        sw.rolling([1.0], 2, min_periods=-1)
    with pytest.raises(ValueError, match="one-dimensional"):
        sw.rolling(np.zeros((2, 2)), 2)
    with pytest.raises(TypeError, match="numpy array or a list; got object"):
        sw.rolling(object(), 2)
    with pytest.raises(TypeError, match="cannot read values"):
        sw.rolling([1, "a"], 2)


def test_not_yet_implemented_features():
    q = sw.Query("sum", 10)
    with pytest.raises(ValueError, match="key must be a column name"):
        sw.Stream([q], key=3)
    # Count windows are never out of order: lateness needs time windows.
    with pytest.raises(ValueError, match="lateness=... needs time windows"):
        sw.Stream([q], lateness=5)


def test_time_spans_need_event_times_and_matching_queries():
    with pytest.raises(ValueError, match="time span, which needs event times"):
        sw.rolling([1.0], "5m")
    with pytest.raises(ValueError, match="needs the stream's event-time column"):
        sw.Stream([sw.Query("sum", datetime.timedelta(minutes=10))])
    with pytest.raises(ValueError, match="give range/slide as time spans"):
        sw.Stream([sw.Query("sum", 10)], time="ts")
    with pytest.raises(ValueError, match="timestamps have 1 rows, values 2"):
        sw.rolling([1.0, 2.0], "5s", timestamps=pa.array([1], pa.timestamp("s")))
    with pytest.raises(TypeError, match="timestamp"):
        sw.rolling([1.0], "5s", timestamps=pa.array(["x"]))
    # an int window with timestamps is in the timestamps' unit
    out = sw.rolling([1.0, 2.0, 4.0], 2, "sum", timestamps=pa.array([0, 1, 2], pa.timestamp("s")))
    assert out.to_pylist() == [1.0, 3.0, 6.0]


def test_query_and_stream_errors():
    with pytest.raises(ValueError, match="range must be a positive integer number of rows, got 0"):
        sw.Query("sum", 0)
    with pytest.raises(ValueError, match="slide must be a positive integer number of rows, got -2"):
        sw.Query("sum", 3, -2)
    with pytest.raises(ValueError, match="unknown agg"):
        sw.Query("avg", 3)
    with pytest.raises(ValueError, match=r"min_periods \(4\) must be <= range \(3\)"):
        sw.Query("sum", 3, min_periods=4)
    with pytest.raises(ValueError, match="arg= is only meaningful for argmax/argmin"):
        sw.Query("max", 3, arg="id")
    with pytest.raises(ValueError, match="soe.*max"):
        sw.Stream([sw.Query("max", 3)], algorithm="soe")
    with pytest.raises(ValueError, match="unique.*sum_3_1"):
        sw.Stream([sw.Query("sum", 3), sw.Query("sum", 3)])
    with pytest.raises(ValueError, match="at least one"):
        sw.Stream([])
    s = sw.Stream([sw.Query("sum", 3)], value="x")
    with pytest.raises(ValueError, match="no column 'x'; its columns are \\['v'\\]"):
        s.push(pa.table({"v": [1]}))
    with pytest.raises(TypeError, match="unsupported column 'x' dtype string"):
        s.push({"x": ["a"]})
    with pytest.raises(TypeError, match="a batch must be"):
        s.push(42)
    # A lone column is not a table, whichever protocol it speaks.
    for col in (pa.array([1, 2]), pa.chunked_array([[1], [2]])):
        with pytest.raises(TypeError, match="a batch must be a table with a column 'x'.*Array"):
            s.push(col)


def test_the_extension_validates_too():
    # Direct calls into the Rust module get Python errors, never a panic.
    a = pa.array([1.0, 2.0])
    with pytest.raises(ValueError, match="window must be a positive"):
        _slidewise.rolling(a, 0, "sum")
    assert _slidewise.rolling(a, 10**15, "sum").to_pylist() == [1.0, 3.0]
    out = _slidewise.rolling(a, 10**15, "argmax", 10)
    assert out.type == pa.int64() and out.to_pylist() == [None, None]
    with pytest.raises(ValueError, match=r"min_periods \(3\) must be <= window \(2\)"):
        _slidewise.rolling(a, 2, "sum", 3)
    with pytest.raises(ValueError, match="min_periods must be >= 0"):
        _slidewise.rolling(a, 2, "sum", -1)
    with pytest.raises(TypeError, match="unsupported value dtype"):
        _slidewise.rolling(pa.array(["x"]), 2, "sum")
    with pytest.raises(ValueError, match="slide must be a positive"):
        _slidewise.Stream([("sum", "count", 3, 0, None, None)], "float64")
    with pytest.raises(ValueError, match="session gap must be positive"):
        _slidewise.Stream([("sum", "session", 0, 0, None, None)], "float64")
    with pytest.raises(ValueError, match="unknown window kind"):
        _slidewise.Stream([("sum", "hop", 3, 1, None, None)], "float64")
    q = [("sum", "count", 3, 1, None, None)]
    s = _slidewise.Stream(q, "float64")
    with pytest.raises(TypeError, match="value column is float64, got a int64 batch"):
        s.push(pa.array([1, 2]))
    with pytest.raises(ValueError, match="argument column has 1 rows, value column 2"):
        s.push(a, args=[pa.array([1])])
    with pytest.raises(ValueError, match="args has 2 entries for 1 queries"):
        s.push(a, args=[None, None])
    with pytest.raises(ValueError, match="time and session windows need a time column"):
        _slidewise.Stream([("sum", "time", 3, 1, None, None)], "float64").push(a)
    with pytest.raises(ValueError, match="keyed stream needs a key column"):
        _slidewise.Stream(q, "float64", keyed=True).push(a)
    with pytest.raises(ValueError, match="cannot restore slidewise state"):
        _slidewise.Stream.restore(b"\x29garbage", q, "float64")
    with pytest.raises(ValueError, match="cannot restore"):
        _slidewise.Stream.restore(s.save(), q + [("max", "count", 2, 1, None, None)], "float64")
    with pytest.raises(ValueError, match="cannot restore"):
        _slidewise.Stream.restore(s.save()[:-3], q, "float64")
