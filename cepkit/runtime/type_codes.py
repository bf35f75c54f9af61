"""The type column of a stream as int32 codes into the list of type names, a slice at a time, a bad
type named by its position (``EventError``)."""

from __future__ import annotations

import ctypes
import functools
from types import SimpleNamespace

import numpy as np
import pandas as pd

from ..errors import EventError, shown

FACTORIZE_ROWS = 1 << 20  # rows factorized at once: pandas' codes are int64, the stream keeps int32
FEW_OBJECTS = 4096  # distinct objects in a slice up to which they are merged by value one by one


def factorized_types(values) -> tuple:
    """(int32 codes, the types in order of first appearance) of a type column (a numpy or pandas array),
    as ``pd.factorize`` gives them, with -1 for a null and for any value that is not a string (an error
    for the caller to name), a slice at a time: its int64 codes for a 10M-row column (80 MB) would exceed
    the int32 column kept.

    An object column (``type`` of strings in a DataFrame) mostly repeats a few ``str`` objects: its slices
    are numbered by the objects' addresses (with numba a pass with a small table, else ``pd.factorize``
    of the addresses: 5-15x faster than hashing each string), and the few distinct objects are then
    merged by value (distinct but equal strings get one code; order of first appearance is kept, since
    addresses are met in that order)."""
    by_address = isinstance(values, np.ndarray) and values.dtype == object
    if by_address:
        addresses = _addresses(values)
        numbering = _address_numbering()
    codes = np.empty(len(values), np.int32)
    known: dict = {}  # type -> its code
    for start in range(0, len(values), FACTORIZE_ROWS):
        stop = min(start + FACTORIZE_ROWS, len(values))
        part, uniques, in_place = codes[start:stop], None, False
        if by_address:
            if numbering is not None:
                firsts, complete = numbering(addresses[start:stop], part, FEW_OBJECTS)
                in_place = complete
            else:
                part, firsts = pd.factorize(addresses[start:stop])
                complete = len(firsts) <= FEW_OBJECTS
            if complete:  # (``values`` holds the objects: their addresses stay theirs)
                uniques = [ctypes.cast(int(a), ctypes.py_object).value for a in firsts.tolist()]
        if uniques is None:
            part, uniques = pd.factorize(values[start:stop])
        ids = [known.setdefault(u, len(known)) if isinstance(u, str) else -1 for u in uniques]
        if in_place and ids == list(range(len(ids))):
            continue  # numbered in place, as the whole column numbers them
        codes[start:stop] = np.array(ids + [-1], dtype=np.int32)[part]  # (-1, a null, reads the last -1)
    return codes, list(known)


def _number_addresses(addresses, out, limit):
    """Numbers each address by first appearance into ``out`` (int32) with an open-addressing table;
    (the distinct addresses in that order, True), or (-, False) past ``limit`` of them. Compiled by numba
    (``_address_numbering``); no address is 0."""
    size = 1
    while size < 2 * limit:
        size *= 2
    slots = np.zeros(size, np.int64)
    slot_codes = np.zeros(size, np.int32)
    firsts = np.zeros(limit, np.int64)
    count = 0
    last, last_code = 0, 0
    for i in range(len(addresses)):
        address = addresses[i]
        if address != last:
            j = (address >> 4) & (size - 1)
            while slots[j] != 0 and slots[j] != address:
                j = (j + 1) & (size - 1)
            if slots[j] == 0:
                if count == limit:
                    return firsts[:0], False
                slots[j] = address
                slot_codes[j] = count
                firsts[count] = address
                count += 1
            last, last_code = address, slot_codes[j]
        out[i] = last_code
    return firsts[:count], True


@functools.cache
def _address_numbering():
    """``_number_addresses`` compiled, or None without numba (the ``fast`` extra) or with its JIT off."""
    try:
        import numba
    except ImportError:  # pragma: no cover - numba is in the dev/bench/fast extras
        return None
    if numba.config.DISABLE_JIT:
        return None
    return numba.njit(cache=True, nogil=True)(_number_addresses)


def _addresses(values: np.ndarray) -> np.ndarray:
    """The addresses of an object array's items: a read-only intp view of its references, strides and
    all (it holds ``values``, so each address stays its object's). An array interface, not a ctypes
    array: ctypes keeps a new array type for every length it is asked for."""
    holder = SimpleNamespace(
        values=values,
        __array_interface__={
            "data": (values.ctypes.data, True),
            "shape": values.shape,
            "strides": values.strides,
            "typestr": np.dtype(np.intp).str,
            "version": 3,
        },
    )
    return np.asarray(holder)


def frame_types(col: pd.Series, first_position: int) -> tuple:
    """(codes, names) of a DataFrame's type column; EventError at the first null or non-string type."""
    bad_codes = []
    if isinstance(col.dtype, pd.CategoricalDtype):
        codes, names = col.cat.codes.to_numpy(), list(col.cat.categories)
        bad_codes = [k for k, name in enumerate(names) if not isinstance(name, str)]
    else:  # (an Arrow-backed string column is dictionary-encoded by Arrow, not turned into objects)
        codes, names = factorized_types(col.to_numpy() if isinstance(col.dtype, np.dtype) else col.array)
    bad = codes < 0
    if bad_codes:
        bad |= np.isin(codes, bad_codes)
    if bad.any():
        i = int(np.argmax(bad))
        value = col.iloc[i]
        raise EventError(
            first_position + i,
            "type",
            f"the type must be a non-null string, got {shown(value)} ({type(value).__name__})",
        )
    return codes, names
