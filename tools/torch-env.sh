#!/usr/bin/env bash
# Creates a Python virtual environment with PyTorch from PyPI, for tools/pytorch-check.sh and
# tools/pytorch_pipeline.py. Not part of tools/test.sh or CI: the install is large (about
# 5 GiB with the CUDA libraries PyPI's default wheel brings, which CPU runs do not use) and
# takes a few minutes. Idempotent: a venv that already imports the wanted version is reused.
#
#   tools/torch-env.sh                      # torch 2.15.0 into target/torch-venv
#   TORCH_VERSION=2.14.1 tools/torch-env.sh # into target/torch-venv-2.14.1
#
# Prints the venv's python path on stdout (everything else goes to stderr), so callers can
# write PY="$(tools/torch-env.sh)".
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

# The newest torch on PyPI when this was written (`pip index versions torch`); the checks in
# tools/PYTORCH-NOTES.md and the fixtures' READMEs name the version they ran on.
DEFAULT_TORCH_VERSION=2.15.0
VERSION="${TORCH_VERSION:-$DEFAULT_TORCH_VERSION}"

if ! [[ "$VERSION" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]]; then
  echo "error: TORCH_VERSION must look like 2.15.0, found '$VERSION'" >&2
  echo "hint: list the versions PyPI offers with: pip index versions torch" >&2
  exit 2
fi

if [[ "$VERSION" == "$DEFAULT_TORCH_VERSION" ]]; then
  VENV="$ROOT/target/torch-venv"
else
  VENV="$ROOT/target/torch-venv-$VERSION"
fi
PY="$VENV/bin/python"

installed() {
  [[ -x "$PY" ]] && [[ "$("$PY" -c 'import torch; print(torch.__version__.split("+")[0])' 2>/dev/null)" == "$VERSION" ]]
}

if ! installed; then
  echo "torch-env: installing torch $VERSION from PyPI into $VENV" >&2
  echo "torch-env: once per version; about 5 GiB and a few minutes (CPU runs use none of the CUDA libraries it brings)" >&2
  start=$(date +%s)
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check "torch==$VERSION" numpy
  if ! installed; then
    echo "error: torch $VERSION did not import from $VENV after installing" >&2
    echo "hint: remove $VENV and run tools/torch-env.sh again; check free disk space (df -h $ROOT/target)" >&2
    exit 1
  fi
  echo "torch-env: installed torch $VERSION in $(( $(date +%s) - start )) s ($(du -sh "$VENV" | cut -f1))" >&2
fi

echo "$PY"
