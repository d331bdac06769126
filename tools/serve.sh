#!/usr/bin/env bash
# Builds the playground (release) and serves it at http://127.0.0.1:8080, rebuilding on change.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

"$ROOT/tools/setup.sh"
export PATH="$ROOT/tests/node_modules/.bin:${CARGO_INSTALL_ROOT:-${CARGO_HOME:-$HOME/.cargo}}/bin:$PATH"
exec trunk serve --release --offline --locked --address 127.0.0.1 --port 8080 "$@"
