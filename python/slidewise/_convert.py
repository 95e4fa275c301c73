"""Front ends: what comes back follows what went in, and the NaN policy.

* ``values_in(obj, nan)``: the value column as one pyarrow Array the core
  reads (``_arrow.values_array``), a pandas Series read without turning its
  NaN into nulls (so that ``nan=`` alone decides what a NaN is), then
  ``apply_nan_policy``.
* ``series_out`` / ``frame_out``: a result array / table back in the input's
  kind: polars in -> polars out (``pl.from_arrow``, zero copy for numeric
  columns, the name kept); pandas in -> pandas out (the input's index and
  name; zero copy for numeric columns without nulls); anything else ->
  pyarrow, unchanged.
* ``table_out``: a Stream's result table in the format asked for.

pandas and polars are imported only when the input is one of theirs (the
type's module says so without importing anything) or when a Stream asks for
their output.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np
import pyarrow as pa

from . import _arrow, _slidewise

NAN_POLICIES = ("propagate", "skip")
OUTPUTS = ("arrow", "polars", "pandas")


def check_nan(nan: Any) -> str:
    if not isinstance(nan, str) or nan not in NAN_POLICIES:
        raise ValueError(
            f"nan must be 'propagate' (NaN is a value: Spark's rule) or 'skip' (NaN is missing: "
            f"pandas' and bottleneck's rule), got {nan!r}"
        )
    return nan


def apply_nan_policy(arr: pa.Array, nan: str = "propagate") -> pa.Array:
    """``nan="skip"``: every NaN of a float column becomes a null (so every
    aggregation skips it, and ``min_periods`` does not count it);
    ``"propagate"``: ``arr`` as is. Only the validity bitmap is rebuilt (the
    values buffer is shared), and only when the column holds a NaN: in Rust,
    one pass over the values a 64-row word at a time (pyarrow's compute
    functions took several, as long as the kernel after them, issue 36)."""
    nan = check_nan(nan)
    if nan == "propagate" or not pa.types.is_floating(arr.type) or len(arr) == 0:
        return arr
    out = _slidewise.nan_to_null(arr)
    return arr if out is None else out


def kind(obj: Any) -> str:
    """'pandas', 'polars' or 'arrow' (everything else), from the type's
    module: nothing is imported to ask."""
    top = (type(obj).__module__ or "").split(".", 1)[0]
    return top if top in ("pandas", "polars") else "arrow"


def _pandas_values(s: Any) -> Any:
    """A pandas Series as Arrow, NaN kept as NaN (pyarrow's default for
    pandas input turns NaN into null); pd.NA of nullable dtypes is null."""
    import pandas as pd

    if isinstance(s, pd.DataFrame):
        raise TypeError("values must be one column (a pandas Series), got a pandas DataFrame")
    if not isinstance(s, (pd.Series, pd.Index)):
        return s
    if isinstance(s.dtype, np.dtype):
        return s.to_numpy(copy=False)  # zero copy; to_arrow reads it as numpy (NaN stays NaN)
    try:
        return pa.array(s.array, from_pandas=False)  # Float64 / Int64 / ArrowDtype: NA -> null
    except (pa.ArrowInvalid, pa.ArrowTypeError) as e:
        raise TypeError(f"cannot read values of pandas dtype {s.dtype} as an Arrow array: {e}") from None


def values_in(obj: Any, nan: str = "propagate", what: str = "values") -> pa.Array:
    """The value column, checked, with the NaN policy applied."""
    nan = check_nan(nan)
    if kind(obj) == "pandas":
        obj = _pandas_values(obj)
    return apply_nan_policy(_arrow.values_array(obj, what), nan)


def column(batch: Any, name: str) -> Any:
    """Column ``name`` of a batch (``_arrow.column``); of a pandas DataFrame,
    the Series itself, so that ``values_in`` keeps its NaN apart from nulls
    (the DataFrame's Arrow export makes them nulls)."""
    if kind(batch) == "pandas" and hasattr(batch, "columns") and name in batch.columns:
        return batch[name]
    return _arrow.column(batch, name)


def _pandas_mapper(like: Any) -> Any:
    """types_mapper for a pandas result: nullable input dtypes (Int64,
    Float64, ArrowDtype) give nullable results (null stays pd.NA, apart from
    NaN); numpy input gives numpy results (None: nulls become NaN)."""
    import pandas as pd

    dtype = like.dtype
    if isinstance(dtype, np.dtype):
        return None
    if isinstance(dtype, pd.ArrowDtype):
        return pd.ArrowDtype
    nullable = {pa.int64(): pd.Int64Dtype(), pa.int32(): pd.Int32Dtype(),
                pa.float64(): pd.Float64Dtype(), pa.float32(): pd.Float32Dtype()}
    return nullable.get


def _pandas_column(arr: pa.Array, mapper: Any) -> Any:
    import pandas as pd

    if mapper is not None:
        return arr.to_pandas(types_mapper=mapper)
    # numpy: float without nulls is zero copy (read-only, pandas' copy on
    # write copies it before any write); int with nulls -> float64 NaN, as
    # pandas does for a missing integer (and as its own rolling returns).
    if pa.types.is_list(arr.type) or pa.types.is_large_list(arr.type):
        return pd.Series(arr.to_pylist(), dtype=object)
    return arr.to_numpy(zero_copy_only=False)


def series_out(result: pa.Array, like: Any, step: Optional[int] = None) -> Any:
    """``result`` (one value per input row, or every ``step``-th) in the kind
    of ``like``, the input values."""
    k = kind(like)
    if k == "polars":
        import polars as pl

        out = pl.from_arrow(result)
        assert isinstance(out, pl.Series)  # from an Array
        return out.alias(like.name) if isinstance(like, pl.Series) else out
    if k == "pandas":
        import pandas as pd

        if not isinstance(like, pd.Series):
            return result
        index = like.index if step is None else like.index[::step]
        vals = _pandas_column(result, _pandas_mapper(like))
        return pd.Series(getattr(vals, "array", vals), index=index, name=like.name, copy=False)
    return result


def frame_out(table: pa.Table, like: Any) -> Any:
    """A ``rolling_many`` table in the kind of ``like``: a polars DataFrame,
    a pandas DataFrame on the input's index, or the pyarrow Table."""
    k = kind(like)
    if k == "polars":
        import polars as pl

        return pl.from_arrow(table)
    if k == "pandas":
        import pandas as pd

        if not isinstance(like, pd.Series):
            return table
        mapper = _pandas_mapper(like)
        cols = {}
        for name, c in zip(table.column_names, table.columns):
            v = _pandas_column(_arrow.to_arrow(c), mapper)
            cols[name] = getattr(v, "array", v)
        return pd.DataFrame(cols, index=like.index, copy=False)
    return table


def check_output(output: Any) -> str:
    if not isinstance(output, str) or output not in OUTPUTS:
        raise ValueError(f"output must be one of {', '.join(OUTPUTS)}, got {output!r}")
    if output != "arrow":
        try:
            __import__(output)
        except ImportError:
            raise ValueError(f"output={output!r} needs {output} installed (pip install {output})") from None
    return output


def table_out(table: pa.Table, output: str) -> Any:
    """A Stream's result table as pyarrow (as is), polars (zero copy) or
    pandas (nulls as pandas' to_pandas makes them: NaN in numeric columns,
    NaT in times; RangeIndex)."""
    if output == "polars":
        import polars as pl

        return pl.from_arrow(table)
    if output == "pandas":
        return table.to_pandas()
    return table
