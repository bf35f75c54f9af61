"""Shared fixtures for the widget tests: the farm-sensor stream of [CEL] §2 (Figure 1)."""

import pytest


def farm_stream(first_type: str = "T") -> list:
    """[CEL] §2, Figure 1: three farm sensors; the type of position 0 is not recoverable (T or H)."""
    types = [first_type, "T", "H", "H", "T", "T", "T", "H", "H"]
    ids = [2, 0, 0, 1, 1, 0, 1, 1, 0]
    values = [25, 45, 20, 25, 40, 42, 25, 70, 18]
    return [
        {"type": t, "ts": i, "id": n, ("tmp" if t == "T" else "hum"): v}
        for i, (t, n, v) in enumerate(zip(types, ids, values))
    ]


@pytest.fixture
def farm():
    return farm_stream()


@pytest.fixture(params=["T", "H"])
def farm_either(request):
    """Both readings of Figure 1 (position 0 a T or an H): every paper output must be the same."""
    return farm_stream(request.param)


def click_point(plot, curve: int, index: int) -> None:
    """Click point ``index`` of trace ``curve`` of a ``PlotlyView`` as the page does: the message its front end
    sends on plotly_click, built from the figure the view was sent."""
    trace = plot.figure["data"][curve]
    customdata = trace.get("customdata")
    plot._handle_custom_msg(
        {
            "event": "click",
            "points": [
                {
                    "curve": curve,
                    "index": index,
                    "customdata": customdata[index] if customdata is not None else None,
                    "trace": trace.get("name", ""),
                }
            ],
        },
        [],
    )


@pytest.fixture
def click():
    """``click(plot, curve, index)``: a click on a figure's point, as the browser reports it."""
    return click_point
