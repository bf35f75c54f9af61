"""The Spark session cepkit runs on: the active one, Spark Connect, or a local one built with sensible settings.

Order of preference (the usual PySpark one): an active session; ``remote=`` or ``$SPARK_REMOTE`` (Spark
Connect, e.g. ``sc://host:15002`` or ``local[2]`` to start a local Connect server from the pyspark package);
``master=`` (``local[*]`` by default, or a cluster URL). Settings come from ``spark-defaults.conf`` and
``**conf`` as usual; cepkit only adds defaults for what is left unset (through Spark Connect, its session
settings unless ``**conf`` gives them: the client cannot read the server's ``spark-defaults.conf``).
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import tempfile
from typing import Optional

from ..errors import memory_bytes

# Where a local JVM's own stderr goes (its start-up warnings, log4j before the ERROR level is set): in a
# notebook they would show as a red stderr block under the cell that starts Spark. Errors still reach Python
# as exceptions.
JVM_LOG = os.path.join(tempfile.gettempdir(), f"cepkit-spark-{os.getpid()}.log")

# Stateful streaming (transformWithStateInPandas) keeps its state in RocksDB.
ROCKSDB_PROVIDER = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
_PROVIDER_CONF = "spark.sql.streaming.stateStore.providerClass"

# Session settings, for a new classic session and a new Spark Connect session alike.
_SESSION_DEFAULTS = {
    "spark.sql.session.timeZone": "UTC",  # timestamps print as they are stored
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    _PROVIDER_CONF: ROCKSDB_PROVIDER,
    # Arrow batches of 100,000 rows, not 10,000: createDataFrame makes a Spark partition per batch (70 for
    # the flights year), and each batch to a Python worker has a fixed cost.
    "spark.sql.execution.arrow.maxRecordsPerBatch": "100000",
    # No byte limit on a batch to Python (Spark's largest value switches it off): under one, the JVM sizes
    # the batch after every row it writes, a third of its task threads' time in cepkit.spark.match.
    "spark.sql.execution.arrow.maxBytesPerBatch": str(2**31 - 1),
}
# Shuffle partitions per worker thread of a local session: enough to even out keys of unequal sizes, few
# enough that each task's fixed cost (a Python worker's batch, its Arrow schema) stays small.
_TASKS_PER_THREAD = 4
# For a new classic session only: a Connect server refuses to change these (and warns).
_CLASSIC_DEFAULTS = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",  # its carriage returns garble notebook output
    "spark.sql.execution.arrow.pyspark.fallback.enabled": "true",
}


def use_rocksdb(spark) -> None:
    """Keep the session's streaming state in RocksDB, as transformWithStateInPandas needs (a session
    ``session()`` did not build may use another store)."""
    if spark.conf.get(_PROVIDER_CONF, None) != ROCKSDB_PROVIDER:
        spark.conf.set(_PROVIDER_CONF, ROCKSDB_PROVIDER)


def _driver_memory() -> str:
    """A quarter of the machine's memory, between 1 and 8 GiB: in local mode the driver is the executor."""
    try:
        total = memory_bytes()
    except (ValueError, OSError, AttributeError):
        return "2g"
    return f"{max(1, min(8, total // 4 // 2**30))}g"


def _preset() -> set:
    """The keys ``spark-defaults.conf`` sets: spark-submit reads it from ``$SPARK_CONF_DIR``, else from
    ``$SPARK_HOME/conf`` (the pyspark package for a pip install), and settings passed to the builder would
    override it."""
    from pyspark.find_spark_home import _find_spark_home

    folder = os.environ.get("SPARK_CONF_DIR") or os.path.join(_find_spark_home(), "conf")
    try:
        with open(os.path.join(folder, "spark-defaults.conf"), encoding="utf-8") as lines:
            entries = [line.strip() for line in lines]
    except OSError:
        return set()
    return {re.split(r"[\s=:]", line, maxsplit=1)[0] for line in entries if line and line[0] not in "#!"}


def _local_threads(master: str) -> Optional[int]:
    """The worker threads of a ``local``, ``local[n]``, ``local[*]`` or ``local[n, retries]`` master, else None."""
    found = re.fullmatch(r"local(?:\[\s*(\*|\d+)\s*(?:,\s*\d+\s*)?\])?", master.strip())
    if found is None:
        return None
    threads = found.group(1)
    return 1 if threads is None else (os.cpu_count() or 1) if threads == "*" else int(threads)


def _defaults(remote: bool, master: str = "local[*]") -> dict:
    """cepkit's settings for a new session, minus those ``spark-defaults.conf`` sets for a classic one."""
    if remote:
        return dict(_SESSION_DEFAULTS)
    defaults = {**_SESSION_DEFAULTS, **_CLASSIC_DEFAULTS, "spark.driver.memory": _driver_memory()}
    threads = _local_threads(master)
    if threads is not None:  # Spark's 200 shuffle partitions are 200 Python tasks per match on a laptop's cores
        defaults["spark.sql.shuffle.partitions"] = str(_TASKS_PER_THREAD * threads)
    if os.environ.get("NUMBA_CACHE_DIR"):  # the executors' workers read the kernels the driver's cache holds
        defaults["spark.executorEnv.NUMBA_CACHE_DIR"] = os.environ["NUMBA_CACHE_DIR"]
    preset = _preset()
    return {key: value for key, value in defaults.items() if key not in preset}


def session(master: Optional[str] = None, remote: Optional[str] = None, **conf):
    """The SparkSession to run on: the active one, else Spark Connect, else a new local one.

    Parameters
    ----------
    master : str, optional
        ``spark.master`` for a new classic session (``local[*]`` if neither this nor ``remote`` is given).
    remote : str, optional
        A Spark Connect URL (``sc://host:port``), or ``local[n]`` to start a local Connect server;
        ``$SPARK_REMOTE`` is used when this is not given.
    **conf
        Extra settings; dots in keys are written as given (``session(**{"spark.sql.shuffle.partitions": "8"})``).

    Notes
    -----
    A new classic session gets, for each setting neither ``**conf`` nor ``spark-defaults.conf`` gives:
    session time zone UTC, the UI and console progress bar off, Arrow on (batches of 100,000 rows, no byte
    limit), RocksDB for streaming state, a
    driver memory of a quarter of RAM (1 to 8 GiB), on a local master four shuffle partitions per worker thread
    (Spark's 200 would run 200 Python tasks per match on a few cores), the driver's ``NUMBA_CACHE_DIR`` for the executors when
    it is set (a directory they all read, e.g. filled by ``cepkit warmup``: no worker compiles the numba
    kernels again); and quiet (ERROR) logs, the JVM's stderr in ``JVM_LOG``, workers that run this very
    Python (``PYSPARK_PYTHON``), bound to the loopback interface. A new Spark Connect session gets the
    time zone, Arrow and RocksDB settings unless ``**conf`` gives them (the server keeps its own UI, logs
    and memory, and refuses to change them).
    """
    from pyspark.sql import SparkSession

    if master is None and remote is None and not conf:
        active = SparkSession.getActiveSession()
        if active is not None:
            return active
    remote = remote or os.environ.get("SPARK_REMOTE")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder
    if remote:
        builder = builder.remote(remote)
    else:
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        builder = builder.master(master or "local[*]")
    for key, value in {**_defaults(bool(remote), master or "local[*]"), **conf}.items():
        builder = builder.config(key, value)
    with contextlib.nullcontext() if remote else _stderr_to(JVM_LOG):
        spark = builder.getOrCreate()
    if not remote:
        spark.sparkContext.setLogLevel("ERROR")
    return spark


@contextlib.contextmanager
def _stderr_to(path: str):
    """File descriptor 2 goes to ``path`` meanwhile: a JVM started now keeps it as its stderr."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(path, "ab") as log:
            os.dup2(log.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
