#!/usr/bin/env bash
# Writes the golden files of tests/fixtures/pytorch-lowering/: every family the CLI can write as
# a PyTorch CSV, at a few sizes, exported compute-only by Bubblescope, then lowered by PyTorch
# itself (`tools/pytorch-check.sh lower`, i.e. `_PipelineScheduleRuntime._load_csv(format=
# "compute_only")` then `_dump_csv(format="compute_comms")`) in torch 2.15.0 and 2.14.1. The
# ordinary tests (core/tests/it/pytorch.rs) read these files and never torch: our own
# pytorch-csv-comms export of each compute-only file must equal PyTorch's lowering cell for cell.
#
#   tools/pytorch-lowering.sh                      # the CLI from target/release
#   BUBBLESCOPE=path/to/bubblescope tools/pytorch-lowering.sh
#
# Uses the torch environments tools/torch-env.sh made (2.15.0, and 2.14.1 with TORCH_VERSION)
# and never installs one: a version without its environment keeps its committed lowerings.
# About a minute per torch version on two cores. Not part of tools/test.sh or CI.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CLI="${BUBBLESCOPE:-$ROOT/target/release/bubblescope}"
OUT="$ROOT/tests/fixtures/pytorch-lowering"
if [[ ! -x "$CLI" ]]; then
  echo "error: no bubblescope binary at $CLI" >&2
  echo "hint: build it with \`cargo build -p bubblescope-cli --release\`, or set BUBBLESCOPE" >&2
  exit 2
fi

# family, then the CLI's size flags; every family at P = 2, M = 4 and P = 4, M = 8, and sizes
# that exercise more of the lowering: four stages per rank (stages cycle through the three
# PyTorch keeps unsharded), sixteen stages (torch 2.14's set order is not ascending there), an
# odd P with three chunks, overlapped pairs.
CASES=()
for family in $("$CLI" list --json | python3 -c 'import json, sys; print(" ".join(f["name"] for f in json.load(sys.stdin)))'); do
  CASES+=("$family -p 2 -m 4" "$family -p 4 -m 8")
done
CASES+=(
  "interleaved-1f1b -p 4 -m 8 --chunks 4"
  "interleaved-1f1b -p 8 -m 16"
  "looped-bfs -p 2 -m 4 --chunks 4"
  "interleaved-zb -p 3 -m 6 --chunks 3"
  "interleaved-zb -p 8 -m 16"
  "interleaved-zb -p 2 -m 8 --chunks 4"
  "hanayo -p 4 -m 8 --waves 2"
  "dualpipe-v -p 4 -m 10"
)

# The torch versions whose environment exists (tools/torch-env.sh makes them; this script
# never installs one): the folder of each version's lowerings, and how to run it.
VERSIONS=()
for version in 2.15.0 2.14.1; do
  venv="$ROOT/target/torch-venv"
  [[ $version == 2.15.0 ]] || venv="$ROOT/target/torch-venv-$version"
  if [[ "$("$venv/bin/python" -c 'import torch; print(torch.__version__.split("+")[0])' 2>/dev/null)" == "$version" ]]; then
    VERSIONS+=("$version")
  else
    echo "note: no torch $version in $venv: its lowerings are left as they are" >&2
    echo "hint: make it with TORCH_VERSION=$version tools/torch-env.sh (about 5 GiB), then run this again" >&2
  fi
done
if [[ ${#VERSIONS[@]} == 0 ]]; then
  echo "error: no torch environment found" >&2
  exit 2
fi

rm -rf "$OUT/compute_only"
mkdir -p "$OUT/compute_only"
for version in "${VERSIONS[@]}"; do
  rm -rf "${OUT:?}/torch-$version"
  mkdir -p "$OUT/torch-$version"
done
index="$OUT/index.json.tmp"
echo '{"cases": [' > "$index"
first=1
for case in "${CASES[@]}"; do
  read -r family flags <<< "$case"
  # The file name: the family and its flags, `-p 4 -m 8 --chunks 4` → `p4-m8-chunks4`.
  stem="$family-$(echo "$flags" | sed -E 's/--?//g; s/ ([0-9])/\1/g; s/ /-/g')"
  file="$OUT/compute_only/$stem.csv"
  # shellcheck disable=SC2086
  if ! "$CLI" simulate -s "$family" $flags --export "$file" > /dev/null 2> "$OUT/error.tmp"; then
    if grep -q "PyTorch CSV" "$OUT/error.tmp"; then
      echo "skip $stem: $(head -1 "$OUT/error.tmp")"
      rm -f "$OUT/error.tmp"
      continue
    fi
    cat "$OUT/error.tmp" >&2
    exit 1
  fi
  rm -f "$OUT/error.tmp"
  for version in "${VERSIONS[@]}"; do
    TORCH_VERSION=$version "$ROOT/tools/pytorch-check.sh" lower "$file" "$OUT/torch-$version/$stem.csv" 2> /dev/null
  done
  [[ $first == 1 ]] || echo ',' >> "$index"
  first=0
  printf '  {"file": "%s.csv", "family": "%s", "flags": "%s"}' "$stem" "$family" "$flags" >> "$index"
  echo "lowered $stem"
done
printf '\n]}\n' >> "$index"
mv "$index" "$OUT/index.json"
echo "wrote $(ls "$OUT/compute_only" | wc -l) cases to $OUT"
