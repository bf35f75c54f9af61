"""Spark tests share one local[2] session (UTC, 2 shuffle partitions, no UI); they are marked ``spark`` (and
grouped on one xdist worker, docs/testing.md) and skipped, with the reason, when no Java is installed. The
pure pandas parts of ``cepkit.spark`` (grouping, slicing, watermark buffers) are tested without Spark, in the
same folder."""

import os
import shutil

import numpy as np
import pandas as pd
import pytest

SPARK_CONF = {
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.sql.session.timeZone": "UTC",
    "spark.ui.enabled": "false",
}


@pytest.fixture(scope="session")
def spark():
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("Spark needs Java 17 or 21: no `java` on PATH and no JAVA_HOME")
    import cepkit.spark

    session = cepkit.spark.session("local[2]", **SPARK_CONF)
    yield session
    session.stop()


@pytest.fixture
def memory_sink(tmp_path):
    """``start(found, name, **trigger)``: the streaming DataFrame ``found`` started writing its rows, in append
    mode, to Spark's in-memory table ``name`` (read with ``spark.sql``), checkpointed under ``tmp_path``."""

    def start(found, name: str, **trigger):
        writer = (
            found.writeStream.format("memory")
            .queryName(name)
            .outputMode("append")
            .option("checkpointLocation", str(tmp_path / f"checkpoint-{name}"))
        )
        return (writer.trigger(**trigger) if trigger else writer).start()

    return start


def _match_rows(frame: pd.DataFrame, variables) -> list:
    def plain(value):
        if isinstance(value, (list, tuple, np.ndarray)):
            return tuple(int(v) for v in value)
        return None if value is None or pd.isna(value) else int(value)

    return [(plain(row["positions"]), tuple(plain(row[v]) for v in variables)) for _, row in frame.iterrows()]


@pytest.fixture(scope="session")
def match_rows():
    """``match_rows(frame, variables)``: (positions, bindings) of each row of a matches frame, local
    (``Matches.to_pandas``) or from Spark, as plain tuples."""
    return _match_rows
