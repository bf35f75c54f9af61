#!/usr/bin/env bash
# Set up everything cepkit needs on a fresh Debian machine; idempotent, and fast when already done.
#
#   scripts/setup.sh demo   # .venv with the project (Spark, plotly...), a Java >= 17 check and, when
#                           # running as root, Debian's graphviz (dot lays out the automaton and lattice views)
#   scripts/setup.sh test   # the same plus the test extras (pytest, nbval, hypothesis, playwright) and,
#                           # when running as root, Debian's chromium for the browser tests
#
# The Python install is skipped when a stamp file in .venv records the same pyproject.toml hash, extras
# and interpreter; edit pyproject.toml (or delete .venv) to force a reinstall. Never runs
# `playwright install`: the browser tests use Debian's /usr/bin/chromium (docs/testing.md).
set -euo pipefail

cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}
PYTHON=${PYTHON:-python3}
MIN_JAVA=17

say() { printf '[setup] %s\n' "$*"; }
die() { printf '[setup] error: %s\n' "$*" >&2; exit 1; }
as_root() { [ "$(id -u)" = 0 ]; }

apt_install() {
    # Debian packages, only as root; the package lists are refreshed once per run. Another apt running
    # (unattended upgrades, a second setup) holds the lock: wait for it up to 10 minutes.
    local wait=(-o DPkg::Lock::Timeout=600)
    if [ -z "${APT_UPDATED:-}" ]; then
        DEBIAN_FRONTEND=noninteractive apt-get "${wait[@]}" update -qq
        APT_UPDATED=1
    fi
    DEBIAN_FRONTEND=noninteractive apt-get "${wait[@]}" install -y -qq --no-install-recommends "$@"
}

ensure_python() {
    command -v "$PYTHON" >/dev/null || die "$PYTHON not found: install Python 3.10 or newer (3.11 recommended)"
    "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 10))' \
        || die "$("$PYTHON" -V 2>&1) is too old: cepkit needs Python 3.10 or newer (3.11 recommended)"
    if ! "$PYTHON" -c 'import venv, ensurepip' 2>/dev/null; then
        as_root && command -v apt-get >/dev/null || die "$PYTHON lacks venv/ensurepip: install python3-venv"
        say "installing python3-venv"
        apt_install python3-venv
    fi
}

java_major() {
    # 17 from 'openjdk version "17.0.15" 2025-04-15' (or 8 from '"1.8.0_392"'); empty without java.
    command -v java >/dev/null || return 0
    java -version 2>&1 | sed -n 's/.*version "\([0-9][0-9.]*\).*/\1/p' | head -n1 \
        | awk -F. '{ print ($1 == 1 ? $2 : $1) }'
}

ensure_java() {
    local major
    major=$(java_major)
    if [ -z "$major" ] || [ "$major" -lt "$MIN_JAVA" ]; then
        if as_root && command -v apt-get >/dev/null; then
            say "Spark needs Java >= $MIN_JAVA (found: ${major:-none}); installing openjdk-17-jre-headless"
            apt_install openjdk-17-jre-headless
            major=$(java_major)
        fi
    fi
    if [ -z "$major" ]; then
        die "Java not found. Spark needs Java >= $MIN_JAVA on PATH: on Debian/Ubuntu run
        sudo apt-get install openjdk-17-jre-headless   (or use environment.yml with conda)"
    fi
    if [ "$major" -lt "$MIN_JAVA" ]; then
        die "Java $major found ($(command -v java)), but Spark 4 needs Java >= $MIN_JAVA: install
        openjdk-17-jre-headless, or put a newer java first on PATH / set JAVA_HOME"
    fi
}

ensure_chromium() {
    [ -x /usr/bin/chromium ] && return 0
    if as_root && command -v apt-get >/dev/null; then
        say "installing Debian's chromium for the browser tests"
        apt_install chromium
    else
        say "note: /usr/bin/chromium is missing and this is not root: the browser tests will be skipped"
    fi
}

ensure_graphviz() {
    # Graphviz dot places the states and edge labels of AutomatonView and ECubeView (widgets/graph_layout.py);
    # without it the views fall back to a simpler layout whose labels may touch.
    command -v dot >/dev/null && return 0
    if as_root && command -v apt-get >/dev/null; then
        say "installing Debian's graphviz (dot lays out the automaton and lattice drawings)"
        apt_install graphviz
    else
        say "note: Graphviz dot is missing and this is not root: the graph views use a simpler layout"
    fi
}

ensure_project() {
    # $1: pip extras ("" or "dev,browser"). Reinstalls only when pyproject.toml, extras or python changed.
    local extras=$1 target=. key stamp
    [ -n "$extras" ] && target=".[$extras]"
    [ -x "$VENV/bin/python" ] || { say "creating $VENV"; "$PYTHON" -m venv "$VENV"; }
    key="$(sha256sum pyproject.toml | cut -d' ' -f1) extras=$extras $("$VENV/bin/python" -V 2>&1)"
    stamp="$VENV/.cepkit-setup-${extras:-base}"
    stamp=${stamp//,/-}
    if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$key" ]; then
        return 0
    fi
    say "installing cepkit ($target) into $VENV; the first time downloads pyspark (~450 MB)"
    export PIP_DISABLE_PIP_VERSION_CHECK=1
    "$VENV/bin/python" -m pip install --progress-bar off -q -e "$target"
    printf '%s\n' "$key" > "$stamp"
    say "installed"
    # numba compiles the engines' kernels on their first call (~40 s of CPU for all, 13-18 s for the
    # automaton's): do it now, into numba's cache (__pycache__, or NUMBA_CACHE_DIR), so that the first
    # query of a notebook, a test or a Spark worker finds them compiled (bench/cold_start.py)
    if "$VENV/bin/python" -c 'import numba' 2>/dev/null; then
        say "compiling the numba kernels (cepkit warmup)"
        "$VENV/bin/python" -m cepkit warmup -q || say "note: cepkit warmup failed; kernels compile on first use"
    fi
}

case "${1:-}" in
    demo) ensure_python; ensure_project ""; ensure_java; ensure_graphviz ;;
    test) ensure_python; ensure_project "dev,browser"; ensure_java; ensure_graphviz; ensure_chromium ;;
    *) die "usage: scripts/setup.sh demo|test" ;;
esac
