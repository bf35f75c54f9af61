import pytest

import cepkit


def _events(spec: str, **attrs):
    """``"A0 X1 B2"`` -> event dicts (type, ts from the digits); ``attrs`` gives per-event attribute lists."""
    out = []
    for k, token in enumerate(spec.split()):
        head = token.rstrip("0123456789")
        event = {"type": head, "ts": int(token[len(head) :])}
        event.update({name: values[k] for name, values in attrs.items()})
        out.append(event)
    return out


@pytest.fixture
def events():
    return _events


@pytest.fixture
def reference():
    """``reference(query, events, **kw)`` -> positions() of the reference engine."""

    def run(query, events, **kwargs):
        return cepkit.match(query, events, engine="reference", **kwargs).positions()

    return run
