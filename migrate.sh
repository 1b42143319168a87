#!/usr/bin/env bash
# Quick start, first command: set up .venv, then migrate the installed torch and onnxscript into out/.
# First the full run (arguments go to it), then the review of one op: its diff, from the stages the run cached.
set -euo pipefail
cd "$(dirname "$0")"
source scripts/venv.sh  # no extras: the tiny models' runs come from the shipped recording
echo "== full run: dtype-migrate --out out --report out/report.json $*"
dtype-migrate --out out --report out/report.json "$@"
echo
echo "== dry run for one op: dtype-migrate --op scaled_dot_product_attention --dry-run"
dtype-migrate --op scaled_dot_product_attention --dry-run
echo "The migrated native_functions.yaml and type_constraints.yaml are in out/, the rewritten torchlib in out/torch_lib/; the plan with its evidence is out/report.json."
