"""Live: matches drawn as a stream's batches arrive (``LiveView``), fed by a local ``cepkit.Matcher`` over an
iterator of events or DataFrame batches (``LiveView.from_batches``), or by a Structured Streaming query
(``LiveView.from_spark``: ``cepkit.spark.match_stream`` into the widget through ``foreachBatch`` on a
classic session, through memory sinks read from the kernel on Spark Connect).

What it shows, updated after every batch: a status line (batches, events, matches, events/s over the last
batch and overall, the watermark, late and dropped events), a Stop button, a timeline (``MatchTimeline`` in
live mode) and a grid of the latest matches, newest first.

Memory stays flat on an endless stream: the view keeps the last ``last`` matches, a uniform sample
(reservoir) of ``sample`` earlier ones, and the events those use plus the latest ``context`` events; every
other event and match is let go. The timeline's title and the grid's caption say so. The local Matcher runs
with ``keep=False`` (it keeps what its window needs, nothing more).

``replay(events, every=..., speed=...)`` cuts a finite DataFrame (the flights year, say) into batches of
``every`` of stream time, arriving ``speed`` times faster than they happened: a stream to watch.
"""

from __future__ import annotations

import html
import os
import random
import shutil
import tempfile
import threading
import time
from collections import deque
from typing import Iterable, Iterator, Optional

import ipywidgets as widgets
import numpy as np
import pandas as pd

import cepkit

from .figures import TABLE_CSS, format_value, full_width, plural
from .on_spark import spark_matches, variables_of
from .timeline import MatchTimeline, check_time_zone

LAST = 30  # the latest matches kept and drawn
SAMPLE = 20  # a uniform sample of the earlier matches, kept and drawn
CONTEXT = 300  # the latest events kept (drawn as the stream's recent activity)
GRID_ROWS = 10  # the latest matches listed in the grid


def replay(
    events: pd.DataFrame, every="1h", speed: Optional[float] = None, batches: Optional[int] = None
) -> Iterator[pd.DataFrame]:
    """``events`` (in ts order, datetime or numeric ts) as consecutive batches of ``every`` of stream time
    (a pandas offset such as "6h" for datetimes, a number of seconds otherwise), each ``every / speed`` after
    the one before (no wait without ``speed``); at most ``batches`` of them. Empty spans yield no batch."""
    ts = events["ts"]
    if pd.api.types.is_datetime64_any_dtype(ts):
        step = pd.Timedelta(every)
        keys = ((ts - ts.iloc[0]) // step).to_numpy()
        seconds = step.total_seconds()
    else:
        seconds = float(every)
        keys = ((ts - ts.iloc[0]) // seconds).to_numpy()
    starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
    ends = np.r_[starts[1:], len(events)]
    for n, (a, b) in enumerate(zip(starts, ends)):
        if batches is not None and n >= batches:
            return
        if n and speed:
            time.sleep(seconds * (keys[a] - keys[starts[n - 1]]) / speed)
        yield events.iloc[a:b]


class LiveView(widgets.VBox):
    """The matches of a stream as its batches arrive, in a bounded view with a Stop button.

    Build it with ``from_batches`` (a local Matcher) or ``from_spark`` (Structured Streaming); a feed calls
    ``add(events, matches, ...)`` per batch. ``run()`` feeds every batch in the calling thread (a notebook
    cell that shows the view first sees it grow), ``start()`` in a background thread; Stop ends either.

    Parameters
    ----------
    last, sample, context : int
        The bounded view: the latest matches, a uniform sample of the earlier ones, the latest events.
    tz : str, optional
        Time zone of the timeline and the grid (UTC by default).
    """

    def __init__(
        self,
        *,
        last: int = LAST,
        sample: int = SAMPLE,
        context: int = CONTEXT,
        tz: Optional[str] = None,
        title: str = "live",
    ):
        self.last_n, self.sample_n, self.context_n = last, sample, context
        self.tz = check_time_zone(tz)
        self.heading = title
        self.events = pd.DataFrame()  # kept events, indexed by their position in the stream
        self.latest: deque = deque(maxlen=last)  # (match number, Match with stream positions)
        self.earlier: list = []  # reservoir sample of the matches that left ``latest``
        self.batches = self.event_count = self.match_count = 0
        self.late = self.dropped = 0
        self.watermark = None
        self.horizon: Optional[float] = None  # a Spark feed's window in s (0: EVENTS): see ``_forget``
        self.max_ts = None
        self.rate = self.last_rate = 0.0
        self.stopped = self.finished = False
        self.on_stop = []  # feeds' hooks: called once when Stop is pressed
        self.queries = []  # a Spark feed's streaming queries, stopped by Stop after the hooks
        self._random = random.Random(0)
        self._started: Optional[float] = None
        self._thread: Optional[threading.Thread] = None
        self._feed: Optional[Iterator] = None
        self._poll = None  # a Spark Connect feed's read of its memory sinks
        self._own_checkpoint: Optional[str] = None  # a Spark feed's temporary checkpoints, removed by Stop
        self.failed = ""  # why a feed stopped by itself
        self.stats = widgets.HTML()
        self.stats.add_class("cepkit-live-stats")
        self.stop_button = widgets.Button(description="Stop", icon="stop", button_style="danger")
        self.stop_button.on_click(lambda _: self.stop())
        self.timeline: Optional[MatchTimeline] = None
        self.timeline_box = widgets.VBox(layout=full_width())
        self.grid = widgets.HTML()
        self.grid.add_class("cepkit-live-grid")
        super().__init__(
            [
                widgets.HTML(TABLE_CSS),
                widgets.HBox([self.stop_button, self.stats], layout=widgets.Layout(align_items="center")),
                self.timeline_box,
                self.grid,
            ],
            layout=full_width(),
        )
        self.add_class("cepkit-live")
        self._show_stats()

    # ------------------------------------------------------------------ feeds
    @classmethod
    def from_batches(
        cls,
        query,
        batches: Iterable,
        engine: str = "auto",
        delay: float = 0,
        hierarchy=None,
        view: Optional[dict] = None,
        **options,
    ) -> "LiveView":
        """A view fed by a local ``cepkit.Matcher(keep=False)`` over ``batches``: DataFrames (or lists of
        event dicts). An event more than ``delay`` seconds older than the latest ts seen is dropped (counted),
        one within it is late (counted, and matched: the Matcher then runs with ``disorder="kslack"``)."""
        live = cls(**(view or {}))
        if delay:
            options = {"disorder": "kslack", "k": delay, **options}
        matcher = cepkit.Matcher(query, engine, hierarchy=hierarchy, keep=False, **options)
        live.heading = f"live · {cepkit.parse(query, hierarchy).text.splitlines()[0][:80]} · engine {matcher.engine}"

        def feed():
            for batch in batches:
                frame = batch if isinstance(batch, pd.DataFrame) else pd.DataFrame(list(batch))
                frame = frame.reset_index(drop=True)
                kept, late, dropped = live._judge(frame, delay)
                started = time.perf_counter()
                found = list(matcher.extend(kept))
                first = live.event_count  # the Matcher numbers the events it took, from 0
                live.add(
                    kept.set_axis(range(first, first + len(kept))),
                    found,
                    late=late,
                    dropped=dropped,
                    seconds=time.perf_counter() - started,
                )
                yield
            if not live.stopped:
                live.add(pd.DataFrame(columns=["type", "ts"]), list(matcher.close()))

        live._feed = feed()
        return live

    @classmethod
    def from_spark(
        cls,
        query,
        events,
        engine: str = "auto",
        position: str = "position",
        delay=None,
        view: Optional[dict] = None,
        poll: float = 1.0,
        checkpoint: Optional[str] = None,
        supervise: Optional[dict] = None,
        **options,
    ) -> "LiveView":
        """A view fed by Structured Streaming: ``cepkit.spark.match_stream(query, events, ...)`` and the
        events themselves. On a classic session each goes into the view through ``foreachBatch`` (the driver
        runs it, in this process), started by ``cepkit.spark.supervise`` (options: ``supervise``, such as
        ``{"stall_after": 600}``; ``{"stall_after": None}`` watches for no stall) with a checkpoint under
        ``checkpoint`` (by default a temporary folder of the view's, removed by Stop): a batch that stalls is
        restarted on it, each batch is added once (by batch id), and the status line counts the restarts.
        On Spark Connect, whose server runs ``foreachBatch`` in a Python process of its own that cannot
        reach this kernel's widgets, each goes into a memory sink, read by a thread of this kernel every
        ``poll`` seconds (``poll()`` reads it at once): the rows the sinks appended since the last read are
        the view's next batch (not supervised: Spark restarts no memory sink in append mode on a
        checkpoint). Both streaming queries start now; Stop (or ``stop()``) stops them."""
        import cepkit.spark

        live = cls(**(view or {}))
        parsed = cepkit.parse(query)
        live.horizon = (parsed.within.seconds if parsed.within is not None else None) or 0.0
        live.heading = f"live on Spark · {parsed.text.splitlines()[0][:80]}"
        found_stream = cepkit.spark.match_stream(query, events, engine, position=position, delay=delay, **options)
        variables = variables_of(found_stream.columns, parsed)
        if cepkit.spark.jobs.is_connect(events.sparkSession):
            return live._poll_memory_sinks(events, found_stream, variables, position, poll)
        lock = threading.Lock()
        pending: list = []
        done = {"events": -1, "matches": -1}  # the last batch id added: a batch run again is not added twice

        def on_events(batch, batch_id):
            if batch_id <= done["events"]:
                return
            frame = batch.toPandas()
            with lock:
                pending.append(frame.set_index(position).sort_index())
                done["events"] = batch_id
            live._check_queries()  # the matches query may have failed: this one still runs

        def on_matches(batch, batch_id):
            if batch_id <= done["matches"]:
                return
            rows = batch.toPandas()
            with lock:
                events_now = pd.concat(pending) if pending else pd.DataFrame()
                pending.clear()
                done["matches"] = batch_id
            live._add_spark_batch(events_now, rows, variables, matches_query.lastProgress)

        if checkpoint is None:
            checkpoint = live._own_checkpoint = tempfile.mkdtemp(prefix="cepkit-live-")

        def start(writer, name: str):
            return cepkit.spark.supervise(
                writer.option("checkpointLocation", os.path.join(checkpoint, name)),
                on_restart=lambda _: live._show_stats(),
                **(supervise or {}),
            )

        events_query = start(events.writeStream.foreachBatch(on_events), "events")
        live.queries.append(events_query)
        matches_query = start(found_stream.writeStream.outputMode("append").foreachBatch(on_matches), "matches")
        live.queries.append(matches_query)
        return live

    def _poll_memory_sinks(self, events, found_stream, variables: list, position: str, every: float) -> "LiveView":
        """Spark Connect: the events and the matches each into a memory sink (a table of the session), the
        rows appended since the last read fetched by ``poll()``, which a daemon thread calls every ``every``
        s until Stop. A memory sink appends each micro-batch's rows in order, so the rows after the ones read
        (``offset``) are the new ones; it keeps every row in the server's driver, so an endless stream's
        sinks grow there (this view stays bounded)."""
        spark = events.sparkSession
        names = {kind: f"cepkit_live_{kind}_{id(self):x}" for kind in ("events", "matches")}
        self.queries.extend(
            [
                events.writeStream.format("memory").queryName(names["events"]).start(),
                found_stream.writeStream.outputMode("append").format("memory").queryName(names["matches"]).start(),
            ]
        )
        read = {"events": 0, "matches": 0, "batch": None}
        lock = threading.Lock()

        def poll() -> bool:
            with lock:
                if self.stopped or self._check_queries():
                    return False
                progress = self.queries[1].lastProgress
                batch_id = progress.get("batchId") if progress else None
                new = {}
                for kind, name in names.items():
                    new[kind] = spark.table(name).offset(read[kind]).toPandas()
                    read[kind] += len(new[kind])
                if not len(new["events"]) and not len(new["matches"]) and batch_id == read["batch"]:
                    return False
                read["batch"] = batch_id
                events_now = new["events"].set_index(position).sort_index()
                self._add_spark_batch(events_now, new["matches"], variables, progress)
                return True

        stopping = threading.Event()

        def keep_polling():
            while not stopping.wait(every):  # a read every ``every`` s, the first after ``every`` s; Stop wakes it
                try:
                    poll()
                except Exception as error:  # noqa: BLE001 - a stopped session: said in the view, the thread ends
                    if not self.stopped:
                        self.failed = f"reading the memory sinks failed: {error}"
                        self._show_stats()
                    return

        self._poll = poll
        self.on_stop.append(stopping.set)
        self._thread = threading.Thread(target=keep_polling, name="LiveView.poll", daemon=True)
        self._thread.start()
        return self

    def _check_queries(self) -> bool:
        """Whether a streaming query of the feed has stopped with an error: then the view says which and why,
        and stops (the other query with it), instead of reading "running" over a feed that can no longer
        bring matches."""
        for kind, query in zip(("events", "matches"), self.queries):
            if self.stopped or query.isActive:
                continue
            error = query.exception()
            if error is not None:
                first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
                self.failed = f"the {kind} query failed: {first}"
                self.stop()
                return True
        return False

    def _add_spark_batch(self, events: pd.DataFrame, rows: pd.DataFrame, variables: list, progress) -> None:
        """One micro-batch of a Spark feed: its events (indexed by position), its match rows, the matches
        query's progress (watermark, rows dropped by it, rows per second)."""
        found = spark_matches(rows, variables)
        progress = progress or {}
        watermark = (progress.get("eventTime") or {}).get("watermark")
        if watermark is not None:  # Spark's text, in UTC: a time like the events' own
            watermark = pd.Timestamp(watermark).tz_convert("UTC").tz_localize(None)
            seen = events if len(events) else self.events
            if len(seen) and not pd.api.types.is_datetime64_any_dtype(seen["ts"]):
                watermark = watermark.timestamp()
        dropped = sum(op.get("numRowsDroppedByWatermark", 0) for op in progress.get("stateOperators", []))
        self.add(events, found, watermark=watermark, dropped=dropped, rate=progress.get("processedRowsPerSecond"))

    # ------------------------------------------------------------------ public
    def run(self, batches: Optional[int] = None) -> "LiveView":
        """Feed the batches in this thread, all of them or ``batches`` more (a local feed)."""
        if self._feed is None:
            raise ValueError("this view has no local feed to run: build it with LiveView.from_batches")
        for n, _ in enumerate(self._feed, start=1):
            if self.stopped or (batches is not None and n >= batches):
                break
        else:
            self.finished = True
            self._show_stats()
        return self

    def poll(self) -> bool:
        """A Spark Connect feed: read the memory sinks now (the rows since the last read, a batch of the view);
        whether there was anything new."""
        if self._poll is None:
            raise ValueError("this view does not poll: only LiveView.from_spark on Spark Connect does")
        return self._poll()

    def start(self) -> "LiveView":
        """Feed the batches in a background thread (a local feed); Stop ends it."""
        self._thread = threading.Thread(target=self.run, name="LiveView", daemon=True)
        self._thread.start()
        return self

    def wait(self, timeout: Optional[float] = None) -> None:
        if self._thread is not None:
            self._thread.join(timeout)

    def stop(self) -> None:
        """Stop feeding (the background thread ends after its batch; Spark's streaming queries stop)."""
        if self.stopped:
            return
        self.stopped = True
        self.stop_button.disabled = True
        self.stop_button.description = "Stopped"
        for hook in self.on_stop:
            hook()
        for query in self.queries:
            query.stop()
        if self._own_checkpoint is not None:
            shutil.rmtree(self._own_checkpoint, ignore_errors=True)
        self._show_stats()

    def add(
        self,
        events: pd.DataFrame,
        matches: list,
        watermark=None,
        late: int = 0,
        dropped: int = 0,
        seconds: Optional[float] = None,
        rate: Optional[float] = None,
    ) -> None:
        """One batch: its ``events`` (indexed by stream position) and the ``matches`` it completed (stream
        positions); the feed's watermark (else the latest ts), the batch's late and dropped events, and how
        long matching it took (or the feed's own events/s, ``rate``)."""
        now = time.perf_counter()
        self._started = self._started or now
        self.batches += 1
        self.event_count += len(events)
        self.late += late
        self.dropped += dropped
        if len(events):
            self.max_ts = events["ts"].max() if self.max_ts is None else max(self.max_ts, events["ts"].max())
            self.events = pd.concat([self.events, events]) if len(self.events) else events.copy()
        self.watermark = watermark if watermark is not None else self.max_ts
        if rate is not None:
            self.last_rate = float(rate)
        elif seconds:
            self.last_rate = len(events) / max(seconds, 1e-9)
        self.rate = self.event_count / max(now - self._started, 1e-9) if self.batches > 1 else self.last_rate
        for match in matches:
            if len(self.latest) == self.latest.maxlen:
                self._sample_out(self.latest[0])
            self.latest.append((self.match_count, match))
            self.match_count += 1
        self._forget()
        self._show_stats()
        self._draw()

    # ------------------------------------------------------------------ internals
    def _judge(self, frame: pd.DataFrame, delay: float) -> tuple:
        """(events kept, late ones, dropped ones): late arrive behind the latest ts seen, dropped by more
        than ``delay`` seconds (they would reach the Matcher out of its order)."""
        if not len(frame):
            return frame, 0, 0
        seconds = _seconds(frame["ts"])
        behind = np.maximum.accumulate(
            np.r_[_seconds(pd.Series([self.max_ts]))[0] if self.max_ts is not None else -np.inf, seconds]
        )[:-1]
        late = seconds < behind
        drop = seconds < behind - delay
        return frame[~drop].reset_index(drop=True), int(late.sum()), int(drop.sum())

    def _sample_out(self, item) -> None:
        """Reservoir sampling (algorithm R) of the matches leaving the latest ones: each earlier match is in
        the sample with the same chance."""
        seen = item[0] + 1
        if len(self.earlier) < self.sample_n:
            self.earlier.append(item)
        else:
            slot = self._random.randrange(seen)
            if slot < self.sample_n:
                self.earlier[slot] = item

    def _forget(self) -> None:
        """Keep the events of the kept matches, the latest ``context`` ones, and those a match still to come
        may hold; let go of the rest. A Spark feed emits a match only once the watermark passes its window,
        batches after its events arrived: a match not yet emitted starts after the watermark less the
        window (``horizon``), so the events from there on are kept (all those past the watermark when the
        window counts events)."""
        if not len(self.events):
            return
        needed = {p for _, m in (*self.latest, *self.earlier) for p in m.positions}
        recent = self.events.index[-self.context_n :]
        keep = self.events.index.isin(list(needed)) | self.events.index.isin(recent)
        if self.horizon is not None and self.watermark is not None:
            horizon = pd.Timedelta(seconds=self.horizon) if isinstance(self.watermark, pd.Timestamp) else self.horizon
            keep |= (self.events["ts"] > self.watermark - horizon).to_numpy()
        self.events = self.events[keep]

    def _kept(self) -> list:
        return sorted([*self.earlier, *self.latest], key=lambda item: item[0])

    def _window(self) -> tuple:
        """(the kept events, positions from 0, as a frame; the kept matches on them; their numbers)."""
        frame = self.events.sort_index()
        local = {int(p): i for i, p in enumerate(frame.index)}
        kept = [(k, m) for k, m in self._kept() if all(p in local for p in m.positions)]
        matches = []
        for _, m in kept:
            bindings = {
                v: tuple(local[p] for p in b) if isinstance(b, tuple) else local[b] for v, b in m.bindings.items()
            }
            matches.append(cepkit.Match.of(bindings, [local[p] for p in m.positions]))
        return frame.reset_index(drop=True), matches, [k for k, _ in kept]

    def _draw(self) -> None:
        if not len(self.events):
            return
        frame, matches, numbers = self._window()
        earlier = len(self.earlier)
        title = (
            f"{html.escape(self.heading)}<br><sup>{plural(self.match_count, 'match', 'matches')} so far, drawn: "
            f"the last {len(self.latest):,}"
            + (f" and a sample of {earlier:,} of the {self.match_count - len(self.latest):,} before" if earlier else "")
            + f" · {len(frame):,} events kept of {self.event_count:,}</sup>"
        )
        if self.timeline is None:
            self.timeline = MatchTimeline(frame, matches, title=title, tz=self.tz, max_matches=max(len(matches), 1))
            self.timeline.add_class("cepkit-live-timeline")
            self.timeline_box.children = [self.timeline]
        else:
            self.timeline.max_matches = max(len(matches), 1)
            self.timeline.show_window(frame, matches, title)
        self._draw_grid(frame, matches, numbers)

    def _draw_grid(self, frame: pd.DataFrame, matches: list, numbers: list) -> None:
        rows = []
        times = frame["ts"]
        for k, m in list(zip(numbers, matches))[::-1][:GRID_ROWS]:
            positions = list(m.positions)
            start, end = self._time(times.iloc[positions[0]]), self._time(times.iloc[positions[-1]])
            types = ", ".join(dict.fromkeys(str(frame["type"].iloc[p]) for p in positions))
            bindings = ", ".join(
                f"{v}: {html.escape(str(frame['type'].iloc[b if isinstance(b, int) else b[0]]))}"
                for v, b in m.bindings.items()
            )
            rows.append(
                f"<tr data-match='{k}'><td>{k:,}</td><td>{start}</td><td>{end}</td>"
                f"<td>{html.escape(types)}</td><td>{bindings}</td></tr>"
            )
        caption = (
            f"<small>the latest {min(GRID_ROWS, len(matches)):,} of {self.match_count:,} matches, newest "
            "first (the view keeps the last ones and a sample of the earlier ones)</small>"
        )
        zone = f" ({self.tz or 'UTC'})" if len(frame) and isinstance(times.iloc[0], pd.Timestamp) else ""
        self.grid.value = (
            f"{caption}<div class='cepkit-scroll'><table class='cepkit-table' "
            f"style='white-space: nowrap'><tr><th>match</th><th>start{zone}</th><th>end{zone}</th>"
            f"<th>types</th><th>bindings</th></tr>{''.join(rows)}</table></div>"
        )

    def _time(self, value) -> str:
        if isinstance(value, pd.Timestamp):
            stamp = value.tz_localize("UTC") if value.tzinfo is None else value
            return stamp.tz_convert(self.tz or "UTC").strftime("%Y-%m-%d %H:%M")
        return format_value(value)

    def _show_stats(self) -> None:
        state = (
            f"stopped: {html.escape(self.failed)}"
            if self.failed
            else "stopped"
            if self.stopped
            else "finished"
            if self.finished
            else "running"
            if self.batches
            else "waiting for the first batch"
        )
        # a supervised Spark query restarted on its checkpoint (``cepkit.spark.supervise``)
        restarts = "; ".join(
            f"the {kind} query {q.summary()}"
            for kind, q in zip(("events", "matches"), self.queries)
            if getattr(q, "restarts", 0)
        )
        if restarts:
            restarts = f" · <span class='cepkit-live-restarts'>{html.escape(restarts)}</span>"
        watermark = html.escape(self._time(self.watermark)) if self.watermark is not None else "–"
        if isinstance(self.watermark, pd.Timestamp):
            watermark += f" {self.tz or 'UTC'}"
        self.stats.value = (
            f"<small><b>{state}</b>{restarts} · <span class='cepkit-live-batches'>{plural(self.batches, 'batch', 'batches')}</span>"
            f" · {plural(self.event_count, 'event')} · "
            f"<b>{plural(self.match_count, 'match', 'matches')}</b> · "
            f"{self.last_rate:,.0f} events/s (last batch), {self.rate:,.0f} overall · "
            f"watermark {watermark} · {self.late:,} late · {self.dropped:,} dropped</small>"
        )


def _seconds(ts: pd.Series) -> np.ndarray:
    if pd.api.types.is_datetime64_any_dtype(ts) or isinstance(ts.iloc[0], pd.Timestamp):
        return pd.to_datetime(ts, utc=True).astype("int64").to_numpy() / 1e9
    return ts.astype(float).to_numpy()
