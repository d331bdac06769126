#!/usr/bin/env bash
# Builds the playground (release) and serves it at http://127.0.0.1:8080, rebuilding on change.
# Installs only what serving needs (tools/setup.sh serve: no browser, no test packages).
#   tools/serve.sh --check   lists what the first run would install, and installs nothing
# Other arguments go to `trunk serve`.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

if [ "${1:-}" = --check ] || [ "${1:-}" = --dry-run ]; then
  exec "$ROOT/tools/setup.sh" serve --check
fi

START=$SECONDS
"$ROOT/tools/setup.sh" serve
if [ $((SECONDS - START)) -gt 5 ]; then
  printf 'serve: tools installed in %d min %d s\n' $(((SECONDS - START) / 60)) $(((SECONDS - START) % 60)) >&2
fi
export PATH="$ROOT/tests/node_modules/.bin:${CARGO_INSTALL_ROOT:-${CARGO_HOME:-$HOME/.cargo}}/bin:$PATH"
printf 'serve: building the playground (release; the first build takes ~3 min on 2 cores, later ones seconds), then serving http://127.0.0.1:8080\n' >&2
exec trunk serve --release --offline --locked --address 127.0.0.1 --port 8080 "$@"
