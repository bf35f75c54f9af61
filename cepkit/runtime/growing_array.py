"""An array written at its end whose final length is known only once it is all written."""

from __future__ import annotations

import numpy as np


class GrowingArray:
    """A 1-D array written at its end (``extend``), for results whose count is known only once they are
    all made. It doubles in place (``ndarray.resize``: realloc, which moves a large buffer's pages rather
    than copying them, so growing holds no second copy), read-only while it grows so that numpy leaves the
    new room unwritten: memory never written costs nothing. A copy where numpy refuses to resize."""

    def __init__(self, dtype, capacity: int = 1 << 12):
        self._buffer = np.empty(capacity, dtype)
        self.used = 0

    def extend(self, values: np.ndarray) -> None:
        end = self.used + len(values)
        if end > len(self._buffer):
            self._grow(max(end, 2 * len(self._buffer)))
        self._buffer[self.used : end] = values
        self.used = end

    def _grow(self, size: int) -> None:
        buffer, self._buffer = self._buffer, None  # (numpy resizes an array nothing else refers to)
        buffer.flags.writeable = False
        try:
            buffer.resize(size, refcheck=True)
        except ValueError:
            grown = np.empty(size, buffer.dtype)
            grown[: self.used] = buffer[: self.used]
            buffer = grown
        buffer.flags.writeable = True
        self._buffer = buffer

    @property
    def array(self) -> np.ndarray:
        """What was written (a view)."""
        return self._buffer[: self.used]
