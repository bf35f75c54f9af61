"""``cepkit.spark.match(..., fields=...)`` gives the columns ``Matches.to_pandas(fields=...)`` gives (Spark joins
the matches with the events), and the groups travel as Arrow both ways (``mapInArrow``)."""

import datetime as dt

import numpy as np
import pandas as pd
import pytest

import cepkit
import cepkit.spark
from cepkit.errors import QueryError

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]

START = dt.datetime(2024, 1, 1)
EVENTS = pd.DataFrame(
    {
        "type": ["A", "B", "B", "C", "A", "D", "B", "C", "A", "B", "C"],
        "ts": [START + dt.timedelta(seconds=s) for s in (0, 1, 2, 3, 4, 5, 6, 7, 20, 21, 22)],
        "id": [1, 1, 2, 1, 2, 2, 2, 2, 1, 1, 1],
        "v": [1.5, None, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0],
        "name": ["a0", "b1", None, "c3", "a4", "d5", "b6", "c7", "a8", "b9", "c10"],
    }
)


def plain(value):
    """A cell as a comparable Python value (lists, None for nulls, Timestamps as such)."""
    if isinstance(value, (list, tuple, np.ndarray)):
        return [plain(v) for v in value]
    if value is None or (not isinstance(value, str) and pd.isna(value)):
        return None
    return value.item() if hasattr(value, "item") else value


def rows(frame: pd.DataFrame) -> list:
    return [{k: plain(v) for k, v in row.items()} for row in frame.to_dict("records")]


@pytest.mark.parametrize(
    "query, engine, fields",
    [
        ("A a ; B+ b ; C c WITHIN 10 s PARTITION BY id", "automaton", ["a.v", "b.v", "b.name", "c.ts", "a.id"]),
        ("(A a OR D d) ; C c WITHIN 10 s", "reference", ["a.name", "d.v", "c.ts"]),
        ("A a ; B b ; C c WITHIN 10 s", "stack", "all"),
    ],
)
def test_fields_are_the_local_columns(spark, query, engine, fields):
    local = cepkit.match(query, EVENTS, engine=engine).to_pandas(fields=fields)
    found = cepkit.spark.match(query, spark.createDataFrame(EVENTS), engine=engine, fields=fields).toPandas()
    fields_of = [c for c in found.columns if "." in c]
    assert fields_of == [c for c in local.columns if "." in c]  # the requested order
    assert set(found.columns) - {"id"} == set(local.columns)  # variables: definition order in Spark
    assert rows(found[list(local.columns)]) == rows(local)


def test_an_unknown_field_fails_like_locally(spark):
    with pytest.raises(QueryError, match="the matches bind a, b"):
        cepkit.spark.match("A a ; B b WITHIN 10 s", spark.createDataFrame(EVENTS), fields=["x.v"])
    with pytest.raises(QueryError, match="unknown attribute 'speed'"):
        cepkit.spark.match("A a ; B b WITHIN 10 s", spark.createDataFrame(EVENTS), fields=["a.speed"])
