"""Key columns of keyed streams and keyed rolling.

Keys are int32/int64 or string/large_string columns; narrower integers are
widened to int64, dictionary-encoded columns are decoded (one ``take`` of the
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


def key_array(obj: Any, what: str = "keys") -> pa.Array:
    arr = _arrow.to_arrow(obj, what)
    t = arr.type
    if pa.types.is_dictionary(t):
        arr = arr.dictionary_decode()
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
        "(int32/int64/string/large_string; narrower integers are widened, dictionaries decoded)"
    )
