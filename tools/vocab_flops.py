"""Per-stage FLOPs of the Vocabulary Parallelism artifact, extracted and recomputed (stdlib only).

    # Write the fixture from the authors' CSV (a clone outside this repository):
    python3 tools/vocab_flops.py extract \
        --vocab-repo /work/.mirror/sail-sg+VocabularyParallelism/repo \
        --out tests/fixtures/published/vocab_exp_one_host.json
    # Recompute every per-stage FLOP count from the transformer formulas and compare:
    python3 tools/vocab_flops.py check --fixture tests/fixtures/published/vocab_exp_one_host.json

`check` prints one line per CSV row and exits 1 on any mismatch.

The CSV (artifact/exp_one_host.csv, no header) has, per run: the settings named in
artifact/full_exp.sh's column comment (name, B, s, h, v, l, imm, heads, dp, pp, tp, layers_last,
micro_bs, method), then unlabelled columns. Some cells hold numbers with a thousands separator
that split into two cells ("5,017.02"), so later columns are found by position from the first
FLOP cell: six groups of eight per-stage values, 34 columns apart. Their meaning is fixed by
arithmetic that holds on all 40 rows: groups 4-6 equal groups 1-3 divided by 128 microbatches and
by the per-microbatch times of columns 25-27 (µs), to the TFLOPS printed. So groups 1-3 are
per-step FLOPs of the F, B and S passes of each stage, and columns 25-30 are the six per-stage
timer averages in the order of their SyncTimers.conclusion() (f, b, s, input_f, input_b, comm).
"""

import argparse
import json
import os
import re
import subprocess
import sys

CSV_PATH = "artifact/exp_one_host.csv"
# artifact/show_result_full_exp.py, display_results(): the CSV's method tokens as the paper names them.
METHOD_NAMES = {"base": "baseline", "redis": "redis", "vocab": "vocab-2", "synctwice": "vocab-1",
                "interlaced": "interlaced"}
SETTINGS = ["name", "global_batch", "seq", "hidden", "vocab", "layers", "ffn", "heads", "dp", "pp", "tp",
            "layers_last", "micro_batch", "method"]
TIMES = ["f", "b", "s", "input_f", "input_b", "comm"]
GROUPS = ["forward_flops", "backward_flops", "vocab_flops", "tflops_f", "tflops_b", "tflops_s"]
NUMBER = re.compile(r"[0-9.]+(E\+[0-9]+)?")


def git(repo, *args):
    try:
        return subprocess.run(["git", "-C", repo, *args], check=True, capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError) as err:
        detail = getattr(err, "stderr", "") or str(err)
        sys.exit(f"error: git {' '.join(args)} failed in {repo}: {detail.strip()}\n"
                 f"hint: pass a clone of sail-sg/VocabularyParallelism, e.g. /work/.mirror/sail-sg+VocabularyParallelism/repo")


def cell(text):
    """A CSV number as int when it is one; E-notation cells stay floats (they are rounded)."""
    if "E" in text:
        return float(text)
    value = float(text)
    return int(value) if value.is_integer() else value


def parse_row(cells):
    row = {}
    for i, key in enumerate(SETTINGS):
        row[key] = cells[i] if key in ("name", "method") else int(cells[i])
    row["method_name"] = METHOD_NAMES[row["method"]]
    row["microbatches"] = row["global_batch"] // (row["micro_batch"] * row["dp"])
    row["col15"] = float(cells[15])
    row["col19"] = float(cells[19])
    row["times_us"] = {k: [int(x) for x in cells[25 + i].split()] for i, k in enumerate(TIMES)}
    start = next(i for i in range(38, 50) if NUMBER.fullmatch(cells[i]) and float(cells[i]) >= 1e12)
    rounded = {}
    for k, key in enumerate(GROUPS):
        values = cells[start + 34 * k: start + 34 * k + 8]
        if key == "tflops_s" and not any(values):
            values = ["0"] * 8
        if len(values) != 8 or not all(NUMBER.fullmatch(v) for v in values):
            raise ValueError(f"row {row['name']}: group {key} at column {start + 34 * k} is {values}")
        row[key] = [cell(v) for v in values]
        for i, v in enumerate(values):
            if "E" in v:
                rounded[f"{key}[{i}]"] = v
    row["rounded_cells"] = rounded
    return row


def layers_from_flops(rows):
    """Layers per stage read off the FLOPs: a base row of the same sequence and vocabulary has
    layers / pp layers per stage, so its stage 0 gives the FLOPs of one layer, and its last stage
    minus its stage 0 gives the output layer."""
    base = {(r["seq"], r["vocab"]): r for r in rows if r["method"] == "base"}
    for r in rows:
        b = base[(r["seq"], r["vocab"])]
        per_stage = b["layers"] // b["pp"]
        layer = b["forward_flops"][0] / per_stage
        head = b["forward_flops"][-1] - b["forward_flops"][0]
        counts = []
        for i, fwd in enumerate(r["forward_flops"]):
            has_head = i == r["pp"] - 1 and r["method"] in ("base", "redis")
            n = (fwd - head if has_head else fwd) / layer
            if abs(n - round(n)) > 1e-4:
                raise ValueError(f"row {r['name']} stage {i}: {n} layers")
            counts.append(round(n))
        r["layers_per_stage"] = counts


def extract(args):
    commit = git(args.vocab_repo, "rev-parse", "HEAD").strip()
    text = git(args.vocab_repo, "show", f"{commit}:{CSV_PATH}")
    blob = git(args.vocab_repo, "rev-parse", f"{commit}:{CSV_PATH}").strip()
    added = git(args.vocab_repo, "log", "--format=%H", "--diff-filter=A", commit, "--", CSV_PATH).split()[-1]
    import csv
    import io

    rows = [parse_row(cells) for cells in csv.reader(io.StringIO(text)) if cells and cells[0]]
    layers_from_flops(rows)
    data = {
        "source": {
            "repository": "https://github.com/sail-sg/VocabularyParallelism",
            "commit": commit,
            "path": CSV_PATH,
            "blob": blob,
            "added_in": added,
            "paper": "Yeung, Qi, Lin, Wan: Balancing Pipeline Parallelism with Vocabulary Parallelism, MLSys 2025",
            "extracted_by": "tools/vocab_flops.py extract",
        },
        "setup": "8x A100 80GB, one host (artifact/README.md); PP 8, TP 1, DP 1, micro batch 1, global batch 128",
        "fields": {
            "name..method": "columns 0-13, named by artifact/full_exp.sh's column comment",
            "method_name": "the method as artifact/show_result_full_exp.py prints it",
            "microbatches": "global_batch / (micro_batch * dp)",
            "col15": "column 15, unlabelled: equals 2shV / (8sh^2 + 4s^2h + 4shF), the output layer in layers",
            "col19": "column 19, unlabelled: per method p : p+1 : p+2 : 1.5p (base : vocab-2 : vocab-1 : interlaced)",
            "times_us": "columns 25-30: per-stage timer averages per microbatch, SyncTimers.conclusion() order",
            "forward_flops": "per stage, per step (all microbatches): transformer layers, plus the output layer "
                             "forward on the last stage for base and redis",
            "backward_flops": "per stage, per step: twice forward_flops",
            "vocab_flops": "per stage, per step: the output-layer shard's S and T passes (0 for base and redis)",
            "tflops_f/b/s": "per stage: the FLOP group / microbatches / the time of columns 25-27",
            "rounded_cells": "cells the CSV prints in E-notation (5 or 6 significant digits), as printed",
            "layers_per_stage": "derived here, not a CSV column: see tools/vocab_flops.py layers_from_flops",
        },
        "rows": rows,
    }
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    text = json.dumps(data, indent=2)
    text = re.sub(r"\[\s+([^\[\]{}]*?)\s+\]", lambda mm: "[" + " ".join(mm.group(1).split()) + "]", text)
    with open(args.out, "w") as f:
        f.write(text + "\n")
    print(f"wrote {args.out}: {len(rows)} rows from {CSV_PATH} at {commit[:12]}")


# --------------------------------------------------------------------------------------------
# The independent computation.


def megatron_split(layers, pp, last):
    """Layers per stage: `last` on the final stage, the rest split evenly over the others with
    the remainder on the stages just before the final one (even split when last is None)."""
    if last is None:
        counts = [layers // pp] * pp
        extra, top = layers % pp, pp - 2
    else:
        counts = [(layers - last) // (pp - 1)] * pp
        extra, top = (layers - last) % (pp - 1), pp - 2
        counts[-1] = last
    for i in range(extra):
        counts[top - i] += 1
    return counts


def layer_fwd(s, h, ffn, b=1):
    """One transformer layer's forward GEMM FLOPs for b sequences of length s: Q, K, V and output
    projections 8sh^2, attention scores and values 4s^2h (no causal halving), MLP 4shF."""
    return b * (8 * s * h * h + 4 * s * s * h + 4 * s * h * ffn)


def head_fwd(s, h, v, b=1):
    """The output layer's forward GEMM: 2shV."""
    return 2 * b * s * h * v


def softmax_fwd(s, v, b=1):
    """Cross-entropy over the logits, counted as 5 FLOPs per logit (max, subtract, exp, sum,
    normalise). Reported to show it is not in the CSV."""
    return 5 * b * s * v


def expected(row, with_softmax=False):
    s, h, ffn, v, p, m = row["seq"], row["hidden"], row["ffn"], row["vocab"], row["pp"], row["microbatches"]
    b = row["micro_batch"]
    split = megatron_split(row["layers"], p, row["layers_last"] if row["method"] == "redis" else None)
    head = head_fwd(s, h, v, b) + (softmax_fwd(s, v, b) if with_softmax else 0)
    sharded = row["method"] in ("vocab", "synctwice", "interlaced")
    fwd, bwd, voc = [], [], []
    for i, n in enumerate(split):
        f = n * layer_fwd(s, h, ffn, b) + (head if i == p - 1 and not sharded else 0)
        fwd.append(m * f)
        bwd.append(2 * m * f)
        # A vocabulary shard of V/p columns: forward (S) and backward (T, twice the forward).
        voc.append(3 * m * head // p if sharded else 0)
    return {"forward_flops": fwd, "backward_flops": bwd, "vocab_flops": voc, "split": split}


def agrees(csv_value, computed, text):
    if text is None:
        return csv_value == computed
    digits = len(text.split("E")[0].replace(".", ""))
    return float(f"{computed:.{digits - 1}E}") == csv_value


def check(args):
    try:
        with open(args.fixture) as f:
            data = json.load(f)
    except (OSError, ValueError) as err:
        sys.exit(f"error: cannot read the fixture {args.fixture}: {err}\n"
                 f"hint: write it with `python3 tools/vocab_flops.py extract`")
    failures = 0
    softmax_only = 0
    print(f"{'row':42} {'layers per stage':20} {'GEMM-only':10} {'with softmax':12}")
    for row in data["rows"]:
        plain, soft = expected(row), expected(row, with_softmax=True)
        bad = []
        for key in ("forward_flops", "backward_flops", "vocab_flops"):
            for i, (got, want) in enumerate(zip(row[key], plain[key])):
                if not agrees(got, want, row["rounded_cells"].get(f"{key}[{i}]")):
                    bad.append(f"{key}[{i}] csv {got} computed {want}")
        soft_ok = all(agrees(got, want, row["rounded_cells"].get(f"{key}[{i}]"))
                      for key in ("forward_flops", "backward_flops", "vocab_flops")
                      for i, (got, want) in enumerate(zip(row[key], soft[key])))
        split_ok = plain["split"] == row["layers_per_stage"]
        if not split_ok:
            bad.append(f"layers csv {row['layers_per_stage']} computed {plain['split']}")
        # The artifact's model FLOPs (artifact/show_result_full_exp.py calculate_mfu) are the step total.
        total = sum(row["forward_flops"]) + sum(row["backward_flops"]) + sum(row["vocab_flops"])
        s, h, v, ffn, layers = row["seq"], row["hidden"], row["vocab"], row["ffn"], row["layers"]
        batch = row["global_batch"]
        mfu = 3 * (2 * batch * s * h * v + layers * (8 * batch * s * h * h + 4 * batch * s * s * h
                                                      + 4 * batch * s * h * ffn))
        if (total != mfu) if not row["rounded_cells"] else abs(total - mfu) > 1e-5 * mfu:
            bad.append(f"step total {total} is not the artifact's MFU FLOPs {mfu}")
        # The two unlabelled columns the fixture describes.
        col15 = head_fwd(s, h, v) / layer_fwd(s, h, ffn)
        if abs(col15 - row["col15"]) > 1e-6 * col15:
            bad.append(f"col15 {row['col15']} is not the output layer in layers {col15}")
        p = row["pp"]
        base = next(r for r in data["rows"] if r["method"] == "base" and (r["seq"], r["vocab"]) == (s, v))
        ratio = {"base": 1, "redis": 1, "vocab": (p + 1) / p, "synctwice": (p + 2) / p, "interlaced": 1.5}
        if abs(row["col19"] / base["col19"] - ratio[row["method"]]) > 1e-4:
            bad.append(f"col19 {row['col19']} is not {ratio[row['method']]} x the base row's {base['col19']}")
        failures += bool(bad)
        softmax_only += soft_ok
        split = ",".join(map(str, row["layers_per_stage"]))
        print(f"{row['name']:42} {split:20} {'match' if not bad else 'MISMATCH':10} "
              f"{'match' if soft_ok else 'no':12}")
        for line in bad:
            print(f"    {line}")
    rows = len(data["rows"])
    print(f"\n{rows - failures}/{rows} rows reproduced exactly by the GEMM-only count "
          f"(cells printed in E-notation compared at their printed precision);")
    print(f"{softmax_only}/{rows} rows would match if the cross-entropy (5 FLOPs per logit) were counted.")
    if failures:
        sys.exit(f"error: {failures} rows differ from the transformer formulas\n"
                 f"hint: the lines above name each stage and group that differs")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    ex = sub.add_parser("extract", help="write the fixture from the authors' CSV")
    ex.add_argument("--vocab-repo", required=True, help="clone of sail-sg/VocabularyParallelism")
    ex.add_argument("--out", required=True, help="fixture JSON to write")
    ch = sub.add_parser("check", help="recompute the per-stage FLOPs and compare")
    ch.add_argument("--fixture", required=True, help="fixture JSON written by extract")
    args = parser.parse_args()
    if args.command == "extract":
        args.vocab_repo = os.path.abspath(args.vocab_repo)
        extract(args)
    else:
        check(args)


if __name__ == "__main__":
    main()
