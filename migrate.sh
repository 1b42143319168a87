#!/usr/bin/env bash
# Quick start, first command: set up .venv, then migrate the installed torch and onnxscript into out/.
# First the review of one op (a dry run: its diff), then the full run; arguments go to the full run.
set -euo pipefail
cd "$(dirname "$0")"
source scripts/venv.sh
echo "== dry run for one op: dtype-migrate --op scaled_dot_product_attention --dry-run"
dtype-migrate --op scaled_dot_product_attention --dry-run
echo
echo "== full run: dtype-migrate --out out --report out/report.json $*"
dtype-migrate --out out --report out/report.json "$@"
echo "The migrated native_functions.yaml and type_constraints.yaml are in out/, the rewritten torchlib in out/torch_lib/; the plan with its evidence is out/report.json."
