#!/usr/bin/env bash
# Quick start, second command: set up .venv and run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")"
source scripts/venv.sh
exec python -m pytest -n 2 "$@"
