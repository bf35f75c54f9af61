#!/usr/bin/env bash
# Bundle scripts/editor/editor.js (cepkit's query editor: CodeMirror 6, versions pinned in
# scripts/editor/package-lock.json) into widgets/cepkit-editor.js, the one ES module the package ships and
# widgets/editor.py loads (no CDN at run time). Run after changing editor.js or its dependencies. Needs npm.
set -euo pipefail
cd "$(dirname "$0")/editor"
npm ci --no-audit --no-fund --silent
npx esbuild editor.js --bundle --format=esm --minify --legal-comments=none --target=es2020 \
    --banner:js="/* cepkit query editor (scripts/editor/editor.js) bundled with CodeMirror 6, @lezer, style-mod, crelt, w3c-keyname (MIT licence, Marijn Haverbeke and others) */" \
    --outfile=../../widgets/cepkit-editor.js
echo "widgets/cepkit-editor.js: $(wc -c < ../../widgets/cepkit-editor.js) bytes"
