"""Streams written as [LIU] writes them: ``"a3 c5 b6"`` is an A at ts 3, a C at ts 5, a B at ts 6, arriving in
that order; ``POG<C,10>`` is a punctuation promising no more C with ts ≤ 10 ([LIU] §3.6.1)."""

import re

_POG = re.compile(r"POG<(\w+),(\d+)>")


def arrivals(text: str) -> list:
    events = []
    for label in text.split():
        pog = _POG.fullmatch(label)
        if pog:
            events.append({"type": "PUNCTUATION", "of": pog.group(1), "ts": int(pog.group(2))})
        else:
            events.append({"type": label[0].upper(), "ts": int(label[1:])})
    return events


def labelled(matches, text: str) -> set:
    """Each match (a tuple of positions) as its events' labels in ts order (``("a3", "b6", "d10")``)."""
    names = text.split()
    return {tuple(names[p] for p in sorted(positions, key=lambda p: (int(names[p][1:]), p))) for positions in matches}
