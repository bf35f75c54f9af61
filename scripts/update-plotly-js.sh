#!/usr/bin/env bash
# Replace widgets/plotly-basic.min.js by npm's plotly.js-basic-dist-min of the version the installed plotly.py
# ships (run after upgrading plotly; tests/widgets/test_figures.py fails while the two differ). Needs npm.
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION=$(.venv/bin/python -c "import plotly.offline; print(plotly.offline.get_plotlyjs_version())")
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
(cd "$WORK" && npm pack --silent "plotly.js-basic-dist-min@$VERSION" >/dev/null && tar xzf ./*.tgz)
cp "$WORK/package/plotly-basic.min.js" widgets/plotly-basic.min.js
echo "widgets/plotly-basic.min.js is plotly.js basic v$VERSION"
