"""When events fit a time window: the one rule the reference and every engine decide by (docs/language.md
§4, §10 rule 8).

``WITHIN w`` admits a span when max ts − min ts ≤ w. Times are seconds in floats, so a span meant to
be exactly w (ts = i · 0.002 under ``WITHIN 20 ms``) may come out a few ulps above it; the rule allows
8 ulps of the largest of 1, w and the span's *end* time:

    fits(start, end)  ⇔  end − start ≤ w + 8 · ulp(max(1, |w|, |end|))

The allowance depends on the end alone, so a matcher can compute it for each arriving event (the limit
of every span ending there) and a batch for each end at once. The first and last times a span's window
reaches (``earliest_time``, ``latest_time``) are found by this very test, float by float, so a bisection
or a key comparison at them and a pairwise test never disagree.

>>> 0.042 - 0.022 <= 0.02, fits_time(0.02, 0.022, 0.042)
(False, True)
"""

from __future__ import annotations

import bisect
import math

import numpy as np

ULPS = 8  # the allowance, in units in the last place of the span's scale


def time_limit(w: float, end: float) -> float:
    """The largest ``end − start`` a time window of ``w`` seconds admits for a span ending at ``end``."""
    return w + ULPS * math.ulp(max(1.0, abs(w), abs(end)))


class TimeLimit:
    """``time_limit(w, t)`` for the times of a stream, found once per binade of |t| (``math.ulp`` is
    constant over one, and below max(w, 1)): ``limit`` holds the value for the latest ``at(t)``."""

    def __init__(self, w: float):
        self.w, self.floor = w, max(w, 1.0)
        self.low, self.high, self.limit = 1.0, 0.0, math.inf  # (none yet)

    def at(self, t: float) -> float:
        scale = t if t > 0.0 else -t
        if not self.low <= scale < self.high:
            at = scale if scale > self.floor else self.floor
            self.limit = time_limit(self.w, at)
            _, exponent = math.frexp(at)  # at = mantissa · 2**exponent, 0.5 <= mantissa < 1
            self.low = 0.0 if at == self.floor else math.ldexp(0.5, exponent)
            self.high = math.ldexp(1.0, exponent)
        return self.limit


def time_limits(w: float, ends: np.ndarray) -> np.ndarray:
    """``time_limit`` for each of ``ends`` (``np.spacing`` is ``math.ulp`` of the positive scale)."""
    return w + ULPS * np.spacing(np.maximum(np.maximum(np.abs(ends), abs(w)), 1.0))


def fits_time(w: float, start: float, end: float) -> bool:
    """Whether events at ``start`` and ``end`` (``start`` ≤ ``end``) fit a time window of ``w`` seconds."""
    return end - start <= time_limit(w, end)


def earliest_time(w: float, end: float) -> float:
    """The smallest time t with ``fits_time(w, t, end)``: where the window of a span ending at ``end``
    begins, exactly (a key or a bisection at it decides as the test does)."""
    margin = time_limit(w, end) - w
    fit, miss = end - w, end - w - 2 * margin
    if not fits_time(w, fit, end):
        fit = end
    if fits_time(w, miss, end):
        miss = end - 2 * time_limit(w, end)
    return _bisect(lambda t: fits_time(w, t, end), fit, miss)


def latest_time(w: float, start: float) -> float:
    """The largest time t with ``fits_time(w, start, t)``: where the window of a span beginning at
    ``start`` ends."""
    margin = time_limit(w, abs(start) + abs(w)) - w
    fit, miss = start + w, start + w + 2 * margin
    if not fits_time(w, start, fit):
        fit = start
    if fits_time(w, start, miss):
        miss = start + 2 * time_limit(w, abs(start) + 2 * abs(w))
    return _bisect(lambda t: fits_time(w, start, t), fit, miss)


def _bisect(fits, fit: float, miss: float) -> float:
    """The last float from ``fit`` towards ``miss`` where ``fits`` holds (it holds at ``fit``, not at
    ``miss``, and changes once between them)."""
    while True:
        mid = fit + (miss - fit) / 2
        if mid == fit or mid == miss:
            return fit
        if fits(mid):
            fit = mid
        else:
            miss = mid


def earliest_times(w: float, ends: np.ndarray) -> np.ndarray:
    """``earliest_time`` for each of ``ends`` at once."""
    ends = np.asarray(ends, np.float64)
    limits = time_limits(w, ends)
    fit, miss = ends - w, ends - w - 2 * (limits - w)
    fit = np.where(ends - fit <= limits, fit, ends)
    miss = np.where(ends - miss <= limits, ends - 2 * limits, miss)
    return _bisect_all(lambda t, at: ends[at] - t <= limits[at], fit, miss)


def latest_times(w: float, starts: np.ndarray) -> np.ndarray:
    """``latest_time`` for each of ``starts`` at once."""
    starts = np.asarray(starts, np.float64)
    margins = time_limits(w, np.abs(starts) + abs(w)) - w
    fit, miss = starts + w, starts + w + 2 * margins
    fit = np.where(fit - starts <= time_limits(w, fit), fit, starts)
    far = starts + 2 * time_limits(w, np.abs(starts) + 2 * abs(w))
    miss = np.where(miss - starts <= time_limits(w, miss), far, miss)
    return _bisect_all(lambda t, at: t - starts[at] <= time_limits(w, t), fit, miss)


def _bisect_all(fits, fit: np.ndarray, miss: np.ndarray) -> np.ndarray:
    """``_bisect`` for each pair at once; ``fits(t, at)`` tests times ``t`` of the pairs ``at``."""
    at = np.arange(len(fit))
    while len(at):
        mid = fit[at] + (miss[at] - fit[at]) / 2
        going = (mid != fit[at]) & (mid != miss[at])
        at, mid = at[going], mid[going]
        holds = fits(mid, at)
        fit[at[holds]] = mid[holds]
        miss[at[~holds]] = mid[~holds]
    return fit


def first_fitting(times, end: float, w: float) -> int:
    """The smallest index i of the sorted ``times`` (a list or an array) with ``fits_time(w, times[i],
    end)``."""
    return bisect.bisect_left(times, earliest_time(w, end))


def first_fitting_all(times: np.ndarray, ends: np.ndarray, w: float) -> np.ndarray:
    """``first_fitting`` for each of ``ends`` at once."""
    return np.searchsorted(times, earliest_times(w, ends), "left")


def past_fitting_all(times: np.ndarray, starts: np.ndarray, w: float) -> np.ndarray:
    """For each of ``starts``, one past the largest index j of the sorted ``times`` with ``fits_time(w, start,
    times[j])``."""
    return np.searchsorted(times, latest_times(w, starts), "right")
