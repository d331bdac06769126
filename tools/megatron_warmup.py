#!/usr/bin/env python3
"""Megatron-LM's warm-up microbatch counts, with and without --overlap-moe-expert-parallel-comm.

Runs Megatron-Core's own `get_pp_rank_microbatches` (megatron/core/pipeline_parallel/
schedules.py) outside its repository: the function is read from a Megatron-LM checkout or
git directory given on the command line, lifted out of the file with `ast`, and executed with
stand-ins for the imports it does not use (parallel_state) and for the one object it reads
(a P2P communicator: pp group size and rank, virtual pipeline size). Nothing of Megatron is
stored here; the table it writes is the golden file tests/golden/megatron-a2a-warmup.json.

  tools/megatron_warmup.py --megatron-git /work/.mirror/NVIDIA+Megatron-LM/repo --out tests/golden/megatron-a2a-warmup.json
  tools/megatron_warmup.py --schedules path/to/megatron/core/pipeline_parallel/schedules.py --out table.json
  tools/megatron_warmup.py --megatron-git DIR --check tests/golden/megatron-a2a-warmup.json

Every row is also computed from the formula written out below (`formula`), independently of
Megatron's code; a row where the two differ stops the run.

What the table holds, per (pp, vpp, microbatches, microbatch group size, rank):
- warmup_without / warmup_with: the warm-up count Megatron's function returns without and
  with the overlap flag (capped at the rank's total microbatches, as the function does);
- megatron_refuses_with_flag: true where Megatron's TransformerConfig refuses the flag
  (pp > 1 without a virtual pipeline), so `warmup_with` is null there.
"""

import argparse
import ast
import json
import os
import subprocess
import sys
import types
import typing

FUNCTION = "get_pp_rank_microbatches"
SCHEDULES = "megatron/core/pipeline_parallel/schedules.py"


class UserError(Exception):
    def __init__(self, message, hint):
        super().__init__(message)
        self.message = message
        self.hint = hint


# ---------------------------------------------------------------------------------------------
# Megatron's function, lifted out of its file


def read_source(args):
    """(source text, provenance dict) of schedules.py."""
    if args.schedules:
        try:
            with open(args.schedules) as f:
                return f.read(), {"file": os.path.abspath(args.schedules)}
        except OSError as exc:
            raise UserError(f"cannot read {args.schedules}: {exc.strerror.lower()}", f"give the path of Megatron-LM's {SCHEDULES}")
    git = ["git", "--git-dir", args.megatron_git]
    try:
        commit = subprocess.run(git + ["rev-parse", args.rev], capture_output=True, text=True, check=True).stdout.strip()
        text = subprocess.run(git + ["show", f"{commit}:{SCHEDULES}"], capture_output=True, text=True, check=True).stdout
        date = subprocess.run(git + ["log", "-1", "--format=%cI", commit], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError) as exc:
        detail = getattr(exc, "stderr", "") or str(exc)
        raise UserError(f"cannot read {SCHEDULES} at {args.rev} from {args.megatron_git}: {detail.strip().splitlines()[0] if detail.strip() else 'git failed'}", "give the git directory of a Megatron-LM clone (e.g. the one `fetch github:NVIDIA/Megatron-LM` returns)")
    return text, {"repo": "NVIDIA/Megatron-LM", "commit": commit, "commit_date": date, "path": SCHEDULES}


def lift(source):
    """Megatron's function object and its line span in the file."""
    tree = ast.parse(source)
    node = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == FUNCTION), None)
    if node is None:
        raise UserError(f"{SCHEDULES} has no top-level {FUNCTION}", "this Megatron-LM version computes warm-up elsewhere; read its schedules.py")
    module = ast.Module(body=[node], type_ignores=[])
    refuse = types.SimpleNamespace()

    def unused(*_a, **_k):
        raise RuntimeError("parallel_state was called: the stand-in communicator should have been used")

    refuse.get_pipeline_model_parallel_world_size = unused
    refuse.get_pipeline_model_parallel_rank = unused
    refuse.get_virtual_pipeline_model_parallel_world_size = unused
    namespace = {"Optional": typing.Optional, "P2PCommunicator": object, "parallel_state": refuse}
    exec(compile(module, f"<megatron {SCHEDULES}>", "exec"), namespace)
    return namespace[FUNCTION], (node.lineno, node.end_lineno)


class Group:
    def __init__(self, size, rank):
        self._size, self._rank = size, rank

    def size(self):
        return self._size

    def rank(self):
        return self._rank


class Communicator:
    """What get_pp_rank_microbatches reads of a P2PCommunicator."""

    def __init__(self, pp, rank, vpp):
        self.pp_group = Group(pp, rank)
        self.virtual_pipeline_model_parallel_size = vpp


# ---------------------------------------------------------------------------------------------
# The same rule written out here


def formula(pp, vpp, microbatches, group, rank, flag):
    """Warm-up forwards of one rank: Megatron's rule as its docs and comments state it."""
    total = microbatches * (vpp or 1)
    if pp == 1:
        warmup = 0
    elif vpp is None:
        warmup = pp - rank - 1
    else:
        warmup = 2 * (pp - rank - 1) + (vpp - 1) * group + (1 if flag else 0)
    return min(warmup, total), total


def megatron_refuses(pp, vpp, flag):
    """TransformerConfig: 'If enabling EP A2A overlap, virtual_pipeline_model_parallel_size
    must be specified when pipeline_model_parallel_size > 1'."""
    return flag and pp > 1 and vpp is None


# ---------------------------------------------------------------------------------------------
# The table

# (pp, vpp, microbatches, microbatch group size or None for Megatron's default = pp)
CASES = []
for _pp in (2, 4, 8):
    for _m in sorted({1, _pp - 1, _pp, 2 * _pp, 4 * _pp}):
        CASES.append((_pp, None, _m, None))
    for _vpp in (2, 3, 4):
        for _k in (1, 2, 3):
            CASES.append((_pp, _vpp, _k * _pp, None))
CASES += [(4, 2, 8, 8), (4, 2, 12, 6), (4, 2, 10, 5), (8, 2, 24, 12), (1, None, 4, None)]


def rows(fn):
    out = []
    for pp, vpp, m, group in CASES:
        g = group if group is not None else pp
        for rank in range(pp):
            entry = {"pp": pp, "vpp": vpp or 1, "microbatches": m, "group": g, "rank": rank}
            for flag in (False, True):
                total, all_warm, warmup, remaining = fn(m, vpp or 1, g, forward_only=False, overlap_moe_expert_parallel_comm=flag, p2p_communicator=Communicator(pp, rank, vpp))
                mine, mine_total = formula(pp, vpp, m, g, rank, flag)
                if (warmup, total) != (mine, mine_total) or remaining != total - warmup or all_warm != (mine == mine_total):
                    raise UserError(f"Megatron's function and the formula differ at pp={pp} vpp={vpp} M={m} group={g} rank={rank} flag={flag}: {warmup}/{total} against {mine}/{mine_total}", "read the function again: the rule changed")
                key = "with" if flag else "without"
                entry["total_microbatches"] = total
                entry[f"warmup_{key}"] = warmup
                entry[f"all_in_warmup_{key}"] = all_warm
            refused = megatron_refuses(pp, vpp, True)
            entry["megatron_refuses_with_flag"] = refused
            if refused:
                entry["warmup_with"] = None
                entry["all_in_warmup_with"] = None
            out.append(entry)
    return out


def table(source, provenance):
    fn, (first, last) = lift(source)
    lines = source.splitlines()
    flag_lines = [i + 1 for i in range(first - 1, last) if "overlap_moe_expert_parallel_comm" in lines[i] and "if " in lines[i]]
    return {
        "what": "warm-up microbatches per pipeline rank in Megatron-Core, with and without --overlap-moe-expert-parallel-comm (combined 1F1B / EP A2A overlap)",
        "source": dict(provenance, function=f"{FUNCTION} (lines {first}-{last})", flag_lines=flag_lines),
        "how": "Megatron's function executed outside its repository by tools/megatron_warmup.py (lifted with ast; a stand-in P2P communicator supplies pp size, rank and vpp); every row equals the formula written in that script",
        "formula": {
            "non_interleaved": "min(pp - rank - 1, M); the flag is refused for pp > 1 (TransformerConfig), and the non-interleaved schedule never reads it",
            "interleaved": "min(2*(pp - rank - 1) + (vpp - 1)*group + (1 if flag else 0), M*vpp), group = microbatch_group_size_per_vp_stage (default pp)",
            "pp1": "0 (forward_backward_no_pipelining; with the flag, combined_1f1b_schedule_for_no_pipelining runs microbatch 0's forward alone, then (F of i+1, B of i) pairs, then the last backward alone)",
        },
        "units": "microbatch counts per rank; with vpp > 1 these are virtual microbatches (one chunk's forward of one microbatch), total = M * vpp",
        "rows": rows(fn),
    }


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__.split("\n\n", 1)[1], formatter_class=argparse.RawDescriptionHelpFormatter)
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--schedules", help=f"path of Megatron-LM's {SCHEDULES}")
    src.add_argument("--megatron-git", help="git directory of a Megatron-LM clone")
    p.add_argument("--rev", default="HEAD", help="revision to read with --megatron-git (default HEAD)")
    out = p.add_mutually_exclusive_group(required=True)
    out.add_argument("--out", help="write the table here")
    out.add_argument("--check", help="compare the rows with this golden file; exit 1 on a difference")
    args = p.parse_args(argv)
    try:
        source, provenance = read_source(args)
        t = table(source, provenance)
        if args.out:
            with open(args.out, "w") as f:
                json.dump(t, f, indent=1)
                f.write("\n")
            n = len(t["rows"])
            changed = sum(1 for r in t["rows"] if r["warmup_with"] is not None and r["warmup_with"] != r["warmup_without"])
            print(f"wrote {args.out}: {n} rows, {changed} where the flag changes the warm-up count; Megatron {provenance.get('commit', provenance.get('file'))}")
            return 0
        try:
            with open(args.check) as f:
                want = json.load(f)
        except (OSError, json.JSONDecodeError) as exc:
            raise UserError(f"cannot read {args.check}: {exc}", "give the golden file written with --out")
        if want["rows"] != t["rows"]:
            diff = next(((a, b) for a, b in zip(want["rows"], t["rows"]) if a != b), None)
            print(f"check: rows differ; first: {diff}" if diff else f"check: {len(want['rows'])} rows there, {len(t['rows'])} here")
            return 1
        print(f"check: {len(t['rows'])} rows equal (Megatron {provenance.get('commit', provenance.get('file'))})")
        return 0
    except UserError as e:
        sys.stderr.write(f"error: {e.message}\nhint: {e.hint}\n")
        return 2


if __name__ == "__main__":
    sys.exit(main())
