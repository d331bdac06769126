#!/usr/bin/env bash
# Runs tools/pytorch_pipeline.py in the torch virtual environment (created by tools/torch-env.sh
# on first use: about 5 GiB and a few minutes). Not part of tools/test.sh or CI.
#
#   tools/pytorch-check.sh check                       # every exported family, run in PyTorch
#   tools/pytorch-check.sh trace OUTDIR --schedule ZBVZeroBubble
#   tools/pytorch-check.sh --help                      # every subcommand, with examples
#   TORCH_VERSION=2.14.1 tools/pytorch-check.sh check  # another torch, in its own venv
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="$("$ROOT/tools/torch-env.sh")"
# One thread per process: the pipeline ranks are processes, and the machine's cores are theirs.
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
exec "$PY" "$ROOT/tools/pytorch_pipeline.py" "$@"
