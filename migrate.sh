#!/usr/bin/env bash
# Quick start, first command: set up .venv, then migrate the installed torch and onnxscript into out/.
set -euo pipefail
cd "$(dirname "$0")"
source scripts/venv.sh
exec dtype-migrate --out out --report out/report.json "$@"
