#!/usr/bin/env bash
# Checks the exact search (`simulate --optimal`) against an independent solver, OR-Tools'
# CP-SAT, on a random sample of small problems; exits 1 on any disagreement. Not part of
# tools/test.sh: it downloads OR-Tools (about 30 MB, PyPI) into target/cp-sat-venv once and
# takes about --seconds per problem. See tools/cp_sat_check.py for what it compares.
#
#   tools/cp-sat-check.sh [--count N] [--seconds S] [--workers T] [--seed K] [--deterministic] [--max-devices P]
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

VENV="$ROOT/target/cp-sat-venv"
if ! "$VENV/bin/python" -c 'import ortools' 2>/dev/null; then
  echo "cp-sat-check: installing OR-Tools 9.15 into $VENV (once, about a minute)" >&2
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet 'ortools==9.15.6755'
fi
cargo build --quiet --release -p bubblescope --example optimal_problem
exec "$VENV/bin/python" "$ROOT/tools/cp_sat_check.py" --binary "$ROOT/target/release/examples/optimal_problem" "$@"
