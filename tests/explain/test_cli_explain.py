"""``cepkit explain`` on the command line (in process, through ``cepkit.cli.main``)."""

import json

import pytest

import cepkit
from cepkit.cli import main

FIRE = "(T AS x ; H AS y) FILTER (x.tmp > 40 and y.hum < 25 and x.id = 0 and y.id = 0)"


@pytest.fixture(scope="module")
def fire_csv(tmp_path_factory):
    path = tmp_path_factory.mktemp("events") / "fire.csv"
    cepkit.datasets.cel_fire_sensors().to_csv(path, index=False)
    return str(path)


def run(capsys, *args):
    try:
        status = main(list(args))
    except SystemExit as exit_:
        status = exit_.code
    out, err = capsys.readouterr()
    return status, out, err


def test_explain_a_candidate(capsys, fire_csv):
    status, out, _ = run(capsys, "explain", FIRE, "--events", fire_csv, "--candidate", "1,5")
    assert status == 0
    assert out.splitlines()[:2] == ["(1, 5) is not a match:", "- [type] event 5 has type T; `H AS y` needs H"]
    assert "            ^^^^^^" in out


def test_explain_bindings_and_json(capsys, fire_csv):
    status, out, _ = run(capsys, "explain", FIRE, "--events", fire_csv, "--candidate", "x=1,y=8", "--format", "json")
    assert status == 0
    (answer,) = json.loads(out)
    assert answer["is_match"] and answer["candidate"] == {"x": 1, "y": 8}
    assert {r["kind"] for r in answer["reasons"]} == {"satisfied"}


def test_without_a_candidate_the_near_misses(capsys, fire_csv):
    status, out, _ = run(capsys, "explain", "SEQ(T x, H y) WHERE x.tmp > 45", "--events", fire_csv, "--limit", "3")
    assert status == 0
    assert out.startswith("3 near misses among ")
    # the closest miss first: 45 is not above 45
    assert out.splitlines()[3] == "- [condition] `x.tmp > 45` is false: x.tmp = 45 (event 1)"


def test_bad_candidates_are_usage_errors(capsys, fire_csv):
    status, _, err = run(capsys, "explain", FIRE, "--events", fire_csv, "--candidate", "1,50")
    assert status == 2 and "position 50 is not in the stream" in err
    status, _, err = run(capsys, "explain", FIRE, "--events", fire_csv, "--candidate", "one")
    assert status == 2 and "expected positions like 1,8" in err
    status, _, err = run(capsys, "explain", "SEQ(T x", "--events", fire_csv, "--candidate", "1")
    assert status == 2 and "line 1, column" in err


def test_a_type_no_event_has_is_named_in_text_and_beside_json(capsys, fire_csv):
    """The near misses of a misspelt type were "0 near misses among 0 candidates" and, in JSON, ``[]``."""
    status, out, _ = run(capsys, "explain", "SEQ(T x, HH y)", "--events", fire_csv)
    assert status == 0 and "no event of type 'HH' in the stream; did you mean 'H'?" in out
    status, out, err = run(capsys, "explain", "SEQ(T x, HH y)", "--events", fire_csv, "--format", "json")
    assert status == 0 and json.loads(out) == [] and "did you mean 'H'?" in err
