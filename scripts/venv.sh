#!/usr/bin/env bash
# Creates .venv (once) and installs the project into it; sourced by the two quick-start scripts.
# VENV_EXTRAS names the optional dependencies to install beside it (test.sh: "test,models"; migrate.sh: none).
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
  # uv installs the wheels (torch's thousands of files) in a fraction of pip's time, with the same wheel sources as pip
  # is configured with (its find-links); pip is the fallback. Neither compiles the modules: each is compiled when first imported.
  links="${PIP_FIND_LINKS:-$("$venv/bin/python" -m pip config get global.find-links 2>/dev/null || true)}"
  if ! { { "$venv/bin/python" -m uv --version || "$venv/bin/python" -m pip install -q uv; } && "$venv/bin/python" -m uv pip install --python "$venv/bin/python" \
           ${links:+--find-links "$links"} -e "$root${extras:+[$extras]}"; } > "$venv/install.log" 2>&1 &&
     ! "$venv/bin/python" -m pip install --no-compile -e "$root${extras:+[$extras]}" >> "$venv/install.log" 2>&1; then
    cat "$venv/install.log" >&2
    exit 1
  fi
  touch "$stamp"
fi
export PATH="$venv/bin:$PATH"
# Every interpreter a run or the suite starts (fork servers, workers, subprocesses) imports torch and the OpInfo
# database: compiled once into the venv's own bytecode folder, they import in a third of the time. Compiling them on
# every import, as PYTHONDONTWRITEBYTECODE asks, was the largest single cost of the test suite; nothing is written
# beside the installed sources.
unset PYTHONDONTWRITEBYTECODE
export PYTHONPYCACHEPREFIX="$venv/bytecode"
