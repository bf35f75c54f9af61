"""The ``cepkit`` command line, run as a subprocess on temporary event files (issue 2, item 6)."""

import json
import subprocess
import sys

import pandas as pd
import pytest

import cepkit
from cepkit.cli import main

FIRE = "(T AS x ; H AS y) FILTER (x.tmp > 40 and y.hum < 25 and x.id = 0 and y.id = 0)"


def cepkit_cli(*args, stdin=None):
    """The command as a user runs it: a new process, exit status, stdout and stderr."""
    return subprocess.run(
        [sys.executable, "-m", "cepkit", *args], capture_output=True, text=True, input=stdin, timeout=300
    )


def in_process(capsys, *args):
    """The same command through ``cepkit.cli.main`` (faster: no interpreter start): (status, out, err)."""
    try:
        status = main(list(args))
    except SystemExit as exit_:  # argparse's own usage errors
        status = exit_.code
    out, err = capsys.readouterr()
    return status, out, err


@pytest.fixture(scope="module")
def fire_csv(tmp_path_factory):
    """[CEL]'s fire-sensor stream (position 0 read as T) written as CSV."""
    path = tmp_path_factory.mktemp("events") / "fire.csv"
    cepkit.datasets.cel_fire_sensors().to_csv(path, index=False)
    return path


def test_match_prints_a_table_of_the_matches(fire_csv):
    done = cepkit_cli("match", FIRE, "--events", str(fire_csv))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split() == ["match_id", "positions", "x", "y"]
    assert [line.split(None, 1)[1].rsplit(None, 2)[0] for line in lines[1:4]] == ["[1, 2]", "[1, 8]", "[5, 8]"]
    assert lines[-1].startswith("3 matches (engine: ")


def test_match_as_json_gives_what_the_api_gives(fire_csv):
    expected = cepkit.match(FIRE, cepkit.datasets.cel_fire_sensors(), engine="reference")
    done = cepkit_cli("match", FIRE, "--events", str(fire_csv), "--format", "json", "--engine", "reference")
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    assert [tuple(r["positions"]) for r in rows] == expected.positions() == [(1, 2), (1, 8), (5, 8)]
    assert [(r["x"], r["y"]) for r in rows] == [(1, 2), (1, 8), (5, 8)]


def test_match_as_csv(capsys, fire_csv):
    status, out, _ = in_process(capsys, "match", FIRE, "--events", str(fire_csv), "--format", "csv")
    assert status == 0
    assert out.splitlines() == ["match_id,positions,x,y", '0,"[1, 2]",1,2', '1,"[1, 8]",1,8', '2,"[5, 8]",5,8']


def test_strategy_option_and_query_from_stdin(fire_csv):
    # [CEL] §4: {1,8} <next {5,8}, so NEXT keeps (1, 8) among the matches ending at 8.
    done = cepkit_cli("match", "-", "--events", str(fire_csv), "--strategy", "next", "--format", "json", stdin=FIRE)
    assert done.returncode == 0, done.stderr
    assert [tuple(r["positions"]) for r in json.loads(done.stdout)] == [(1, 2), (1, 8)]


def test_datetime_ts_and_jsonl_files(capsys, tmp_path):
    events = [
        {"type": "A", "ts": "2024-05-01T10:00:00Z", "id": 1},
        {"type": "B", "ts": "2024-05-01T10:20:00Z", "id": 1},
        {"type": "B", "ts": "2024-05-01T12:00:00Z", "id": 1},
    ]
    path = tmp_path / "events.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    status, out, _ = in_process(
        capsys, "match", "SEQ(A a, B b) WITHIN 1 hour", "--events", str(path), "--format", "json"
    )
    assert status == 0
    assert [r["positions"] for r in json.loads(out)] == [[0, 1]]


def test_parse_pretty_prints_and_lists_features():
    done = cepkit_cli("parse", "pattern seq(A a, !B b, C+ c) where a.id = c.id within 10 MINUTES")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "SEQ(A AS a, !B AS b, C+ AS c) WHERE a.id = c.id WITHIN 10 minutes"
    assert lines[1] == "variables: a (A), b (B), c (C+)"
    assert lines[3] == "features:  binary_conditions, kleene, negation, sequence, time_window"
    assert lines[4].startswith("engines:   ") and "reference" in lines[4]


def test_engines_prints_the_capability_matrix(capsys):
    status, out, _ = in_process(capsys, "engines", "--format", "json")
    assert status == 0
    rows = {row["engine"]: row for row in json.loads(out)}
    assert rows["reference"]["negation"] is True and rows["reference"]["rank"] == 1000
    status, table, _ = in_process(capsys, "engines")
    assert "reference" in table.splitlines()[0] and "strategy:NEXT" in table


@pytest.mark.parametrize(
    "query, message",
    [
        ("SEQ(A a, B b", "line 1, column 13: the query ends too early"),
        ("T x ; H y FILTER z.tmp > 1", "line 1, column 18: unknown variable 'z'"),
        (
            "T x ; H y FILTER x.temp > 1",
            "line 1, column 18: unknown attribute 'temp' of 'x': events of type T have id, tmp",
        ),
    ],
)
def test_bad_query_prints_the_caret_message_and_exits_2(capsys, fire_csv, query, message):
    status, out, err = in_process(capsys, "match", query, "--events", str(fire_csv))
    assert (status, out) == (2, "")
    assert err.startswith("error: " + message)
    assert "^" in err.splitlines()[2]


def test_errors_never_show_a_traceback(fire_csv):
    done = cepkit_cli("match", "SEQ(A a, B b", "--events", str(fire_csv))
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines() == [
        "error: line 1, column 13: the query ends too early; expected ')', ',', FILTER",
        "  SEQ(A a, B b",
        "              ^",
    ]


def test_bad_events_name_position_and_field(capsys, tmp_path):
    path = tmp_path / "bad.csv"
    pd.DataFrame({"type": ["A", "B", "B"], "ts": ["2024-01-01", "2024-01-02", "yesterday"]}).to_csv(path, index=False)
    done = cepkit_cli("match", "A a ; B b", "--events", str(path))
    assert done.returncode == 2
    assert done.stderr == "error: event at position 2, field 'ts': 'yesterday' is neither a number nor a datetime\n"
    disordered = tmp_path / "disordered.csv"
    pd.DataFrame({"type": ["A", "B"], "ts": [5, 1]}).to_csv(disordered, index=False)
    status, _, err = in_process(capsys, "match", "A a ; B b", "--events", str(disordered))
    assert status == 2 and err.startswith("error: event at position 1, field 'ts': the stream is out of order")


def test_missing_file_and_bad_arguments_exit_2(capsys, tmp_path):
    status, _, err = in_process(capsys, "match", "A a", "--events", str(tmp_path / "nowhere.csv"))
    assert status == 2 and "no such events file" in err
    status, _, err = in_process(capsys, "match", "A a", "--events", str(tmp_path / "x.csv"), "--format", "xml")
    assert status == 2 and "invalid choice: 'xml'" in err


def test_demo_without_spark_writes_the_report(tmp_path):
    done = cepkit_cli("demo", "--months", "1", "--airports", "LGA", "--no-spark", "--output", str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    assert "PATTERN SEQ(ADVERSE_WEATHER w, !ON_TIME_DEPARTURE o, DELAYED_DEPARTURE d)" in done.stdout
    assert "agreement between local and Spark: not checked (Spark did not run)" in done.stdout
    summary = [line.split() for line in done.stdout.splitlines() if line.strip().startswith("match locally")]
    assert len(summary) == 1 and int(summary[0][3]) > 0  # match locally EVENTS MATCHES ENGINE SECONDS
    report = (tmp_path / "out" / "report.html").read_text()
    assert "plotly" in report and "DELAYED_DEPARTURE" in report


def test_hierarchy_as_inline_json_or_file(capsys, tmp_path):
    events = tmp_path / "stocks.csv"
    pd.DataFrame({"type": ["IBM", "MSFT", "Oil"], "ts": [1, 2, 3]}).to_csv(events, index=False)
    concepts = '{"Stock": ["Tech", "Energy"], "Tech": ["IBM", "MSFT"], "Energy": ["Oil"]}'
    status, out, _ = in_process(
        capsys, "match", "Tech t ; Stock s", "--events", str(events), "--hierarchy", concepts, "--format", "json"
    )
    assert status == 0 and [r["positions"] for r in json.loads(out)] == [[0, 1], [0, 2], [1, 2]]
    (tmp_path / "h.json").write_text(concepts)
    status, out, _ = in_process(capsys, "parse", "Energy e", "--hierarchy", str(tmp_path / "h.json"))
    assert status == 0 and "hierarchy" in out.splitlines()[3]
    status, _, err = in_process(capsys, "parse", "Energy e", "--hierarchy", '{"A": ["B"], "B": ["A"]}')
    assert status == 2 and "error: the hierarchy has a cycle: " in err
    status, _, err = in_process(capsys, "parse", "Energy e", "--hierarchy", str(tmp_path / "missing.json"))
    assert status == 2 and "--hierarchy: no such file" in err


# ----------------------------------------------------------------------------- malformed input (issue 15)
MALFORMED = {  # file name -> (content, what the one line on stderr says)
    "empty.csv": (b"", "no header line and no events"),
    "newlines.csv": (b"\n\n\n", "no header line and no events"),
    "blank.csv": (b"  \n\t \n", "no header line and no events"),
    "bom.csv": (b"\xef\xbb\xbf", "no header line and no events"),
    "binary.csv": (bytes(range(128, 256)) * 3, "line 1 is not UTF-8 text (byte 0x80)"),
    "latin1.csv": (b"type,ts,name\nA,0,caf\xe9\n", "line 2 is not UTF-8 text (byte 0xe9)"),
    "quote.csv": (b'type,ts\nA,0\n"B,1\nC,2\n', "the quote opened on line 3 is never closed"),
    "fields.csv": (b"type,ts,v\nA,0,1\nB,1,2,3\n", "line 3 has 4 fields, the header has 3"),
    # pandas would take the first column as an index and blame the type
    "first_row_fields.csv": (b"type,ts\nA,1,5\n", "line 2 has 3 fields, the header has 2"),
    "garbage.json": (b"not json{", "not JSON (line 1, column 1"),
    "scalar.json": (b"5", "a list of objects, one per event"),
    "object.json": (b'{"type": "A", "ts": 0}', "a list of objects, one per event"),
    "mixed.json": (b'[{"type": "A"}, 3]', "a list of objects, one per event"),
    "empty.json": (b"", "not JSON (line 1, column 1"),
    "garbage.jsonl": (b'{"type": "A", "ts": 0}\n\nnope\n', "line 3 is not JSON"),
    "scalar.jsonl": (b'{"type": "A", "ts": 0}\n[1]\n', "line 2 is not a JSON object"),
    "garbage.parquet": (b"PAR1 certainly not parquet", "not a Parquet file"),
    "empty.parquet": (b"", "not a Parquet file"),
}


@pytest.fixture(scope="module")
def malformed(tmp_path_factory):
    folder = tmp_path_factory.mktemp("malformed")
    for name, (content, _) in MALFORMED.items():
        (folder / name).write_bytes(content)
    return folder


def one_line_error(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_a_malformed_events_file_is_one_line_and_exit_2(capsys, malformed, name):
    status, out, err = in_process(capsys, "match", "A a ; B b", "--events", str(malformed / name))
    assert status == 2 and out == ""
    line = one_line_error(err)
    assert line.startswith(f"cepkit: error: {malformed / name}: ") and MALFORMED[name][1] in line, line


def test_a_header_without_rows_has_no_matches(capsys, tmp_path):
    (tmp_path / "header.csv").write_text("type,ts\n")
    status, out, _ = in_process(capsys, "match", "A a", "--events", str(tmp_path / "header.csv"))
    assert status == 0 and "0 matches" in out


@pytest.mark.parametrize(
    "rows, position, says",
    [
        ("A,0\nB,x\n", 1, "'x' is neither a number nor a datetime"),
        ("A,x\nB,1\n", 0, "'x' is neither a number nor a datetime"),
        ("A,1\nB,2024-01-01\n", 1, "'2024-01-01' is a datetime, but the ts of event 0 is a number"),
        ("A,2024-01-01\nB,7\n", 1, "'7' is a number, but the ts of event 0 is a datetime"),
    ],
)
def test_a_text_ts_is_blamed_on_its_own_row(capsys, tmp_path, rows, position, says):
    (tmp_path / "ts.csv").write_text("type,ts\n" + rows)
    status, _, err = in_process(capsys, "match", "A a ; B b", "--events", str(tmp_path / "ts.csv"))
    assert status == 2
    assert one_line_error(err) == f"error: event at position {position}, field 'ts': " + says or says in err


@pytest.mark.parametrize(
    "options",
    [
        ["-o", "bogus=1"],
        ["-o", "disorder=kslack"],
        ["-o", "disorder=kslack", "-o", "k=-1"],
        ["-o", "disorder=nonsense"],
        ["--engine", "nowhere"],
        ["--engine", "ses", "-o", "caching=x"],
    ],
)
def test_bad_engine_options_are_usage_errors(capsys, fire_csv, options):
    status, out, err = in_process(capsys, "match", "T x ; H y", "--events", str(fire_csv), *options)
    assert status == 2 and out == "", err
    assert "Traceback" not in err and err.strip().splitlines()[-1].startswith(
        ("cepkit: error: --engine/-o: ", "error: ")
    )


@pytest.mark.parametrize("hierarchy", ['{"X": 5}', '{"X": [1]}', '{"X": ["Y", 2]}', '{"X": "Y"}'])
def test_a_hierarchy_that_is_not_concept_lists_is_a_usage_error(capsys, fire_csv, hierarchy):
    status, _, err = in_process(capsys, "match", "T x", "--events", str(fire_csv), "--hierarchy", hierarchy)
    assert status == 2 and "--hierarchy maps each concept to a list of its children" in err


def test_partition_by_a_nested_json_value(capsys, tmp_path):
    events = [{"type": "A", "ts": 0, "id": {"k": 1}}, {"type": "B", "ts": 1, "id": [1]}]
    (tmp_path / "nested.json").write_text(json.dumps(events))
    status, out, err = in_process(
        capsys, "match", "A a ; B b PARTITION BY id", "--events", str(tmp_path / "nested.json")
    )
    assert status in (0, 2) and "Traceback" not in err
    if status == 2:
        assert "field 'id'" in one_line_error(err)


def test_a_missing_column_is_named_with_the_flags_not_the_librarys_keywords(capsys, tmp_path):
    path = tmp_path / "own.csv"
    pd.DataFrame({"type": ["A", "B"], "event": ["a", "b"], "when": [1, 2]}).to_csv(path, index=False)
    status, _, err = in_process(capsys, "match", "A a ; B b", "--events", str(path), "--ts", "wen")
    assert status == 2 and "no column 'wen' for --ts (columns: 'type', 'event', 'when'); did you mean 'when'?" in err
    status, _, err = in_process(capsys, "match", "A a ; B b", "--events", str(path), "--type", "event")
    assert status == 2 and "the data has a 'type' column and --type event names another" in err
    assert "(or leave --type out to use it)" in err and "type=" not in err
    pd.DataFrame({"event": ["a", "b"], "ts": [1, 2]}).to_csv(path, index=False)
    status, _, err = in_process(capsys, "match", "A a ; B b", "--events", str(path))
    assert status == 2 and "pass --type event to read the type from it" in err


def test_fields_add_the_matched_events_values_under_the_users_names(capsys, tmp_path):
    path = tmp_path / "own.csv"
    pd.DataFrame({"event": ["A", "B"], "when": [1, 2], "user": [7, 8]}).to_csv(path, index=False)
    run = ("match", "A a ; B b", "--events", str(path), "--type", "event", "--ts", "when", "--format", "json")
    status, out, _ = in_process(capsys, *run, "--fields", "a.user,b.when")
    assert status == 0 and json.loads(out) == [
        {"match_id": 0, "positions": [0, 1], "a": 0, "b": 1, "a.user": 7, "b.when": 2}
    ]
    status, out, _ = in_process(capsys, *run, "--fields", "all")
    assert status == 0 and {"a.when", "a.user", "b.when", "b.user"} <= set(json.loads(out)[0])
    status, _, err = in_process(capsys, *run, "--fields", "a.usr")
    assert (
        status == 2
        and err.startswith("error: unknown attribute 'usr' in field 'a.usr'")
        and "did you mean 'user'?" in err
    )


def test_a_reader_that_goes_away_is_no_traceback(tmp_path):
    """``cepkit match ... | head -1``: the pipe closes while the matches are written."""
    path = tmp_path / "many.csv"
    pd.DataFrame({"type": ["A", "B"] * 300, "ts": range(600)}).to_csv(path, index=False)  # 45,150 matches
    reader = subprocess.Popen(
        [sys.executable, "-m", "cepkit", "match", "A a ; B b", "--events", str(path), "--format", "csv"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert reader.stdout.readline() == b"match_id,positions,a,b\n"
    reader.stdout.close()  # as head does after its lines
    stderr = reader.stderr.read().decode()
    # (stderr may hold the note a first compilation of the kernels prints, on a stale numba cache)
    assert reader.wait(timeout=300) == 1 and "Traceback" not in stderr and "Error" not in stderr


def test_match_runs_match_recognize_over_the_file_as_a_table(capsys, tmp_path):
    """A MATCH_RECOGNIZE query given to ``cepkit match`` was a parse error of cepkit's language at the word."""
    path = tmp_path / "prices.csv"
    prices = pd.DataFrame({"day": [f"2024-05-0{d}" for d in range(1, 7)], "price": [5, 3, 2, 4, 6, 1]})
    prices.to_csv(path, index=False)
    query = (
        "SELECT * FROM prices MATCH_RECOGNIZE (ORDER BY day MEASURES LAST(DOWN.price) AS bottom, LAST(UP.price) AS "
        "back PATTERN (DOWN+ UP+) WITHIN INTERVAL '3' DAY DEFINE DOWN AS price < PREV(price), UP AS price > PREV(price))"
    )
    status, out, _ = in_process(capsys, "match", query, "--events", str(path), "--ts", "day", "--format", "json")
    assert status == 0 and json.loads(out) == [{"bottom": 2, "back": 4}]
    assert json.loads(out) == cepkit.sql(query, prices.assign(day=pd.to_datetime(prices.day))).to_dict("records")
    status, _, err = in_process(capsys, "match", query, "--events", str(path), "--engine", "stack")
    assert status == 2 and "--engine: not for MATCH_RECOGNIZE" in err


def test_the_query_is_checked_before_the_file_is_read(capsys, tmp_path):
    path = tmp_path / "broken.csv"
    path.write_text('type,ts\nA,"1\n')  # a quote never closed: an error of the file, if it were read
    status, _, err = in_process(capsys, "match", "A a ; B b WITHN 3", "--events", str(path))
    assert status == 2 and "did you mean WITHIN?" in err


def test_version(capsys):
    status, out, _ = in_process(capsys, "--version")
    assert status == 0 and out == f"cepkit {cepkit.__version__}\n"
