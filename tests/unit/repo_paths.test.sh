#!/usr/bin/env bash
# Every repository path a Markdown file or a C comment names exists (tests/support/check_paths.py
# says what counts as a path). A file moved or deleted without its references fails here, with
# each dangling reference listed as file:line: path.
set -euo pipefail
src=${KC_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
exec python3 "$src/tests/support/check_paths.py" "$src"
