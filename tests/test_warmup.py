"""``cepkit warmup`` (``cepkit/warmup.py``): after it, a fresh interpreter's first queries find every numba
kernel they call in the cache and compile nothing (issue 22's cold start). Both runs use numba's default
cache (``__pycache__`` beside the sources), which ``scripts/setup.sh`` fills at install: seconds here; a
clean checkout compiles once (~40 s of CPU), as its first tests would anyway."""

import json
import logging
import os
import subprocess
import sys
import textwrap

import pytest

from cepkit.engines.automaton import kernel

FIRST_QUERIES = textwrap.dedent("""
    import json
    from numba.core import event
    compiled = []

    class Count(event.Listener):
        def on_start(self, e):
            compiled.append(e.data["dispatcher"].py_func.__qualname__)

        def on_end(self, e):
            pass

    event.register("numba:compile", Count())
    import cepkit
    from cepkit.warmup import events
    frame = events(200)
    engines = {}
    for query in ["A x ; B y", "A x ; B+ y ; C z WITHIN 20", "A x ; B y PARTITION BY id"]:
        engines[query] = cepkit.match(query, frame).engine
        cepkit.match(query, frame.to_dict("records")).positions()
    cepkit.match("SEQ(A x, B y) WHERE x.v < y.v", frame, engine="rcep").positions()
    print(json.dumps({"compiled": compiled, "engines": engines}))
""")


def _run(code: str, **env) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=900, env={**os.environ, **env}
    )


@pytest.mark.skipif(not kernel.COMPILED, reason="numba is not installed or NUMBA_DISABLE_JIT is set")
def test_after_warmup_the_first_queries_compile_nothing():
    warmed = _run("import cepkit.warmup as w; print(len(w.warm_up()))")
    assert warmed.returncode == 0, warmed.stderr
    first = _run(FIRST_QUERIES)
    assert first.returncode == 0, first.stderr
    found = json.loads(first.stdout.strip().splitlines()[-1])
    assert "automaton" in found["engines"].values()  # the default choice compiles kernels: it was warmed
    assert found["compiled"] == []


def test_the_warmup_command_runs_every_engine_with_kernels():
    """Without numba the same command only runs the queries (the pure-Python path), quickly."""
    done = subprocess.run(
        [sys.executable, "-m", "cepkit", "warmup"],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "NUMBA_DISABLE_JIT": "1"},
    )
    assert done.returncode == 0, done.stderr
    engines = {line.split()[0] for line in done.stdout.splitlines()}
    assert engines == {"automaton", "rcep", "ses", "recognize"}


def test_an_engines_first_compilation_is_announced_once(monkeypatch):
    """A first call on a clean cache compiles for seconds: a note says so, once per engine and process,
    to a listener (the Workbench's status line) or else to the log (stderr where logging is not set up)."""
    import numba

    from cepkit.engines import compiled
    from cepkit.warmup import compile_notes

    monkeypatch.setattr(compiled, "_noted", set())
    scope = {"__name__": "cepkit.engines.automaton.a_test_kernel"}  # as numba sees a kernel of that engine
    exec("def add_one(x):\n    return x + 1\n", scope)
    notes = []
    with compile_notes(notes.append):
        assert numba.njit(scope["add_one"])(1) == 2  # not cached: numba compiles it
        assert numba.njit(scope["add_one"])(2) == 3  # the engine's second compilation: no second note
    assert len(notes) == 1 and notes[0].startswith("compiling the automaton's kernels once, ~")
    assert "cepkit warmup" in notes[0]
    assert compiled.compile_note("cepkit.engines.automaton.nodes") is None  # said already
    assert compiled.compile_note("cepkit.runtime.type_codes") is None  # under a second: no note
    assert compiled.compile_note("cepkit.engines.rcep.kernel").startswith("compiling rcep's kernels")


def test_the_note_goes_to_stderr_where_logging_is_not_set_up(monkeypatch, capsys):
    from cepkit.engines import compiled

    quiet = logging.getLogger("cepkit-test-unconfigured")
    quiet.propagate = False
    monkeypatch.setattr(compiled, "log", quiet)
    compiled.say("compiling the automaton's kernels once, ~10 s")
    assert capsys.readouterr().err == "cepkit: compiling the automaton's kernels once, ~10 s\n"


KERNEL = "from cepkit.engines.compiled import jit\n\n\n@jit\ndef add_one(x):\n    return x + 1\n"

# the kernel's directory made read-only as far as cepkit can tell (the tests may run as root, whom file
# modes do not stop): everything else is as a system install's user finds it
READ_ONLY = textwrap.dedent("""
    import json, sys
    import cepkit.engines.compiled as compiled
    real = compiled.writable
    compiled.writable = lambda directory: not directory.startswith(sys.argv[1]) and real(directory)
    import a_kernel
    stats = a_kernel.add_one.stats
    print(json.dumps({"value": a_kernel.add_one(1), "path": a_kernel.add_one.stats.cache_path,
                      "hits": sum(stats.cache_hits.values()), "misses": sum(stats.cache_misses.values())}))
""")


@pytest.mark.skipif(not kernel.COMPILED, reason="numba is not installed or NUMBA_DISABLE_JIT is set")
def test_a_read_only_install_caches_in_the_users_cache_seeded_with_its_own(tmp_path):
    source = tmp_path / "site"
    source.mkdir()
    (source / "a_kernel.py").write_text(KERNEL)
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env.update(PYTHONPATH=str(source), TMPDIR=str(tmp_path))
    installed = subprocess.run(  # the installer's warmup: cached beside the source
        [sys.executable, "-c", "import a_kernel; a_kernel.add_one(1)"], capture_output=True, text=True, env=env
    )
    assert installed.returncode == 0, installed.stderr
    assert list((source / "__pycache__").glob("a_kernel.add_one-*.nbi"))

    def user(cache_home: str) -> dict:
        done = subprocess.run(
            [sys.executable, "-c", READ_ONLY, str(source)],
            capture_output=True,
            text=True,
            env={**env, "XDG_CACHE_HOME": cache_home},
            timeout=300,
        )
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout.strip().splitlines()[-1])

    found = user(str(tmp_path / "home-cache"))  # the user's own cache: found there, compiled by the installer
    assert found["value"] == 2 and found["hits"] == 1 and found["misses"] == 0
    assert found["path"].startswith(str(tmp_path / "home-cache" / "cepkit" / "numba"))
    (tmp_path / "not-a-directory").write_text("")
    found = user(str(tmp_path / "not-a-directory" / "cache"))  # no writable cache: a private temporary one
    assert found["value"] == 2 and found["hits"] == 1
    assert found["path"].startswith(str(tmp_path / f"cepkit-numba-{os.getuid()}"))
