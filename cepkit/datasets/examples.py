"""The example streams of the digests (``/work/shared/digests``), as pandas DataFrames: column ``type``,
column ``ts`` and one column per attribute, rows in arrival order."""
from __future__ import annotations

import pandas as pd


def cel_fire_sensors(position0: str = "T") -> pd.DataFrame:
    """The running stream S of CEL (digest 004 §3, Figure 1): three farm sensors (``id`` 0, 1, 2), T events
    with a temperature ``tmp`` (°C), H events with a relative humidity ``hum`` (%); ts = position.

    The type of position 0 is lost in the seed (its reading never matters: id 2 fails every id filter),
    so ``position0`` chooses it: "T" (its value is then ``tmp``) or "H" (``hum``).

    >>> cel_fire_sensors()["type"].str.cat()
    'TTHHTTTHH'
    """
    if position0 not in ("T", "H"):
        raise ValueError(f"position0 is 'T' or 'H', not {position0!r}")
    types = [position0, "T", "H", "H", "T", "T", "T", "H", "H"]
    ids = [2, 0, 0, 1, 1, 0, 1, 1, 0]
    values = [25, 45, 20, 25, 40, 42, 25, 70, 18]
    return pd.DataFrame({
        "type": types, "ts": range(len(types)), "id": ids,
        "tmp": pd.array([v if t == "T" else None for t, v in zip(types, values)], dtype="Int64"),
        "hum": pd.array([v if t == "H" else None for t, v in zip(types, values)], dtype="Int64"),
    })
