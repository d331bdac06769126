#!/usr/bin/env bash
# Times the whole `bubblescope simulate --json` process at the Zero Bubble paper's ZB-V
# setting (P = 32, M = 256, the paper's profiled costs and memory) with hyperfine, optionally
# side by side with another command in the same run, and prints the ratio.
#
#   tools/bench-simulate.sh                      # ours alone
#   tools/bench-simulate.sh --against 'CMD'      # ours and CMD, one hyperfine run
#   RUNS=20 tools/bench-simulate.sh ...          # more runs (default 10)
#
# CMD is any shell command, e.g. the authors' ZB-V generator and simulation run with python3
# from a checkout of theirs outside this repository (not part of this project). hyperfine
# comes from Debian (`apt-get install hyperfine`). The in-process parts are in
# `cargo bench -p bubblescope --bench families -- "zb-v p32 m256 paper-costs"`.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

against=""
if [[ "${1:-}" == "--against" ]]; then
  against="${2:?--against needs a command}"
fi

command -v hyperfine >/dev/null || { echo "error: hyperfine is not installed (apt-get install hyperfine)" >&2; exit 2; }
cargo build --release --locked -p bubblescope-cli
target="${CARGO_TARGET_DIR:-$ROOT/target}"
ours="$target/release/bubblescope simulate -s zb-v -p 32 -m 256 --f 18894 --b 19288 --w 14386 --comm 887 --mem-f 909312 --mem-w 393216 --json"

export_file="$(mktemp)"
trap 'rm -f "$export_file"' EXIT
commands=("$ours")
[[ -n "$against" ]] && commands+=("$against")
hyperfine -N --warmup 2 --runs "${RUNS:-10}" --output=null --export-json "$export_file" "${commands[@]}"
python3 - "$export_file" <<'PY'
import json, sys
results = json.load(open(sys.argv[1]))["results"]
for r in results:
    print(f"{r['mean'] * 1e3:10.1f} ms wall, {(r['user'] + r['system']) * 1e3:10.1f} ms CPU  {r['command'][:60]}")
if len(results) == 2:
    ours, theirs = results
    print(f"ours is {theirs['mean'] / ours['mean']:.0f}x faster (wall), "
          f"{(theirs['user'] + theirs['system']) / (ours['user'] + ours['system']):.0f}x (CPU)")
PY
