"""Rows held as arrays (CSR: ``offsets`` and flat ``values``, row i being
``values[offsets[i]:offsets[i + 1]]``): gathering rows, padding them into a matrix, and packing integer sort
keys into few words so that one ``argsort`` or a short ``lexsort`` orders many rows."""

from __future__ import annotations

import numpy as np

SLICE = 1 << 18  # rows read at once where a pass over all the rows needs arrays of its own


def gather(offsets: np.ndarray, rows: np.ndarray) -> tuple:
    """(new offsets, flat indices) of the CSR rows ``rows`` (in that order, repeats allowed)."""
    lengths = (offsets[1:] - offsets[:-1])[rows]
    new = np.zeros(len(rows) + 1, np.int64)
    np.cumsum(lengths, out=new[1:])
    return new, spread(offsets[:-1][rows], lengths)


def spread(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The indices starts[i], ..., starts[i] + lengths[i] - 1 of every i, in order."""
    total = int(lengths.sum())
    return np.arange(total, dtype=np.int64) + np.repeat(starts - (np.cumsum(lengths) - lengths), lengths)


def padded(offsets: np.ndarray, values: np.ndarray, fill: int) -> np.ndarray:
    """The CSR rows as an (n, longest) matrix, short rows padded with ``fill``."""
    n = len(offsets) - 1
    lengths = offsets[1:] - offsets[:-1]
    width = int(lengths.max(initial=0))
    if n and (lengths == width).all():
        return values[offsets[0] : offsets[-1]].reshape(n, width)
    out = np.full((n, width), fill, np.int64)
    rows = np.repeat(np.arange(n), lengths)
    out[rows, np.arange(len(rows)) - np.repeat(offsets[:-1] - offsets[0], lengths)] = values[offsets[0] : offsets[-1]]
    return out


def sort_words(first: np.ndarray, rest: np.ndarray) -> list:
    """Integer sort keys (the column ``first``, then the columns of the matrix ``rest``), most significant
    first, packed into as few int64 words as keep their order: constant columns and a column repeating
    ``first`` say nothing and are dropped, the rest are mixed-radix digits (so one ``argsort`` or a short
    ``lexsort`` replaces a ``lexsort`` over many keys)."""
    if not len(first):
        return []
    lows, highs = rest.min(axis=0), rest.max(axis=0)
    varying = [j for j in range(rest.shape[1]) if lows[j] < highs[j]]
    # each column made contiguous once (a wide matrix's columns are strided): later passes read it fast
    columns = [(first, int(first.min()), int(first.max()))]
    columns += [(col, int(lows[j]), int(highs[j])) for col, j in zip(rest.T[varying], varying)]
    columns = [
        c
        for k, c in enumerate(columns)
        if c[1] < c[2] and not (k and c[0][0] == first[0] and np.array_equal(c[0], first))
    ]
    words, word, span = [], None, 1
    for col, low, high in columns:
        width = high - low + 1
        if word is not None and span * width >= 1 << 62:
            words.append(word)
            word, span = None, 1
        digit = col.astype(np.int64, copy=False) - low
        if word is None:
            word = digit
        else:
            word *= width
            word += digit
        span *= width
    if word is not None:
        words.append(word)
    return words


def lex_order(words: list, n: int) -> np.ndarray:
    """The stable order of rows by ``words`` (none: any order is sorted)."""
    if not words:
        return np.arange(n)
    if len(words) == 1:
        w = words[0]
        return np.arange(n) if (w[1:] >= w[:-1]).all() else np.argsort(w, kind="stable")
    return np.lexsort(words[::-1])


def same_as_previous(words: list, order: np.ndarray) -> np.ndarray:
    """Per row of ``order``: equal in every word to the row before it."""
    same = np.zeros(len(order), bool)
    if len(order):
        same[1:] = True
        for w in words:
            ordered = w[order]
            same[1:] &= ordered[1:] == ordered[:-1]
    return same


def every(array: np.ndarray, test) -> bool:
    """Whether ``test(part).all()`` for each part of ``array`` (along its first axis), a few MB at a time:
    no boolean array as long as ``array``."""
    step = max(1, (1 << 20) // max(1, array[:1].size))
    return all(bool(test(array[start : start + step]).all()) for start in range(0, len(array), step))
