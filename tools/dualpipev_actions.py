"""PyTorch's ScheduleDualPipeV action lists, dumped by PyTorch itself: the golden files of issue 41.

Builds torch.distributed.pipelining.ScheduleDualPipeV for several (P, M) on stand-in stages
(no process group, no model: the class reads only the group size, the stage count and the
stages per rank when it builds its orders, as tools/pytorch_pipeline.py explains), then writes
with PyTorch's own `_dump_csv`:

  ScheduleDualPipeV-p<P>-m<M>.compute_only.csv   pipeline_order: F, I, W, B and the
                                                 (xFy;uBv)OVERLAP_F_B pairs, one row per rank
  ScheduleDualPipeV-p<P>-m<M>.compute_comms.csv  pipeline_order_with_comms: what the runtime runs
  index.json                                     torch version, command, every file with its
                                                 per-rank action counts; the sizes PyTorch refuses

Run it with the torch venv (tools/torch-env.sh):

  PY="$(tools/torch-env.sh)"
  $PY tools/dualpipev_actions.py dump tests/golden/pytorch-dualpipev
  $PY tools/dualpipev_actions.py check tests/golden/pytorch-dualpipev
  $PY tools/dualpipev_actions.py compare tests/golden/pytorch-dualpipev/ScheduleDualPipeV-p4-m10.compute_only.csv ARTIFACT.csv

`check` dumps again into a temporary directory and compares every file byte for byte (exit 1 on
a difference). `compare` compares two compute-only files cell by cell, for instance against
PyTorch's own test artifact test/distributed/pipelining/artifacts/dualpipev_4rank_10mb.csv.
"""

import argparse
import collections
import csv
import filecmp
import json
import os
import re
import shlex
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

# (P, M): every M PyTorch accepts from 2P up, a few more, and the sizes below 2P it refuses.
# P = 4, M = 10 is the example of pytorch PR #158978 and of DualPipe's README figure.
SIZES = [
    (2, 3), (2, 4), (2, 5), (2, 6), (2, 8), (2, 10),
    (4, 7), (4, 8), (4, 9), (4, 10), (4, 12), (4, 16), (4, 20),
    (8, 15), (8, 16), (8, 17), (8, 20), (8, 24), (8, 32),
]
CLASS = "ScheduleDualPipeV"
OVERLAP = re.compile(r"^\((.*)\)OVERLAP_F_B$")
ACTION = re.compile(r"^(\d+)([A-Z_]+?)(\d*)$")


class UserError(Exception):
    def __init__(self, message, hint):
        super().__init__(message)
        self.message = message
        self.hint = hint


def torch_parts():
    try:
        import torch
        from torch.distributed.pipelining import schedules
    except ImportError:
        raise UserError("torch is not importable from this python", "run with the venv python: PY=\"$(tools/torch-env.sh)\"; $PY tools/dualpipev_actions.py ...")
    return torch.__version__.split("+")[0], schedules


def build(devices, microbatches):
    """ScheduleDualPipeV on 2 stand-in stages per rank; returns the schedule object."""
    from pytorch_pipeline import mock_stages  # the project's stand-in stages (no process group)

    _, schedules = torch_parts()
    return schedules.ScheduleDualPipeV(mock_stages(devices, 2 * devices, 2), microbatches)


def cells(path):
    with open(path, newline="") as f:
        return [[c.strip() for c in row] for row in csv.reader(f)]


def action_kind(cell):
    """'OVERLAP_F_B', 'F', 'I', 'W', 'B', 'SEND_F', ... or '' for an empty cell."""
    if not cell:
        return ""
    if OVERLAP.match(cell):
        return "OVERLAP_F_B"
    m = ACTION.match(cell)
    return m.group(2) if m else "?"


def counts(rows):
    """Per rank: {kind: number of cells}, kinds sorted."""
    return [dict(sorted(collections.Counter(action_kind(c) for c in row if c).items())) for row in rows]


def overlap_pairs(rows):
    """Per rank: the OVERLAP_F_B cells' (forward, backward) sub-actions."""
    out = []
    for row in rows:
        pairs = []
        for c in row:
            m = OVERLAP.match(c)
            if m:
                pairs.append(m.group(1).split(";"))
        out.append(pairs)
    return out


def dump(outdir):
    version, _ = torch_parts()
    os.makedirs(outdir, exist_ok=True)
    files, refused = [], []
    for devices, microbatches in SIZES:
        stem = f"{CLASS}-p{devices}-m{microbatches}"
        try:
            schedule = build(devices, microbatches)
        except Exception as exc:  # PyTorch's own refusal, recorded as it words it
            refused.append({"devices": devices, "microbatches": microbatches, "error": f"{type(exc).__name__}: {exc}"})
            continue
        entry = {"devices": devices, "stages": 2 * devices, "microbatches": microbatches}
        for fmt in ("compute_only", "compute_comms"):
            name = f"{stem}.{fmt}.csv"
            schedule._dump_csv(os.path.join(outdir, name), format=fmt)
            rows = cells(os.path.join(outdir, name))
            entry[fmt] = {"file": name, "actions_per_rank": counts(rows)}
        entry["stage_to_rank"] = [schedule.stage_index_to_group_rank[s] for s in range(2 * devices)]
        entry["overlap_pairs_per_rank"] = [len(p) for p in overlap_pairs(cells(os.path.join(outdir, f"{stem}.compute_only.csv")))]
        files.append(entry)
    index = {
        "torch": version,
        "class": f"torch.distributed.pipelining.schedules.{CLASS}",
        "command": "$PY tools/dualpipev_actions.py " + " ".join(shlex.quote(a) for a in sys.argv[1:]),
        "how": "built on stand-in stages (tools/pytorch_pipeline.py mock_stages: group_size, num_stages, 2 stages per rank, no process group); files written by PyTorch's _dump_csv (csv.writer, \\r\\n line ends)",
        "grammar": "<stage><F|I|W|B><microbatch>, (<forward>;<backward>)OVERLAP_F_B, <stage><SEND_F|RECV_F|SEND_B|RECV_B><microbatch>, <stage>REDUCE_GRAD, <stage>WAIT_REDUCE_GRAD, <stage>WAIT_SEND_F/WAIT_SEND_B<microbatch>",
        "sizes": files,
        "refused": refused,
    }
    with open(os.path.join(outdir, "index.json"), "w") as f:
        json.dump(index, f, indent=1)
        f.write("\n")
    print(f"dump: torch {version}: {2 * len(files)} files in {outdir}; refused {len(refused)} sizes")
    for r in refused:
        print(f"  refused P={r['devices']} M={r['microbatches']}: {r['error']}")
    return 0


def check(golden):
    if not os.path.isdir(golden):
        raise UserError(f"{golden} is not a directory", "give the directory dump wrote, e.g. tests/golden/pytorch-dualpipev")
    with tempfile.TemporaryDirectory() as tmp:
        dump(tmp)
        with open(os.path.join(golden, "index.json")) as f:
            want = json.load(f)
        with open(os.path.join(tmp, "index.json")) as f:
            got = json.load(f)
        problems = []
        if want["torch"] != got["torch"]:
            problems.append(f"torch {got['torch']} here, the golden files are from torch {want['torch']}")
        for key in ("sizes", "refused"):
            if want[key] != got[key]:
                problems.append(f"index.json `{key}` differs")
        names = sorted(n for n in os.listdir(tmp) if n.endswith(".csv"))
        for n in names:
            if not os.path.exists(os.path.join(golden, n)):
                problems.append(f"{n} missing from {golden}")
            elif not filecmp.cmp(os.path.join(tmp, n), os.path.join(golden, n), shallow=False):
                problems.append(f"{n} differs")
    if problems:
        for p in problems:
            print(f"check: {p}")
        return 1
    print(f"check: {len(names)} files equal to what torch {got['torch']} dumps")
    return 0


def compare(mine, theirs):
    for p in (mine, theirs):
        if not os.path.exists(p):
            raise UserError(f"cannot read {p}", "give two compute-only CSV files")
    a, b = cells(mine), cells(theirs)
    strip = lambda rows: [[c for c in row if c] for row in rows]  # noqa: E731 (idle cells do not count)
    a, b = strip(a), strip(b)
    if a == b:
        print(f"compare: equal ({len(a)} ranks, {sum(map(len, a))} actions)")
        return 0
    for r in range(max(len(a), len(b))):
        ra = a[r] if r < len(a) else []
        rb = b[r] if r < len(b) else []
        for i in range(max(len(ra), len(rb))):
            x = ra[i] if i < len(ra) else "<end>"
            y = rb[i] if i < len(rb) else "<end>"
            if x != y:
                print(f"compare: rank {r} action {i}: {x} here, {y} there")
                break
    return 1


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__.split("\n\n", 1)[1], formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("dump", help="write the golden files")
    d.add_argument("outdir")
    c = sub.add_parser("check", help="dump again and compare with the golden files")
    c.add_argument("golden")
    m = sub.add_parser("compare", help="compare two compute-only files")
    m.add_argument("mine")
    m.add_argument("theirs")
    args = p.parse_args(argv)
    try:
        if args.cmd == "dump":
            return dump(args.outdir)
        if args.cmd == "check":
            return check(args.golden)
        return compare(args.mine, args.theirs)
    except UserError as e:
        sys.stderr.write(f"error: {e.message}\nhint: {e.hint}\n")
        return 2


if __name__ == "__main__":
    sys.exit(main())
