"""Key columns of keyed streams and keyed rolling.

Keys are int32/int64 or string/large_string columns; narrower integers are
widened to int64, string_view (polars' strings) read as string, and
dictionary-encoded columns (categoricals) decoded (one ``take`` of the
dictionary). Null keys are an error (the core names the first such row):
every row belongs to exactly one key, so none is silently dropped -- unlike
pandas' ``groupby``, which drops rows with a null key by default. Fill or
drop them first.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from . import _arrow

_KEY_TYPES = {pa.int32(), pa.int64(), pa.string(), pa.large_string()}


def _plain_strings(arr: pa.Array) -> pa.Array:
    """string_view (what polars exports strings as) -> string, as pyarrow's
    own strings come (large_string past 2 GiB of text), which the core
    reads; other arrays unchanged."""
    if not pa.types.is_string_view(arr.type):
        return arr
    try:
        return arr.cast(pa.string())
    except (pa.ArrowInvalid, pa.ArrowCapacityError):
        return arr.cast(pa.large_string())


def key_array(obj: Any, what: str = "keys") -> pa.Array:
    arr = _arrow.to_arrow(obj, what)
    t = arr.type
    if pa.types.is_dictionary(t):
        # a categorical: its dictionary taken at the indices (string_view
        # dictionaries, as polars' Categorical exports, cast first: Arrow
        # has no take for them)
        arr = _plain_strings(arr.dictionary).take(arr.indices)
    arr = _plain_strings(arr)
    t = arr.type
    if t in _KEY_TYPES:
        return arr
    if pa.types.is_integer(t):
        try:
            return arr.cast(pa.int64(), safe=True)
        except pa.ArrowInvalid:
            raise TypeError(f"{what}: {t} keys outside the int64 range are not supported") from None
    if pa.types.is_null(t) and len(arr):
        raise ValueError(f"{what}: key of row 0 is null; every row needs a key (fill or drop null keys first)")
    if pa.types.is_null(t):
        return pa.array([], pa.int64())
    raise TypeError(
        f"unsupported {what} dtype {t}; keys must be integer or string columns "
        "(int32/int64/string/large_string/string_view; narrower integers are widened, dictionaries decoded)"
    )
