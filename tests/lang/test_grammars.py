"""The parsers' tables kept in the user's cache (cepkit/grammars.py): built once, loaded after, built again
when stale or damaged, never read from a directory the user does not own."""

import os

import lark
import pytest

from cepkit import grammars

QUERY = "A a ; (B b FILTER b.v > 1)+ ; C c WITHIN 5 s PARTITION BY id"
BAD = "A a ; B b WITHN 5 s"


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    loads = []
    load = lark.Lark.load
    monkeypatch.setattr(lark.Lark, "load", classmethod(lambda cls, f: loads.append(f.name) or load(f)))
    return tmp_path / "cepkit", loads


def build(package="cepkit.lang"):
    return grammars.parser.__wrapped__(package)  # past the per-process lru_cache


def expected_at(parser, text):
    with pytest.raises(lark.exceptions.UnexpectedInput) as caught:
        parser.parse(text)
    return type(caught.value), caught.value.column, getattr(caught.value, "expected", None)


def test_a_table_is_built_once_then_loaded_and_parses_the_same(cache):
    where, loads = cache
    built = build()
    table = where / "cepkit.lang.lark-table"
    assert table.exists() and not loads
    loaded = build()
    assert loads == [str(table)]
    assert loaded.parse(QUERY) == built.parse(QUERY)
    assert expected_at(loaded, BAD) == expected_at(built, BAD)  # errors name the same place and tokens
    build("cepkit.match_recognize")
    assert sorted(p.name for p in where.iterdir()) == ["cepkit.lang.lark-table", "cepkit.match_recognize.lark-table"]


def test_a_damaged_or_stale_table_is_built_again(cache):
    where, loads = cache
    build()
    table = where / "cepkit.lang.lark-table"
    whole = table.read_bytes()
    table.write_bytes(whole[:200])  # a write cut short
    assert build().parse(QUERY) is not None and table.read_bytes()[:65] == whole[:65]
    table.write_bytes(b"0" * 64 + whole[64:])  # another grammar's or lark version's table
    loads.clear()
    build()
    assert not loads and table.read_bytes()[:65] == whole[:65]  # not loaded: its hash differs; replaced
    build()
    assert loads == [str(table)]


def test_no_table_in_a_directory_that_is_not_the_users(cache, monkeypatch):
    where, loads = cache
    real_uid = os.getuid()
    monkeypatch.setattr(os, "getuid", lambda: real_uid + 1)  # the directory as another user sees it
    assert grammars.cache_dir() is None
    build()
    assert not loads and not any(where.iterdir())
