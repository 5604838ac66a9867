#!/usr/bin/env bash
# Harbor's tool venv (.venv-harbor): Harbor's own code reads Harbor task directories for
# `meta-agent tasks import DIR`. Harbor needs Python >= 3.12 and meta-agent runs on 3.11, so it gets a venv
# of its own, made from the first python3.12+ found (PATH, then pyenv's versions). Without one this says so
# and succeeds: everything else works, and importing Harbor tasks says what is missing.
set -euo pipefail
VENV=${1:-.venv-harbor}
STAMP="$VENV/.installed"
if [ -f "$STAMP" ] && [ "$STAMP" -nt constraints-harbor.txt ]; then exit 0; fi
PY=""
for candidate in python3.13 python3.12 "$HOME"/.pyenv/versions/3.13*/bin/python "$HOME"/.pyenv/versions/3.12*/bin/python; do
  if command -v "$candidate" >/dev/null 2>&1 && "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 12))'; then
    PY=$(command -v "$candidate"); break
  fi
done
if [ -z "$PY" ]; then
  echo "harbor-venv: no Python >= 3.12 found; Harbor tasks cannot be imported on this machine (everything else works)"
  exit 0
fi
echo "harbor-venv: $VENV from $PY"
"$PY" -m venv "$VENV"
"$VENV/bin/pip" install -q -c constraints-harbor.txt harbor==0.25.0
touch "$STAMP"
