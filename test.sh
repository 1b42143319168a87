#!/usr/bin/env bash
# Quick start, second command: set up .venv (with the test dependencies) and Chromium, then run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")"
VENV_EXTRAS=test,models source scripts/venv.sh
source scripts/chromium.sh
exec python -m pytest -n 2 --dist loadfile --no-loadscope-reorder "$@"
