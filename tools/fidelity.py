#!/usr/bin/env python3
"""Predicts every published row of tests/fixtures/published/runs.json through the CLI
(`bubblescope simulate ... --json`, its `step`) and prints the fidelity table of
docs/cost-model.md: measured, predicted, error per row, each schedule's speedup over 1F1B in
its group, and a summary. The sends column is the row's `--p2p` (its runtime's send
semantics, the `runtime` field of runs.json).

Usage: python3 tools/fidelity.py [--golden] [path/to/bubblescope]   (default
target/release/bubblescope, then target/debug/bubblescope). With --golden it also writes
tests/golden/published_predictions.json, the predictions the CLI test holds the binary to.
"""
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


ARGS = [a for a in sys.argv[1:] if a != "--golden"]


def binary():
    if ARGS:
        return ARGS[0]
    for kind in ("release", "debug"):
        path = os.path.join(ROOT, "target", kind, "bubblescope")
        if os.path.exists(path):
            return path
    sys.exit("error: no bubblescope binary\n  hint: cargo build -p bubblescope-cli --release")


def predict(bin_path, row):
    out = subprocess.run([bin_path, "simulate", "--json"] + row["args"], capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"error: row {row['id']} failed: {out.stderr.strip()}")
    step = json.loads(out.stdout)["step"]
    metric = row["metric"]
    if metric == "step_s":
        return step["time"] / 1e6
    return step[metric]


def throughput(metric, value):
    """Higher is better: step times turn into their inverse for speedups and errors."""
    return 1.0 / value if metric == "step_s" else value


def p2p(row):
    """The send semantics the row's args ask for (`--p2p`, async when absent)."""
    args = row["args"]
    return args[args.index("--p2p") + 1] if "--p2p" in args else "async"


def main():
    rows = json.load(open(os.path.join(ROOT, "tests", "fixtures", "published", "runs.json")))["rows"]
    bin_path = binary()
    ids = [r["id"] for r in rows]
    assert len(set(ids)) == len(ids), "row ids must be unique"
    for row in rows:
        row["predicted"] = predict(bin_path, row)
        # Error in throughput (the same as the step time's, inverted).
        row["error"] = throughput(row["metric"], row["predicted"]) / throughput(row["metric"], row["measured"]) - 1
    base = {r["group"]: r for r in rows if r["schedule"] == "1f1b"}
    speed_errors = []
    for row in rows:
        b = base.get(row["group"])
        row["speedup_error"] = None
        if b is not None and b is not row:
            meas = throughput(row["metric"], row["measured"]) / throughput(b["metric"], b["measured"])
            pred = throughput(row["metric"], row["predicted"]) / throughput(b["metric"], b["predicted"])
            row["speedup"] = (meas, pred)
            row["speedup_error"] = pred / meas - 1
            speed_errors.append(abs(row["speedup_error"]))
    units = {"samples_per_gpu_s": "samples/GPU/s", "step_s": "s per step", "tokens_per_gpu_s": "tokens/s/GPU"}
    print("| row | schedule | sends | unit | measured | predicted | error | speedup over 1F1B, measured → predicted |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        sp = ""
        if r["speedup_error"] is not None:
            meas, pred = r["speedup"]
            sp = f"{meas:.3f} → {pred:.3f} ({r['speedup_error'] * 100:+.1f}%)"
        print(
            f"| {r['source'].split(':')[0]}: {r['group'].split(' ', 3)[-1] if r['group'].startswith('Zero') else r['group']} "
            f"| {r['schedule']} | {p2p(r)} | {units[r['metric']]} | {r['measured']:.4g} | {r['predicted']:.4g} | {r['error'] * 100:+.1f}% | {sp} |"
        )
    if "--golden" in sys.argv[1:]:
        golden = {r["id"]: float(f"{r['predicted']:.6g}") for r in rows}
        path = os.path.join(ROOT, "tests", "golden", "published_predictions.json")
        with open(path, "w") as f:
            json.dump(golden, f, indent=1, sort_keys=True)
            f.write("\n")
    errors = [abs(r["error"]) for r in rows]
    within = sum(e <= 0.10 for e in errors)
    worst = max(rows, key=lambda r: abs(r["error"]))
    print()
    print(f"rows: {len(rows)}; within 10%: {within}; median |error| {statistics.median(errors) * 100:.1f}%; "
          f"worst {worst['id']} {worst['error'] * 100:+.1f}%")
    if speed_errors:
        worst_sp = max((r for r in rows if r["speedup_error"] is not None), key=lambda r: abs(r["speedup_error"]))
        within5 = sum(e <= 0.05 for e in speed_errors)
        print(f"speedups over 1F1B: {len(speed_errors)}; within 5%: {within5}; median |error| "
              f"{statistics.median(speed_errors) * 100:.1f}%; worst {worst_sp['id']} {worst_sp['speedup_error'] * 100:+.1f}%")


if __name__ == "__main__":
    main()
