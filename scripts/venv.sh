#!/usr/bin/env bash
# Creates .venv (once) and installs the project into it; sourced by the two quick-start scripts.
# VENV_EXTRAS names the optional dependencies to install beside it (test.sh: "test,models"; migrate.sh: "models").
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$root/.venv"
extras="${VENV_EXTRAS:-}"
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
stamp="$venv/.installed-$( (cat "$root/pyproject.toml"; echo "extras=$extras") | sha256sum | cut -c1-16)"
if [ ! -e "$stamp" ]; then
  echo "setting up $venv (once${extras:+, with [$extras]}) ..." >&2
  # --no-compile: compiling every installed module (torch's thousands) took two thirds of the install; a module
  # is compiled when first imported instead.
  if ! "$venv/bin/python" -m pip install --no-compile -e "$root${extras:+[$extras]}" > "$venv/install.log" 2>&1; then
    cat "$venv/install.log" >&2
    exit 1
  fi
  touch "$stamp"
fi
export PATH="$venv/bin:$PATH"
