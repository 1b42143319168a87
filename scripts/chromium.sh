#!/usr/bin/env bash
# The browser test (tests/test_reference_full.py) drives Debian's Chromium headless; sourced by test.sh only
# (the main job needs no browser). Nothing is downloaded at test time.
set -euo pipefail
if [ ! -x /usr/bin/chromium ] && command -v apt-get > /dev/null; then
  echo "installing chromium (once) ..." >&2
  log="$(dirname "${BASH_SOURCE[0]}")/../.venv/chromium-install.log"
  if ! { apt-get update && apt-get install -y chromium; } > "$log" 2>&1; then
    echo "could not install chromium (see $log); the browser test will fail" >&2
  fi
fi
