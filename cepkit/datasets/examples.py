"""The example streams of the papers cepkit implements (docs/references.md), as pandas DataFrames: column
``type``, column ``ts`` and one column per attribute, rows in arrival order. Each function cites the figure
or example its stream comes from; the tests in ``tests/semantics`` run the papers' worked examples on them.

Where a paper names events (``e1``, ``r1``, ``dh10``), the name is kept in a column ``e`` so a match's
positions can be read back as the paper's events.
"""

from __future__ import annotations

import re

import pandas as pd

from ..lang.hierarchy import Hierarchy


def _labelled(spec: str, **columns) -> pd.DataFrame:
    """Events written as the papers do, ``"Recycle1 Washing2"``: type then ts; extra columns per event."""
    rows = []
    for token in spec.split():
        match = re.fullmatch(r"([A-Za-z_]+)(\d+)", token)
        rows.append({"type": match.group(1), "ts": int(match.group(2)), "e": token})
    frame = pd.DataFrame(rows)
    for name, values in columns.items():
        frame[name] = values
    return frame


# ----------------------------------------------------------------------------- [CEL] (CEL)
def cel_fire_sensors(position0: str = "T") -> pd.DataFrame:
    """The running stream S of CEL ([CEL] §2, Figure 1): three farm sensors (``id`` 0, 1, 2), T events
    with a temperature ``tmp`` (°C), H events with a relative humidity ``hum`` (%); ts = position.

    The type of position 0 is not legible in the paper (its reading never matters: id 2 fails every id filter),
    so ``position0`` chooses it: "T" (its value is then ``tmp``) or "H" (``hum``).

    >>> cel_fire_sensors()["type"].str.cat()
    'TTHHTTTHH'
    """
    if position0 not in ("T", "H"):
        raise ValueError(f"position0 is 'T' or 'H', not {position0!r}")
    types = [position0, "T", "H", "H", "T", "T", "T", "H", "H"]
    ids = [2, 0, 0, 1, 1, 0, 1, 1, 0]
    values = [25, 45, 20, 25, 40, 42, 25, 70, 18]
    return pd.DataFrame(
        {
            "type": types,
            "ts": range(len(types)),
            "id": ids,
            "tmp": pd.array([v if t == "T" else None for t, v in zip(types, values)], dtype="Int64"),
            "hum": pd.array([v if t == "H" else None for t, v in zip(types, values)], dtype="Int64"),
        }
    )


# ----------------------------------------------------------------------------- [SES] (SES)
_CHEMO = {  # chapter -> rows (e, PID, L, V, U, day of July)
    3: [
        ("e1", 1, "C", 1672.5, "mg", 3),
        ("e2", 1, "B", 7100, "1/µl", 4),
        ("e3", 1, "P", 111.5, "mg", 5),
        ("e4", 2, "B", 10100, "1/µl", 6),
        ("e5", 1, "D", 84, "mg/l", 7),
        ("e6", 2, "P", 88, "mg", 8),
        ("e7", 2, "D", 84, "mg/l", 9),
        ("e8", 2, "C", 1320, "mg", 10),
        ("e9", 2, "P", 98, "mg", 11),
        ("e10", 1, "P", 116.5, "mg", 12),
        ("e11", 2, "P", 88, "mg", 15),
        ("e12", 1, "B", 3400, "1/µl", 17),
        ("e13", 2, "B", 4000, "1/µl", 18),
        ("e14", 2, "B", 4900, "1/µl", 19),
        ("e15", 1, "B", 3000, "1/µl", 22),
    ],
    1: [
        ("e1", 1, "C", 1672.5, "mg", 3),
        ("e2", 1, "B", 7100, "1/µl", 4),
        ("e3", 1, "P", 111.5, "mg", 5),
        ("e4", 2, "B", 10100, "1/µl", 6),
        ("e5", 2, "P", 88, "mg", 8),
        ("e6", 2, "C", 1320, "mg", 10),
        ("e7", 2, "P", 98, "mg", 11),
        ("e8", 1, "B", 3400, "1/µl", 17),
        ("e9", 2, "B", 4000, "1/µl", 18),
        ("e10", 2, "B", 4900, "1/µl", 19),
    ],
}


def ses_chemo(chapter: int = 3) -> pd.DataFrame:
    """The chemotherapy stream of SES ([SES] Figs 1.4(b), 3.1): C (Cyclophosphamide), P (Prednisone), D (Doxorubicin)
    and B (blood count) events of two patients, with ``PID``, the dose or count ``V`` and its unit ``U``;
    ``L`` repeats the type as the thesis writes it (``c.L = 'C'``). ts is a July date (year arbitrary).

    ``chapter=3``: Fig 3.1 = 4.1 = 5.1, 15 events ([SES] Fig. 3.1); ``chapter=1``: Fig 1.4(b), 10 events,
    no D, another numbering ([SES] Fig. 1.4(b)).

    >>> ses_chemo(1)["e"].tolist()[-1], len(ses_chemo(3))
    ('e10', 15)
    """
    if chapter not in _CHEMO:
        raise ValueError(f"chapter is 3 (Fig 3.1) or 1 (Fig 1.4(b)), not {chapter!r}")
    rows = _CHEMO[chapter]
    return pd.DataFrame(
        {
            "type": [r[2] for r in rows],
            "ts": [pd.Timestamp(2013, 7, r[5]) for r in rows],
            "e": [r[0] for r in rows],
            "PID": [r[1] for r in rows],
            "L": [r[2] for r in rows],
            "V": [float(r[3]) for r in rows],
            "U": [r[4] for r in rows],
        }
    )


_STOCKS = {  # chapter -> rows (e, S, P, V, "h:mm:ms")
    1: [
        ("e1", "GOOG", 612, 100, "9:32:344"),
        ("e2", "IBM", 502, 200, "9:32:357"),
        ("e3", "IBM", 505, 100, "9:32:368"),
        ("e4", "GOOG", 615, 400, "9:32:380"),
        ("e5", "IBM", 511, 300, "9:32:396"),
        ("e6", "GOOG", 621, 200, "9:32:401"),
    ],
    6: [
        ("e1", "GOOG", 615, 100, "9:32:344"),
        ("e2", "IBM", 204, 200, "9:32:357"),
        ("e3", "GOOG", 610, 400, "9:32:368"),
        ("e4", "GOOG", 618, 100, "9:32:380"),
        ("e5", "GOOG", 620, 300, "9:32:396"),
        ("e6", "GOOG", 628, 200, "9:32:401"),
        ("e7", "GOOG", 628, 700, "9:32:421"),
        ("e8", "GOOG", 632, 100, "9:32:450"),
        ("e71", "GOOG", 629, 200, "14:15:555"),
        ("e72", "GOOG", 645, 300, "14:15:572"),
        ("e73", "MSFT", 28, 100, "14:15:581"),
        ("e74", "GOOG", 632, 100, "14:15:592"),
        ("e75", "GOOG", 635, 700, "14:15:605"),
        ("e76", "GOOG", 638, 100, "14:15:613"),
        ("e77", "GOOG", 642, 600, "14:15:628"),
        ("e78", "GOOG", 635, 500, "14:15:640"),
    ],
}


def ses_stocks(chapter: int = 6) -> pd.DataFrame:
    """Stock trades of SES ([SES] Figs 1.3, 6.1(a)): type and ``S`` the symbol, price ``P``, volume ``V``. The thesis's
    "9:32:344" is read as 344 ms after 9:32 (the date is arbitrary).

    ``chapter=1``: Fig 1.3, six GOOG/IBM trades ([SES] Fig. 1.3); ``chapter=6``: Fig 6.1(a), the 16
    events the thesis prints, e9–e70 being elided ([SES] Fig. 6.1(a)).

    >>> ses_stocks(6)["ts"].iloc[0]
    Timestamp('2013-07-01 09:32:00.344000')
    """
    if chapter not in _STOCKS:
        raise ValueError(f"chapter is 1 (Fig 1.3) or 6 (Fig 6.1(a)), not {chapter!r}")
    rows = _STOCKS[chapter]

    def time(text):
        hours, minutes, millis = (int(x) for x in text.split(":"))
        return pd.Timestamp(2013, 7, 1, hours, minutes) + pd.Timedelta(milliseconds=millis)

    return pd.DataFrame(
        {
            "type": [r[1] for r in rows],
            "ts": [time(r[4]) for r in rows],
            "e": [r[0] for r in rows],
            "S": [r[1] for r in rows],
            "P": [r[2] for r in rows],
            "V": [r[3] for r in rows],
        }
    )


# ----------------------------------------------------------------------------- [LIU] ch. 5 (NEEL)
_HOSPITAL = {  # name -> (where in [LIU] ch. 5, events as "Type<ts>")
    "ex17": ("Ex 17", "Recycle1 Washing2 Washing3"),
    "ex18": ("Ex 18", "Washing1 Recycle2 Washing3"),
    "ex19": ("Ex 19", "Checking1 Washing2 Recycle3"),
    "q1_accept": ("Q1 (Fig 5.1), accepted", "Recycle1 Washing2 Operating3"),
    "q1_reject": ("Q1 (Fig 5.1), rejected", "Recycle1 Washing2 Sharpening3 Disinfection4 Checking5 Operating6"),
    "q1_accept_no_disinfection": (
        "Q1 (Fig 5.1), accepted without a disinfection",
        "Recycle1 Washing2 Sharpening3 Checking4 Operating5",
    ),
    "q2_reject": ("Q2, [LIU] §5.2.2, rejected", "Recycle1 Washing2 Sharpening3 Checking4 Operating5"),
    "q2_accept": ("Q2, [LIU] §5.2.2, accepted", "Recycle1 Washing2 Sharpening3 Disinfection4 Checking5 Operating6"),
    "fig55_errata": (
        "Ex 29 and Fig 5.5, docs/references.md E7",
        "Recycle1 Washing2 Checking3 Sharpening4 Disinfection5 Checking6 Operating7",
    ),
    "ex21": ("Ex 21", "Recycle1 Sharpening2 Checking3 Sharpening4 Disinfection5 Checking6 Operating7"),
}


def neel_hospital(name: str) -> pd.DataFrame:
    """The surgical-tool streams of NEEL ([LIU] ch. 5: §5.1.2, §5.2, §5.3): Recycle, Washing,
    Sharpening, Disinfection, Checking and Operating events of one tool, ts as in the thesis.

    ``name`` is one of: ``ex17``, ``ex18``, ``ex19`` (Ex 17-19), ``q1_accept``, ``q1_reject``,
    ``q1_accept_no_disinfection`` (Q1 of Fig 5.1), ``q2_reject``, ``q2_accept`` (Q2 of [LIU] §5.2.2),
    ``fig55_errata`` (docs/references.md E7), ``ex21`` (Ex 21); ``ex20`` (Ex 20: Checking events with
    ``insType``, a Sharpening with ``insID``); ``rq1`` (the stream of [CSV] Fig 2: Recycle, Wash, Sharpen,
    Disinfect, Operate with ``id`` and ``roomID``).

    >>> neel_hospital("ex17")["e"].tolist()
    ['Recycle1', 'Washing2', 'Washing3']
    """
    if name == "ex20":
        return _labelled(
            "Checking1 Checking2 Checking6 Sharpening8",
            insType=["forceps", "scalpels", "scalpels", None],
            insID=pd.array([None, None, None, 15], dtype="Int64"),
        )
    if name == "rq1":
        frame = _labelled("Recycle1 Wash2 Sharpen3 Disinfect10 Operate11 Sharpen13 Operate20")
        frame["id"], frame["roomID"] = 7, 1
        return frame
    if name not in _HOSPITAL:
        raise ValueError(f"unknown NEEL stream {name!r}; choose one of {', '.join([*_HOSPITAL, 'ex20', 'rq1'])}")
    return _labelled(_HOSPITAL[name][1])


def neel_predicate_scoping() -> pd.DataFrame:
    """The predicate scoping stream of NEEL ([LIU] §7.2.4): a1(f=1), b2(f=2), c3(f=3) and
    c0(f=0), c0 arriving last (ts 4).

    >>> neel_predicate_scoping()["f"].tolist()
    [1, 2, 3, 0]
    """
    frame = pd.DataFrame({"type": ["A", "B", "C", "C"], "ts": [1, 2, 3, 4], "f": [1, 2, 3, 0]})
    frame["e"] = ["a1", "b2", "c3", "c0"]
    return frame


# ----------------------------------------------------------------------------- [LIU] (E-Cube, out of order)
_ECUBE = {  # name -> events as "Type<ts>" in arrival order (PUNCTUATION<ts>_<of> is a POG)
    "we1": "G1 A5 A6 T15",
    "we6": "DHospital10 AHospital12 OHospital15 DHospital16 AShelter18 TShelter33 OShelter38",
    "we7": "G1 DBusStation2 A3 T4 G5 DHospital6 A7 T8 G9 A10 T11",
    "we8": "G1 A5 A6 T8 D10 T15",
    "we9": "A3 C5 B6 D10 D17 PUNCTUATION10_C D8",
    "we10": "A3 C5 B6 A7 D8 D10 B11 F17 B4",
    "we13": "A3 C5 A7 B11 C9",
}


def ecube_example(name: str) -> pd.DataFrame:
    """The streams of [LIU]'s worked examples (ch. 2-4), rows in *arrival* order: ``we1`` (Fig 2.1), ``we6``
    (Ex 13/16, city hierarchy: use ``ecube_cities()``), ``we7`` (Ex 14), ``we8`` (Ex 15), and the
    out-of-order ones ``we9`` (Fig 3.1(c), with the punctuation POG<C,10>), ``we10`` (Fig 3.1(d), b4 late)
    and ``we13`` (Fig 3.1(a), c9 late). A punctuation has type PUNCTUATION and names its type in ``of``.

    >>> ecube_example("we13")["ts"].tolist()
    [3, 5, 7, 11, 9]
    """
    if name not in _ECUBE:
        raise ValueError(f"unknown example {name!r}; choose one of {', '.join(_ECUBE)}")
    rows = []
    for token in _ECUBE[name].split():
        head, _, of = token.partition("_")
        match = re.fullmatch(r"([A-Za-z]+)(\d+)", head)
        rows.append({"type": match.group(1), "ts": int(match.group(2)), "e": token, "of": of or None})
    frame = pd.DataFrame(rows)
    return frame if frame["of"].notna().any() else frame.drop(columns="of")


def ecube_cities() -> Hierarchy:
    """The event concept hierarchy of [LIU] Fig 4.2 (the figure is described, not printed, so this is reconstructed from Examples 9-16): USA > {TX, OK};
    TX > {D (Dallas), A (Austin), G}; OK > {T (Tulsa), O (the other OK city)}; each city > its bus station,
    hospital and shelter."""
    return Hierarchy(
        {
            "USA": ["TX", "OK"],
            "TX": ["D", "A", "G"],
            "OK": ["T", "O"],
            "D": ["DBusStation", "DHospital", "DShelter"],
            "T": ["TBusStation", "THospital", "TShelter"],
            "A": ["AHospital", "AShelter"],
            "O": ["OHospital", "OShelter"],
        }
    )


# ----------------------------------------------------------------------------- [RCEP] (RCEP)
_WATER = (
    "0:r1/200/2 1:r2/270/3 3:r1/210/3 4:r1/250/3 5:r1/260/2 6:r1/300/4 7:r1/340/1 8:r1/100/3 9:r1/150/3 "
    "10:r1/100/3 11:r1/210/3 12:r1/250/3 13:r1/260/3 14:r1/300/2 15:r1/340/1 16:r1/200/3 17:r1/250/3 "
    "18:r1/401/3 19:r1/400/3 20:r1/500/1"
)


def rcep_water() -> pd.DataFrame:
    """The water stream of RCEP ([RCEP] Fig. 2.4): ``Water`` events with ``region``, volume ``vol``
    and pressure ``pres``; ts as in the figure (there is no event at ts 2).

    >>> rcep_water().loc[1, ["e", "region", "vol", "pres"]].astype(str).tolist()
    ['e1', 'r2', '270', '3']
    """
    rows = []
    for token in _WATER.split():
        ts, rest = token.split(":")
        region, vol, pres = rest.split("/")
        rows.append(
            {"type": "Water", "ts": int(ts), "e": f"e{ts}", "region": region, "vol": int(vol), "pres": int(pres)}
        )
    return pd.DataFrame(rows)
