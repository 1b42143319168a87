#!/usr/bin/env bash
# Creates .venv (once) and installs the project into it; sourced by the two quick-start scripts.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$root/.venv"
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
stamp="$venv/.installed-$(cat "$root/pyproject.toml" | sha256sum | cut -c1-16)"
if [ ! -e "$stamp" ]; then
  echo "setting up $venv (once) ..." >&2
  if ! "$venv/bin/python" -m pip install -e "$root[test]" > "$venv/install.log" 2>&1; then
    cat "$venv/install.log" >&2
    exit 1
  fi
  rm -f "$venv"/.installed-*
  touch "$stamp"
fi
export PATH="$venv/bin:$PATH"
