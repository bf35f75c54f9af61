"""The fuzz suite's inputs: every query string written in tests/, docs/ and notebooks/ (quoted or back-quoted
text that parses, extracted once into ``queries.json``), their mutations, and malformed event files.

``CEPKIT_FUZZ_SIZE`` sets how many mutations a run draws (a small fixed slice in ``make test``, thousands
in ``make fuzz``); ``CEPKIT_FUZZ_SEED`` picks them (fixed by default, so ``make test`` is repeatable).
"""

from __future__ import annotations

import ast
import json
import os
import random
import re
from functools import lru_cache
from pathlib import Path

from cepkit.errors import QueryError
from cepkit.lang.parser import parse_tree

ROOT = Path(__file__).resolve().parents[2]
SIZE = int(os.environ.get("CEPKIT_FUZZ_SIZE", "60"))
SEED = int(os.environ.get("CEPKIT_FUZZ_SEED", "15"))
TIME_LIMIT = int(os.environ.get("CEPKIT_FUZZ_TIME_LIMIT", "20"))  # seconds per parse or engine run

# Splinters mutations insert: keywords, punctuation, edge numbers, every line break, quotes and junk.
SPLINTERS = (
    "SEQ(",
    "AND(",
    "OR(",
    "{",
    "}",
    "(",
    ")",
    ",",
    ";",
    "+",
    "!",
    "FILTER",
    "WHERE",
    "WITHIN",
    "EVENTS",
    "s",
    "PARTITION BY id",
    "CONSUME BY ANY",
    "RETURN a",
    "SELECT NEXT *",
    "PATTERN",
    "NEXT(",
    "MAX(",
    "LAST(",
    "ANY",
    "not",
    "and",
    "or",
    "IN (1, 2)",
    "a.v",
    "b[i].v",
    "count(b)",
    "prev(b.v)",
    "1e309",
    "9" * 320,
    "-",
    "0.5",
    "9999999999999999999",
    "'x'",
    '"',
    "'",
    "`",
    "`SEQ`",
    "\n",
    "\r",
    "\r\n",
    "\x0b",
    "\x0c",
    "\x1c",
    "\x85",
    "\u2028",
    "#",
    "-- ",
    "@",
    "\x00",
    "é",
    "A a",
    "B+ b",
    "ANY+ x",
    "EXISTS",
    "=",
    "<=",
    "!=",
)


def _candidates_in_python(text: str):
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield node.value


def _candidates_in_notebook(text: str):
    for cell in json.loads(text).get("cells", ()):
        source = "".join(cell.get("source", ()))
        if cell.get("cell_type") == "code":
            yield from _candidates_in_python(source)
        else:
            yield from re.findall(r"`([^`\n]+)`", source)


def _queries_of(path: Path):
    text = path.read_text(encoding="utf-8", errors="replace")
    if path.suffix == ".py":
        return _candidates_in_python(text)
    if path.suffix == ".ipynb":
        return _candidates_in_notebook(text)
    return re.findall(r"`([^`\n]+)`", text)


QUERIES_FILE = Path(__file__).with_name("queries.json")


@lru_cache(maxsize=1)
def written_queries() -> tuple:
    """The query texts of ``queries.json`` (``python tests/fuzz/corpus.py`` extracts them again)."""
    return tuple(json.loads(QUERIES_FILE.read_text(encoding="utf-8")))


def extract_queries() -> tuple:
    """Every distinct query text in tests/, docs/ and notebooks/ (and the README) that parses."""
    paths = [
        ROOT / "README.md",
        *sorted((ROOT / "docs").glob("*.md")),
        *sorted((ROOT / "notebooks").glob("*.ipynb")),
        *sorted(p for p in (ROOT / "tests").rglob("*.py") if "fuzz" not in p.parts),
    ]
    found = set()
    for path in paths:
        for text in _queries_of(path):
            if 2 < len(text) < 400 and re.search(r"[A-Za-z]\w*[ (;+]", text) and text not in found:
                try:
                    parse_tree(text)
                except QueryError:
                    continue
                found.add(text)
    return tuple(sorted(found))


def mutate(text: str, rng: random.Random, others: tuple) -> str:
    """One to three edits: delete, duplicate or swap a slice, insert a splinter, splice another query."""
    for _ in range(rng.randint(1, 3)):
        n = len(text)
        i, j = sorted(rng.randrange(n + 1) for _ in range(2))
        kind = rng.randrange(6)
        if kind == 0:
            text = text[:i] + text[j:]
        elif kind == 1:
            text = text[:j] + text[i:j] + text[j:]
        elif kind == 2:
            text = text[:i] + rng.choice(SPLINTERS) + text[i:]
        elif kind == 3:
            other = rng.choice(others)
            k = rng.randrange(len(other) + 1)
            text = text[:i] + other[k:] if rng.random() < 0.5 else other[:k] + text[i:]
        elif kind == 4:
            text = text[:i] + text[j:] + text[i:j]
        else:
            text = text[:i] + rng.choice(SPLINTERS) * rng.randint(2, 400) + text[i:]
    return text


def mutations(size: int = SIZE, seed: int = SEED) -> list:
    rng = random.Random(seed)
    queries = written_queries()
    return [mutate(rng.choice(queries), rng, queries) for _ in range(size)]


# ----------------------------------------------------------------------------- malformed event files
GOOD_CSV = b"type,ts,v,id\nA,0,1,1\nB,1,2,1\nC,2,3,2\nA,3,4,2\n"
GOOD_JSON = json.dumps([{"type": t, "ts": i, "v": i, "id": i % 2} for i, t in enumerate("ABCA")]).encode()
GOOD_JSONL = b"\n".join(json.dumps({"type": t, "ts": i, "v": i}).encode() for i, t in enumerate("ABCA"))


def damaged_files(size: int = SIZE, seed: int = SEED) -> list:
    """(suffix, bytes): good CSV/JSON/JSONL files truncated, with bytes flipped, inserted or dropped."""
    rng = random.Random(seed)
    out = []
    for _ in range(size):
        suffix, good = rng.choice(
            [(".csv", GOOD_CSV), (".json", GOOD_JSON), (".jsonl", GOOD_JSONL), (".parquet", GOOD_CSV)]
        )
        data = bytearray(good)
        for _ in range(rng.randint(1, 4)):
            k = rng.randrange(len(data) + 1)
            kind = rng.randrange(4)
            if kind == 0:
                del data[k:]
            elif kind == 1 and k < len(data):
                data[k] = rng.randrange(256)
            elif kind == 2:
                data[k:k] = rng.choice([b",", b'"', b"\n", b"\xff", b"\xef\xbb\xbf", b"{", b"]", b"x"])
            elif k < len(data):
                del data[k]
        out.append((suffix, bytes(data)))
    return out


if __name__ == "__main__":
    QUERIES_FILE.write_text(json.dumps(extract_queries(), indent=0, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"{len(written_queries.__wrapped__())} queries in {QUERIES_FILE}")
