"""What the ses and rcep engines' per-event steps (``ses/step.py``, ``rcep/step.py``: ``Matcher.pusher``)
share: the kept events' key columns written and grown, the kept events back as ``Event`` objects when the
step hands them to its matcher, a kernel's rows as ``Match`` objects, and the matcher's push of an event
the step does not take."""

from __future__ import annotations

import numpy as np

from ..runtime.event_record import Event, values_event
from ..runtime.match_record import Match, output_order


def write_keys(kval: np.ndarray, kok: np.ndarray, n: int, keys) -> None:
    """Column ``n`` of the key rows: each key's value, or not valid where it is None (missing)."""
    for k, value in enumerate(keys):
        if value is None:
            kok[k, n] = False
        else:
            kval[k, n], kok[k, n] = value, True


def widened(array: np.ndarray, n: int, size: int) -> np.ndarray:
    """A 2-D ``array``'s first ``n`` columns in one of ``size`` columns."""
    wider = np.zeros((array.shape[0], size), dtype=array.dtype)
    wider[:, :n] = array[:, :n]
    return wider


def kept_events(columns: tuple, rows: list) -> list:
    """The ``Event`` of each kept row: an Event (taken over from the matcher) or the (type, time, values,
    position) of a step's event."""
    return [row if isinstance(row, Event) else values_event(columns, row[0], row[1], row[2], row[3]) for row in rows]


def rows_as_matches(offsets: list, positions: list, ids: list, names: list, kleene: list, plain: bool, emitted: int):
    """A ``Match`` per kernel row (``positions[offsets[i]:offsets[i + 1]]``, ascending, with the variable
    or slot id of each), emitted at ``emitted``: ``names[id]`` its variable (None: not shown), bound to a
    tuple where ``kleene[id]``; ``plain``: every id named and single."""
    made = Match.made
    found = []
    for a, b in zip(offsets, offsets[1:]):
        kept = tuple(positions[a:b])
        if plain:
            found.append(made(kept, {names[v]: p for v, p in zip(ids[a:b], kept)}, emitted))
            continue
        bindings: dict = {}
        for v, p in zip(ids[a:b], kept):
            name = names[v]
            if name is not None:
                bindings[name] = bindings.get(name, ()) + (p,) if kleene[v] else p
        found.append(made(kept, bindings, emitted))
    return found


def pushed(matcher, columns: tuple, type_: str, time: float, values, position: int) -> list:
    """``matcher.push`` of the event (one a step does not take), in output order."""
    found = matcher.push(values_event(columns, type_, time, values, position))
    return output_order(found) if found else found
