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
# The browser test (tests/test_reference_full.py) drives Debian's Chromium headless; nothing is downloaded at test time.
if [ ! -x /usr/bin/chromium ] && command -v apt-get > /dev/null; then
  echo "installing chromium (once) ..." >&2
  if ! { apt-get update && apt-get install -y chromium; } > "$venv/chromium-install.log" 2>&1; then
    echo "could not install chromium (see $venv/chromium-install.log); the browser test will fail" >&2
  fi
fi
export PATH="$venv/bin:$PATH"
