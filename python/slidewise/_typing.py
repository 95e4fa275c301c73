"""Type aliases for what the public functions accept, so that a type checker
allows every call the functions take (``rolling(x, "5m", timestamps=ts)``)
and nothing much wider. Runtime checks with clear messages stay in
``_arrow`` / ``_time``: these only describe.

pyarrow ships no type information, so its objects are ``Any`` to a checker
and fit every alias below; polars and numpy objects match the protocols.
"""

from __future__ import annotations

import datetime
from typing import Any, Mapping, Protocol, SupportsIndex, Tuple, Union

import numpy as np


class ArrowArrayExportable(Protocol):
    """An object with the Arrow PyCapsule array export (pyarrow Array,
    nanoarrow, arro3, ...)."""

    def __arrow_c_array__(self, requested_schema: Any = ...) -> Tuple[Any, Any]: ...


class ArrowStreamExportable(Protocol):
    """An object with the Arrow PyCapsule stream export (pyarrow
    ChunkedArray / Table, polars Series / DataFrame, ...)."""

    def __arrow_c_stream__(self, requested_schema: Any = ...) -> Any: ...


class NumpyConvertible(Protocol):
    """Anything ``numpy.asarray`` reads through ``__array__`` (numpy arrays,
    masked arrays, pandas Series)."""

    def __array__(self, *args: Any, **kwargs: Any) -> np.ndarray[Any, Any]: ...


#: One column of values, keys or timestamps: an Arrow array or chunked array,
#: a polars Series, a numpy (masked) array, a pandas Series, a list / tuple /
#: range, or any object exporting Arrow data.
ArrayLike = Union[ArrowArrayExportable, ArrowStreamExportable, NumpyConvertible, list[Any], Tuple[Any, ...], range]

#: A time span: "10s", "5 minutes", a ``datetime.timedelta`` or a numpy
#: ``timedelta64``.
Duration = Union[str, datetime.timedelta, np.timedelta64]

#: A number of rows: an int or anything with ``__index__`` (numpy integers).
Rows = SupportsIndex

#: A window: a number of rows, or (with event times) a time span; an int is
#: then in the timestamps' unit.
Window = Union[SupportsIndex, Duration]

#: A value type: "float64" (or "double", "f64", ...), a numpy dtype or scalar
#: type, or a pyarrow DataType; one of int32, int64, float32, float64.
DTypeLike = Union[str, np.dtype[Any], type, Any]

#: A batch of a stream: a pyarrow RecordBatch / Table, a dict of columns, a
#: polars DataFrame or any Arrow PyCapsule table.
Batch = Union[ArrowArrayExportable, ArrowStreamExportable, Mapping[str, Any]]
