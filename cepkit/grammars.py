"""The lark parsers of cepkit's two notations, each built from its grammar once per machine: building
an LALR table takes ~0.1-0.3 s of CPU, loading it back ~0.01 s, which a notebook's first query and each
fresh Spark worker would otherwise pay.

The table is kept in the user's cache (``$XDG_CACHE_HOME/cepkit``, else ``~/.cache/cepkit``), never in a
shared temporary directory: it is a pickle, so only a directory the user owns is read. Its first line is
a hash of the grammar, the parser's options and lark's and Python's versions; a table whose hash differs,
or that fails to load, is built again. It is written to a temporary file then renamed, so processes
starting together (pytest's workers, Spark's) never read one half written. Where nothing can be written
the parser is built each time.
"""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Optional

import lark

OPTIONS = dict(parser="lalr", lexer="contextual", propagate_positions=True, maybe_placeholders=False)


def cache_dir() -> Optional[Path]:
    """The user's own directory for cepkit's parser tables, created private (0700); None when there is
    no writable one or it is not the user's."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    path = Path(base) / "cepkit"
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        owned = path.stat().st_uid == os.getuid() and os.access(path, os.W_OK)
    except OSError:
        return None
    return path if owned else None


@lru_cache(maxsize=None)
def parser(package: str) -> lark.Lark:
    """The LALR parser of ``package``'s ``grammar.lark`` (``cepkit.lang``, ``cepkit.match_recognize``)."""
    grammar = resources.files(package).joinpath("grammar.lark").read_text()
    stamp = hashlib.sha256(f"{grammar}{sorted(OPTIONS.items())}{lark.__version__}{sys.version_info[:2]}".encode())
    header = stamp.hexdigest().encode() + b"\n"
    where = cache_dir()
    table = where / f"{package}.lark-table" if where is not None else None
    if table is not None:
        try:
            with open(table, "rb") as f:
                if f.readline() == header:
                    return lark.Lark.load(f)
        except Exception:  # missing, or not a table lark can read: build it again
            pass
    built = lark.Lark(grammar, **OPTIONS)
    if table is not None:
        try:
            with tempfile.NamedTemporaryFile("wb", dir=table.parent, delete=False) as f:
                f.write(header)
                built.save(f)
            os.replace(f.name, table)
        except OSError:
            pass
    return built
