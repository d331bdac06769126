#!/usr/bin/env bash
# Installs what building, serving and testing Bubblescope need, and nothing from GitHub.
#
#   tools/setup.sh serve     what serving needs: the wasm32 target, trunk 0.21.14,
#                            wasm-bindgen-cli at exactly Cargo.lock's wasm-bindgen, wasm-opt
#                            (npm binaryen 132, tests/package-lock.json) and the crates
#   tools/setup.sh [test]    all of that, and what the tests need on top: playwright-core
#                            (npm, a dev dependency) and Debian's chromium + chromium-driver
#   --check (or --dry-run)   only list what is missing and would be installed; exit 1 if
#                            anything is
#
# Idempotent: when everything is present it only checks versions (about a second). Each
# one-time step says what it does and roughly how long it takes, and how long it took.
# Run by tools/serve.sh (serve) and tools/test.sh (test); safe to run by hand.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

MODE=test
CHECK=0
for arg in "$@"; do
  case "$arg" in
    serve | test) MODE="$arg" ;;
    --check | --dry-run) CHECK=1 ;;
    *)
      printf 'setup: unknown argument `%s`\nhint: tools/setup.sh [serve|test] [--check]\n' "$arg" >&2
      exit 2
      ;;
  esac
done

TRUNK_VERSION=0.21.14
WASM_OPT_VERSION="wasm-opt version 132 (version_132)"
BIN="${CARGO_INSTALL_ROOT:-${CARGO_HOME:-$HOME/.cargo}}/bin"
export PATH="$ROOT/tests/node_modules/.bin:$BIN:$PATH"

say() { printf 'setup: %s\n' "$*" >&2; }

# The serve tools need only be present, not fast: trunk orchestrates and wasm-bindgen rewrites
# one module a build. Compile them unoptimised, without LTO or debug info, in parallel units:
# about half the time of their own release profile on 2 cores. Their dependencies that do the
# heavy lifting on a build (walrus parsing the module) keep some optimisation.
CHEAP_PROFILE=(
  --config 'profile.release.opt-level=0'
  --config 'profile.release.lto=false'
  --config 'profile.release.codegen-units=256'
  --config 'profile.release.debug=false'
  --config 'profile.release.incremental=false'
  --config 'profile.release.package.walrus.opt-level=2'
  --config 'profile.release.package.wasm-bindgen-cli-support.opt-level=2'
)

MISSING=0
# step NAME ESTIMATE: announces a one-time step (or, with --check, lists it and skips it).
# Returns 1 under --check so the caller skips the work.
step() {
  MISSING=$((MISSING + 1))
  if [ "$CHECK" = 1 ]; then
    say "would install $1 (one time, $2)"
    return 1
  fi
  say "installing $1 (one time, $2)…"
  STEP_START=$SECONDS
}
done_step() { say "  done in $(((SECONDS - STEP_START) / 60)) min $(((SECONDS - STEP_START) % 60)) s"; }

# wasm-bindgen version from Cargo.lock: the CLI must match the library exactly.
WB_VERSION="$(awk '$0 == "name = \"wasm-bindgen\"" { getline; gsub(/"/, "", $3); print $3; exit }' Cargo.lock)"
[ -n "$WB_VERSION" ] || { say "wasm-bindgen not found in Cargo.lock"; exit 1; }

# 1. The wasm target.
if ! rustup target list --installed 2>/dev/null | grep -qx wasm32-unknown-unknown; then
  if step "the wasm32-unknown-unknown target" "~1 min"; then
    rustup target add wasm32-unknown-unknown >&2
    done_step
  fi
fi

# 2. trunk (0.22 needs a newer rustc than this toolchain). No prebuilt binary without GitHub:
#    cargo compiles it.
if [ "$("$BIN/trunk" --version 2>/dev/null)" != "trunk $TRUNK_VERSION" ]; then
  if step "trunk $TRUNK_VERSION from crates.io" "~6 min on 2 cores"; then
    cargo install "${CHEAP_PROFILE[@]}" trunk --version "$TRUNK_VERSION" --locked >&2
    done_step
  fi
fi

# 3. wasm-bindgen-cli at exactly Cargo.lock's version (wasm-bindgen for builds, its
#    wasm-bindgen-test-runner for the app's tests: one crate). `--locked` fails on this
#    registry for one dependency pinned to a version it does not serve: re-lock only that one.
if [ "$("$BIN/wasm-bindgen" --version 2>/dev/null)" != "wasm-bindgen $WB_VERSION" ] ||
   [ "$("$BIN/wasm-bindgen-test-runner" --version 2>/dev/null)" != "wasm-bindgen-test-runner $WB_VERSION" ]; then
  if step "wasm-bindgen-cli $WB_VERSION from crates.io" "~4 min on 2 cores"; then
    if ! cargo install "${CHEAP_PROFILE[@]}" wasm-bindgen-cli --version "$WB_VERSION" --locked --force >&2; then
      CRATE="$(ls "${CARGO_HOME:-$HOME/.cargo}"/registry/cache/*/wasm-bindgen-cli-"$WB_VERSION".crate 2>/dev/null | head -1)"
      [ -n "$CRATE" ] || { say "wasm-bindgen-cli-$WB_VERSION.crate is not in the cargo cache"; exit 1; }
      WORK="$(mktemp -d)"
      trap 'rm -rf "$WORK"' EXIT
      tar -xzf "$CRATE" -C "$WORK"
      SRC="$WORK/wasm-bindgen-cli-$WB_VERSION"
      for _ in 1 2 3 4 5 6 7 8; do
        if err="$(cd "$SRC" && cargo metadata --format-version 1 2>&1 >/dev/null)"; then break; fi
        dep="$(printf '%s\n' "$err" | sed -n 's/.*requirement `\([A-Za-z0-9_-]*\) = .*(locked to .*/\1/p' | head -1)"
        [ -n "$dep" ] || { printf '%s\n' "$err" >&2; exit 1; }
        say "re-locking the unavailable dependency $dep"
        (cd "$SRC" && cargo update -p "$dep" >&2)
      done
      cargo install "${CHEAP_PROFILE[@]}" --path "$SRC" --locked --force >&2
    fi
    done_step
  fi
fi

# 4. wasm-opt: npm's binaryen 132, a prebuilt binary (Debian's 108 breaks the app). Serving
#    installs the package's dependencies only; the tests add playwright-core (a dev
#    dependency, no browser download).
wasm_opt_ok() {
  [ -x tests/node_modules/.bin/wasm-opt ] && [ "$(tests/node_modules/.bin/wasm-opt --version 2>/dev/null)" = "$WASM_OPT_VERSION" ]
}
if [ "$MODE" = serve ]; then
  if ! wasm_opt_ok; then
    if step "wasm-opt (binaryen 132) from npm" "~10 s"; then
      (cd tests && npm ci --omit=dev --no-audit --no-fund >&2)
      done_step
    fi
  fi
elif ! wasm_opt_ok || [ ! -d tests/node_modules/playwright-core ]; then
  if step "wasm-opt (binaryen 132) and playwright-core from npm" "~10 s"; then
    (cd tests && npm ci --no-audit --no-fund >&2)
    done_step
  fi
fi

# 5. Chromium and its driver from Debian: the browser tests' browser (not needed to serve).
if [ "$MODE" = test ] && { ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; }; then
  if step "chromium and chromium-driver from Debian" "~2 min"; then
    SUDO=""
    if [ "$(id -u)" != 0 ]; then
      if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then SUDO="sudo -n"; else
        say "chromium is missing and this user cannot run apt-get"
        say "hint: run as root, or install the Debian packages chromium and chromium-driver"
        exit 1
      fi
    fi
    $SUDO apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium chromium-driver >&2
    done_step
  fi
fi

# 6. Crates, so `trunk build --offline` (which makes cargo offline too) finds everything.
#    Only when Cargo.lock changed since the last fetch: the check itself costs a second.
STAMP="target/.fetched-$(cksum < Cargo.lock | cut -d' ' -f1)"
if [ ! -f "$STAMP" ]; then
  if step "the crates of Cargo.lock (cargo fetch)" "~1 min"; then
    cargo fetch --locked -q >&2
    mkdir -p target && rm -f target/.fetched-* && touch "$STAMP"
    done_step
  fi
fi

if [ "$CHECK" = 1 ]; then
  if [ "$MISSING" = 0 ]; then say "everything $MODE needs is installed"; else exit 1; fi
fi
