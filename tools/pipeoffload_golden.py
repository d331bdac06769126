"""Golden orders and times of the Zero Bubble authors' PipeOffload scheduler.

Writes core/tests/golden/pipeoffload/<case>.json, read by the `group-interleaved` family's tests
(core/src/families/group_interleaved_tests.rs). Run once and commit the output:

    python3 tools/pipeoffload_golden.py \
        --mirror /work/.mirror/sail-sg+zero-bubble-pipeline-parallelism/repo \
        --out core/tests/golden/pipeoffload

It runs the authors' own code and nothing of ours: the scheduler modules are read from the
mirror (a bare git clone of github.com/sail-sg/zero-bubble-pipeline-parallelism) at run time
into a temporary package, never copied into this repository. `megatron.training` (which their
modules import for `get_args`) is stubbed; no torch is needed. The steps are those of their
runtime (`runtime.py`, the interleaved branch): `group_interleaved_1f1b.create_schedule`, then
`passes.run_schedule_passes`' `pre_validate`, `add_send_recv_peer_stage`, `add_time` and, when
offloading, `offloading.add_offload`. The communication passes that follow are not run: they add
send and receive nodes, not compute or copy nodes.

Each file holds, per rank:
- `compute`: the compute nodes in order (kind F, B, W or R; chunk; layer = chunk * P + rank;
  microbatch) with the start and end `add_time` gives them. When the group size is 1,
  `transform_schedule` stamps times itself: slot j of the padded building-block grid runs from
  j * max(F) to (j + 1) * max(F), and `add_time` keeps them (`times` says which).
- `offload` (offload cases): every node `add_offload` returns, in order, compute and copy nodes
  (OFFLOAD_SEND_START/END, OFFLOAD_RECV_PREP/START/END, OFFLOAD_BARRIER) with its times (compute
  nodes carry the times `postpone_forward_in_warmup` gave them) and `position`, the number of
  compute nodes before it.
Keys are sorted and indented by two spaces, like the other JSON goldens (tests/golden/measured),
with each node's object on one line to keep the files small.
"""

import argparse
import atexit
import contextlib
import copy
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import types

SCHEDULER = "megatron/core/pipeline_parallel/zerobubble/scheduler"
MODULES = ["graph", "communication", "offloading", "passes", "group_interleaved_1f1b"]

# The configurations: the examples' settings (examples/pretrain_offload.sh: P = GPUs, M = 2P,
# layers 3P - 2 padded to 3 chunks of one layer; README quick start: group 8, one offloaded chunk,
# auto offload time; examples/test_all_schedules.sh: layers 2P - 2, so 2 chunks, group 2, offload
# time 0.2, 4 offloaded chunks), smaller P = 4 versions, recompute chunks, and unequal costs.
# Auto offload time (zbpp_utils.get_offload_time): k / 2 with
# k = 10 / (3 (6h + s)) * TFLOPS * 1000 / D2H GB/s; A100 (220, 15), h = 4096, s = 8192: 0.7459.
AUTO_A100 = 10.0 / (3 * (6 * 4096 + 8192)) * 220 * 1000.0 / 15 / 2.0
CASES = [
    # name, P, M, chunks, group, recompute chunks, offload chunks, offload time, F, B, W, comm
    ("p4-m8-v2-g2", 4, 8, 2, 2, 0, 0, None, 1.0, 1.0, 1.0, 0.0),
    ("p4-m8-v2-g4", 4, 8, 2, 4, 0, 0, None, 1.0, 1.0, 1.0, 0.0),
    ("p4-m12-v3-g3-uneven", 4, 12, 3, 3, 0, 0, None, 1.0, 2.0, 1.5, 0.25),
    ("p8-m16-v3-g8", 8, 16, 3, 8, 0, 0, None, 1.0, 1.0, 1.0, 0.0),
    ("p8-m24-v3-g4", 8, 24, 3, 4, 0, 0, None, 1.0, 1.0, 1.0, 0.0),
    ("p4-m8-v2-g1", 4, 8, 2, 1, 0, 0, None, 1.0, 1.0, 1.0, 0.0),
    ("p4-m8-v2-recompute1", 4, 8, 2, 1, 1, 0, None, 1.0, 1.0, 1.0, 0.0),
    ("p8-m16-v3-recompute2", 8, 16, 3, 1, 2, 0, None, 1.0, 1.0, 1.0, 0.0),
    ("p4-m8-v2-g4-offload1", 4, 8, 2, 4, 0, 1, 0.2, 1.0, 1.0, 1.0, 0.0),
    ("p8-m16-v3-g8-offload1-auto", 8, 16, 3, 8, 0, 1, AUTO_A100, 1.0, 1.0, 1.0, 0.0),
    ("p8-m16-v2-g2-offload4", 8, 16, 2, 2, 0, 4, 0.2, 1.0, 1.0, 1.0, 0.0),
    ("p8-m32-v3-g8-offload1", 8, 32, 3, 8, 0, 1, 0.5, 1.0, 1.0, 1.0, 0.0),
]


def load(mirror):
    """The authors' scheduler package, read from the mirror into a temporary directory."""
    commit = subprocess.run(["git", "-C", mirror, "rev-parse", "HEAD"], check=True, capture_output=True, text=True)
    root = tempfile.mkdtemp(prefix="pipeoffload-")
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    package = os.path.join(root, SCHEDULER)
    os.makedirs(package)
    parts = SCHEDULER.split("/")
    for i in range(1, len(parts) + 1):
        open(os.path.join(root, *parts[:i], "__init__.py"), "w").close()
    for name in MODULES:
        text = subprocess.run(
            ["git", "-C", mirror, "show", f"HEAD:{SCHEDULER}/{name}.py"], check=True, capture_output=True, text=True
        ).stdout
        with open(os.path.join(package, f"{name}.py"), "w") as f:
            f.write(text)
    # `megatron.training.get_args`: their modules import it; only the runtime's flags are read.
    training = types.ModuleType("megatron.training")
    training.get_args = lambda: types.SimpleNamespace(offload_overlap_sr=False)
    sys.path.insert(0, root)
    import megatron  # noqa: E402  (the empty package just written)

    sys.modules["megatron.training"] = training
    megatron.training = training
    base = SCHEDULER.replace("/", ".")
    mods = {name: __import__(f"{base}.{name}", fromlist=[name]) for name in MODULES}
    return mods, commit.stdout.strip()


def node_json(node, position=None):
    out = {
        "kind": node.type.value,
        "chunk": node.chunk,
        "layer": node.layer_group_idx,
        "microbatch": node.microbatch,
        "start": float(node.start_time),
        "end": float(node.completion_time),
    }
    if position is not None:
        out["position"] = position
    return out


def run_case(mods, case):
    name, p, m, chunks, group, recompute, offload_chunks, offload_time, f, b, w, comm = case
    graph, passes, offloading, gi = mods["graph"], mods["passes"], mods["offloading"], mods["group_interleaved_1f1b"]
    config = graph.GraphConfig.basic_config(f=f, b=b, w=w, n_stages=p, n_micro=m, max_chunks=chunks)
    config.cost_comm = comm
    log = io.StringIO()
    with contextlib.redirect_stdout(log):
        order = gi.create_schedule(
            config,
            cpu_offload=offload_chunks > 0,
            recompute_granularity="full" if recompute > 0 else None,
            recompute_method="chunk" if recompute > 0 else None,
            recompute_num_layers=recompute,
            interleave_group_size=group,
            offload_chunk_num=offload_chunks,
        )
        # passes.run_schedule_passes up to add_offload.
        passes.pre_validate(order)
        order = passes.add_send_recv_peer_stage(config, order)
        timed = passes.add_time(config, order)
        compute = [[node_json(n) for n in rank] for rank in timed]
        offloaded = None
        if offload_chunks > 0:
            offloaded = offloading.add_offload(config, copy.deepcopy(timed), offload_time)
    used_group = group if recompute == 0 else 1
    parallel = round(max(x + y + z for x, y, z in zip(config.cost_f, config.cost_b, config.cost_w)) * offload_time, 2) \
        if offload_chunks > 0 else None
    ranks = []
    for r in range(p):
        entry = {"compute": compute[r]}
        if offloaded is not None:
            nodes, position = [], 0
            for n in offloaded[r]:
                nodes.append(node_json(n, position))
                if n.type.is_computation():
                    position += 1
            entry["offload"] = nodes
        ranks.append(entry)
    return name, {
        "config": {
            "devices": p,
            "microbatches": m,
            "chunks": chunks,
            "group": min(used_group, p),
            "recompute_chunks": recompute,
            "offload_chunks": offload_chunks,
            "offload_time": offload_time,
        },
        "costs": {
            "f": f,
            "b": b,
            "w": w,
            "comm": comm,
            "parallel_offload_time": parallel,
            "solo_offload_time": None if parallel is None else parallel * 0.7,
        },
        "times": "slot grid" if used_group == 1 else "add_time",
        "ranks": ranks,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mirror", required=True, help="bare clone of sail-sg/zero-bubble-pipeline-parallelism")
    parser.add_argument("--out", required=True, help="directory for the golden JSON files")
    args = parser.parse_args()
    mods, commit = load(os.path.abspath(args.mirror))
    os.makedirs(args.out, exist_ok=True)
    for case in CASES:
        name, data = run_case(mods, case)
        data["source"] = {
            "repository": "https://github.com/sail-sg/zero-bubble-pipeline-parallelism",
            "commit": commit,
            "generator": "tools/pipeoffload_golden.py",
        }
        path = os.path.join(args.out, f"{name}.json")
        text = json.dumps(data, sort_keys=True, indent=2)
        # One node per line: an object with no nested object or list is written on one line.
        text = re.sub(r"\{\s+([^{}\[\]]*?)\s+\}", lambda m: "{" + " ".join(m.group(1).split()) + "}", text)
        with open(path, "w") as f:
            f.write(text + "\n")
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
