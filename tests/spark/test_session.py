"""``cepkit.spark.session()``: the active session, or a local one with cepkit's defaults; and the same batch
match through Spark Connect (``$SPARK_REMOTE``), against a local Connect server started from pyspark."""
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import cepkit.spark

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]

CONNECT_TIMEOUT_S = 300
READY = "cepkit-connect-session-ready"


def test_the_active_session_is_reused_with_its_settings(spark):
    assert cepkit.spark.session() is spark
    conf = spark.conf
    assert conf.get("spark.sql.session.timeZone") == "UTC"
    assert conf.get("spark.ui.showConsoleProgress") == "false"
    assert conf.get("spark.sql.execution.arrow.pyspark.enabled") == "true"
    assert os.environ["PYSPARK_PYTHON"] == sys.executable


CONNECT_SCRIPT = textwrap.dedent(f"""
    import json, sys
    import pandas as pd
    import cepkit.spark
    spark = cepkit.spark.session(**{{"spark.sql.shuffle.partitions": "2"}})     # $SPARK_REMOTE decides
    print({READY!r}, type(spark).__module__, flush=True)
    events = pd.DataFrame({{"type": list("ABAB"), "ts": [0, 1, 2, 3], "id": [1, 1, 2, 2]}})
    found = cepkit.spark.match(sys.argv[1], spark.createDataFrame(events), engine="reference").toPandas()
    print(json.dumps([list(map(int, p)) for p in found["positions"]]))
""")


def test_spark_connect_runs_the_same_match(spark, tmp_path):
    """Issue 3: ``SPARK_REMOTE`` / Spark Connect works the same way. A separate process, so that the Connect
    server pyspark starts for ``local[2]`` does not meet this process's session."""
    query = "SEQ(A a, B b) WITHIN 5 PARTITION BY id"
    script = tmp_path / "connect_match.py"
    script.write_text(CONNECT_SCRIPT)
    env = {**os.environ, "SPARK_REMOTE": "local[2]",
           "PYTHONPATH": os.pathsep.join([str(Path(__file__).resolve().parents[2]), os.environ.get("PYTHONPATH", "")])}
    try:
        run = subprocess.run([sys.executable, str(script), query], capture_output=True, text=True, env=env,
                             timeout=CONNECT_TIMEOUT_S, cwd=tmp_path)
    except subprocess.TimeoutExpired:
        pytest.skip(f"a local Spark Connect server did not answer within {CONNECT_TIMEOUT_S} s")
    if READY not in run.stdout:
        pytest.skip("a local Spark Connect server could not be started: " + run.stderr.strip()[-600:])
    assert run.returncode == 0, run.stderr[-3000:]
    assert "pyspark.sql.connect" in run.stdout
    events = [{"type": t, "ts": i, "id": k} for i, (t, k) in enumerate(zip("ABAB", [1, 1, 2, 2]))]
    expected = cepkit.match(query, events, engine="reference").positions()
    assert json.loads(run.stdout.strip().splitlines()[-1]) == [list(p) for p in expected]
