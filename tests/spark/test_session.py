"""``cepkit.spark.session()``: the active session, or a local one with cepkit's defaults; and the same batch
match through Spark Connect (``$SPARK_REMOTE``), against a local Connect server started from pyspark (with
the Workbench on Spark and a ``cepkit.spark.Job``'s progress and Cancel)."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import cepkit
import cepkit.spark
from cepkit.spark.session import ROCKSDB_PROVIDER

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]

CONNECT_TIMEOUT_S = 600  # the script starts a Connect server and runs its Spark steps: 5 min at load 25
SESSION_S = 300  # the Connect server's start (~3 min at load 30): past it the test skips
STEP_S = 300  # each later step (one at a time: a hung wait names its step); 150 s ran out at load 30
SCRIPT_S = CONNECT_TIMEOUT_S - 60  # the whole script's, before the test's own: the stuck step is named
READY = "cepkit-connect-session-ready"
STEP = "cepkit-step"
STUCK = "cepkit-step-timed-out"


def test_the_active_session_is_reused_with_its_settings(spark):
    assert cepkit.spark.session() is spark
    conf = spark.conf
    assert conf.get("spark.sql.session.timeZone") == "UTC"
    assert conf.get("spark.ui.showConsoleProgress") == "false"
    assert conf.get("spark.sql.execution.arrow.pyspark.enabled") == "true"
    assert os.environ["PYSPARK_PYTHON"] == sys.executable
    assert conf.get("spark.sql.streaming.stateStore.providerClass") == ROCKSDB_PROVIDER


def test_new_sessions_leave_spark_defaults_conf_and_connect_servers_their_settings(tmp_path, monkeypatch):
    """cepkit's defaults fill only what ``spark-defaults.conf`` leaves unset (builder settings would
    override the file); a Spark Connect session gets only settings a Connect client may change."""
    from cepkit.spark.session import _CLASSIC_DEFAULTS, _SESSION_DEFAULTS, _defaults

    (tmp_path / "spark-defaults.conf").write_text(
        "# cluster settings\nspark.driver.memory   16g\nspark.sql.session.timeZone=Europe/Paris\n\n"
    )
    monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path))
    classic = _defaults(remote=False)
    assert "spark.driver.memory" not in classic and "spark.sql.session.timeZone" not in classic
    assert classic["spark.ui.showConsoleProgress"] == "false"
    assert classic["spark.sql.streaming.stateStore.providerClass"] == ROCKSDB_PROVIDER
    assert _defaults(remote=True) == _SESSION_DEFAULTS
    assert not set(_defaults(remote=True)) & set(_CLASSIC_DEFAULTS)
    monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path / "missing"))
    assert {"spark.driver.memory", "spark.sql.session.timeZone"} <= set(_defaults(remote=False))


def test_executors_share_the_drivers_numba_cache(tmp_path, monkeypatch):
    """A cache ``cepkit warmup`` filled serves every worker: the driver's NUMBA_CACHE_DIR is passed on."""
    from cepkit.spark.session import _defaults

    monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path))
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    assert not any("NUMBA" in key for key in _defaults(remote=False))
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "kernels"))
    assert _defaults(remote=False)["spark.executorEnv.NUMBA_CACHE_DIR"] == str(tmp_path / "kernels")
    assert not any("NUMBA" in key for key in _defaults(remote=True))  # a Connect server keeps its own


CONNECT_SCRIPT = textwrap.dedent(f"""
    import faulthandler, json, os, subprocess, sys, tempfile, threading, time, warnings
    import pandas as pd
    import cepkit.spark

    START = time.monotonic()
    END = START + {SCRIPT_S}

    class step:
        # Each step has a time limit of its own, cut to what is left of the script's: past it the script names
        # the step, dumps every Python thread's stack and the Java threads of the Connect server's JVM, and exits.
        def __init__(self, name, seconds):
            self.name, self.seconds = name, min(seconds, END - time.monotonic())
            self.limit = "its own" if self.seconds == seconds else "the script's"
        def __enter__(self):
            print({STEP!r}, f"at {{time.monotonic() - START:.0f}} s:", self.name, flush=True)
            self.timer = threading.Timer(self.seconds, self.expire)
            self.timer.daemon = True
            self.timer.start()
        def __exit__(self, *exc):
            self.timer.cancel()
        def expire(self):
            print({STUCK!r}, f"{{self.name}} after {{self.seconds:.0f}} s ({{self.limit}} limit)", flush=True)
            print({STUCK!r}, file=sys.stderr, flush=True)
            faulthandler.dump_traceback(all_threads=True)
            children = subprocess.run(["pgrep", "-P", str(os.getpid())], capture_output=True, text=True).stdout
            for pid in children.split():
                subprocess.run(["jstack", pid], stdout=open("jstack-" + pid + ".txt", "w"), timeout=60)
            os._exit(3)

    with step("session", {SESSION_S}), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        spark = cepkit.spark.session(**{{"spark.sql.shuffle.partitions": "2"}})     # $SPARK_REMOTE decides
    print({READY!r}, type(spark).__module__, flush=True)
    print(json.dumps([str(w.message) for w in caught if issubclass(w.category, UserWarning)]))
    events = pd.DataFrame({{"type": list("ABAB"), "ts": [0, 1, 2, 3], "id": [1, 1, 2, 2]}})
    with step("batch match", {STEP_S}):
        found = cepkit.spark.match(sys.argv[1], spark.createDataFrame(events), engine="reference").toPandas()
    print(json.dumps([list(map(int, p)) for p in found["positions"]]))
    # The same events as a stream in one micro-batch, then an event far later that moves the watermark, into
    # a live view (widgets.live): foreachBatch would run in the server's Python, so the events and the matches
    # go into memory sinks that poll() reads from here, a batch of the view per read.
    from widgets.live import LiveView
    folder = tempfile.mkdtemp()
    source = os.path.join(folder, "events")
    os.mkdir(source)
    stream = spark.readStream.schema("type string, ts double, position long, id long").json(source)
    with step("live view: start its queries", {STEP_S}):
        live = LiveView.from_spark(sys.argv[1], stream, engine="reference", poll=3600)
    batches = [events.assign(position=range(4)), pd.DataFrame([{{"type": "Z", "ts": 100.0, "position": 4, "id": 1}}])]
    polled = []
    for number, batch in enumerate(batches):
        batch.to_json(os.path.join(source, f"{{number}}.json"), orient="records", lines=True)
        for query, kind in zip(live.queries, ["events", "matches"]):
            with step(f"live view: batch {{number}}, the {{kind}} query's processAllAvailable", {STEP_S}):
                query.processAllAvailable()
        with step(f"live view: batch {{number}}, poll", {STEP_S}):
            polled.append(live.poll())
    with step("live view: late events and stop", {STEP_S}):
        late = cepkit.spark.late_events(live.queries[1])
        live.stop()
    streamed = sorted(list(m.positions) for _, m in (*live.earlier, *live.latest))
    print(json.dumps([streamed, late, polled, live.batches, live.event_count, live.match_count, live.stats.value,
                      [query.isActive for query in live.queries]]))
    # An E-Cube over the same stream (cube_stream: a streaming cube per key in the server's workers).
    cube = cepkit.ECube({{"ab": sys.argv[1], "xb": sys.argv[1].replace("A a", "X a")}}, {{"X": ["A"]}})
    cube_source = os.path.join(folder, "cube")
    os.mkdir(cube_source)
    with step("cube: start", {STEP_S}):
        found = cepkit.spark.cube_stream(cube, spark.readStream.schema("type string, ts double, position long, id long")
                                         .json(cube_source))
        cubing = found.writeStream.format("memory").queryName("cube_found").outputMode("append").start()
    for number, batch in enumerate(batches):
        batch.to_json(os.path.join(cube_source, f"{{number}}.json"), orient="records", lines=True)
        with step(f"cube: batch {{number}}, processAllAvailable", {STEP_S}):
            cubing.processAllAvailable()
    with step("cube: read and stop", {STEP_S}):
        cubed = sorted([r["query"], list(r["positions"])] for r in spark.sql("select * from cube_found").collect())
        cubing.stop()
    print(json.dumps(cubed))
    # The Workbench on this session (widgets.on_spark), and a Job's progress and Cancel through Connect.
    from widgets.on_spark import SparkWorkbench
    with step("workbench: make and run", {STEP_S}):
        wb = SparkWorkbench(spark.createDataFrame(events), query=sys.argv[1], engine="reference")
        found = wb.run()
    def slow(batches):
        for batch in batches:
            time.sleep(1)
            yield batch
    seen = []
    with step("job: progress and cancel", {STEP_S}):
        job = cepkit.spark.Job(lambda: spark.range(0, 60, numPartitions=60).mapInPandas(slow, "id long").count(),
                               spark, progress=seen.append).start()
        deadline = time.monotonic() + 60
        while not seen and time.monotonic() < deadline:
            time.sleep(0.2)
        asked = time.monotonic()
        job.cancel()
        try:
            job.wait(30)
        except cepkit.spark.Cancelled:
            pass
    print(json.dumps([found, [row[wb.grid.columns.index("positions")] for row in wb.grid.rows], len(seen), job.cancelled,
                      time.monotonic() - asked]), flush=True)
    # The local Connect server pyspark started keeps threads that hold the interpreter open: leave at once.
    spark.stop()
    os._exit(0)
""")


def test_spark_connect_runs_the_same_match(spark, tmp_path):
    """Issue 3: ``SPARK_REMOTE`` / Spark Connect works the same way. A separate process, so that the Connect
    server pyspark starts for ``local[2]`` does not meet this process's session."""
    query = "SEQ(A a, B b) WITHIN 5 PARTITION BY id"
    script = tmp_path / "connect_match.py"
    script.write_text(CONNECT_SCRIPT)
    env = {
        **os.environ,
        "SPARK_REMOTE": "local[2]",
        "PYTHONPATH": os.pathsep.join([str(Path(__file__).resolve().parents[2]), os.environ.get("PYTHONPATH", "")]),
    }
    try:
        run = subprocess.run(
            [sys.executable, str(script), query],
            capture_output=True,
            text=True,
            env=env,
            timeout=CONNECT_TIMEOUT_S,
            cwd=tmp_path,
        )
    except subprocess.TimeoutExpired as late:
        said = late.stdout.decode() if isinstance(late.stdout, bytes) else (late.stdout or "")
        if READY in said:  # the server answered: a script that hangs is a failure, not a missing server
            pytest.fail(f"the Connect script did not finish within {CONNECT_TIMEOUT_S} s; it printed:\n{said}")
        pytest.skip(f"a local Spark Connect server did not answer within {CONNECT_TIMEOUT_S} s")
    if READY not in run.stdout:
        pytest.skip("a local Spark Connect server could not be started: " + run.stderr.strip()[-600:])
    steps = [line for line in run.stdout.splitlines() if line.startswith((STEP, STUCK))]
    if steps[-1].startswith(STUCK):
        said = "\n".join(steps)
        pytest.fail(f"{said}\nwhere each thread was then:\n{where_stuck(run.stderr, tmp_path)}")
    assert run.returncode == 0, f"the script failed in its {steps[-1]!r}:\n{run.stderr[-3000:]}"
    assert "pyspark.sql.connect" in run.stdout
    lines = [line for line in run.stdout.splitlines() if line.startswith("[")][-5:]  # the JSON lines
    warned, batch, live, cubed, (found, page, reports, cancelled, cancel_s) = [json.loads(x) for x in lines]
    streamed, late, polled, batches, live_events, live_matches, stats, active = live
    assert warned == []  # no setting a Connect server refuses
    events = [{"type": t, "ts": i, "id": k} for i, (t, k) in enumerate(zip("ABAB", [1, 1, 2, 2]))]
    expected = [list(p) for p in cepkit.match(query, events, engine="reference").positions()]
    assert batch == expected and expected
    assert streamed == sorted(expected) and late == 0  # match_stream too; the event at ts 0 is not late
    # the live view on Connect: a batch per micro-batch read from the memory sinks, the watermark, Stop
    assert polled == [True, True] and batches == 2 and live_events == 5 and live_matches == len(expected)
    assert "<b>stopped</b>" in stats and "watermark 100 ·" in stats and active == [False, False]
    assert cubed == sorted([name, p] for name in ("ab", "xb") for p in expected)  # cube_stream too
    assert found == len(expected) and page == [", ".join(map(str, p)) for p in expected]  # the Workbench
    assert reports and cancelled and cancel_s < 5  # Connect's progress handler; interruptTag


def where_stuck(stderr: str, folder: Path) -> str:
    """A stuck script's Python threads (faulthandler's dump: its last 4,000 characters) and the Java threads of
    the Connect server's JVM in Spark's code and not idle in a pool (queries, operations, tasks)."""
    python = stderr[stderr.rfind(STUCK) :][-4000:]
    java = [
        "\n".join(thread.splitlines()[:30])
        for dump in sorted(folder.glob("jstack-*.txt"))
        for thread in dump.read_text().split("\n\n")
        if thread.startswith('"') and "org.apache.spark" in thread and "getTask" not in thread
    ]
    return python + "\n\nJava threads:\n" + "\n\n".join(java)


def test_a_local_session_gets_a_few_shuffle_partitions_per_thread(tmp_path, monkeypatch):
    """Spark's 200 shuffle partitions made `cepkit.spark.match` on the flights year run 200 Python tasks on
    local[2] (100-166 s against 45-55 s with 4, at a load of ~15); a cluster keeps its own setting."""
    import os

    from cepkit.spark.session import _defaults

    monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path))
    partitions = "spark.sql.shuffle.partitions"
    assert _defaults(remote=False, master="local[2]")[partitions] == "8"
    assert _defaults(remote=False, master="local[3, 2]")[partitions] == "12"
    assert _defaults(remote=False, master="local")[partitions] == "4"
    assert _defaults(remote=False, master="local[*]")[partitions] == str(4 * (os.cpu_count() or 1))
    assert partitions not in _defaults(remote=False, master="spark://cluster:7077")
    assert partitions not in _defaults(remote=True)
    (tmp_path / "spark-defaults.conf").write_text("spark.sql.shuffle.partitions 64\n")
    assert partitions not in _defaults(remote=False, master="local[2]")  # the site's own setting wins
