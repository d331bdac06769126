#!/usr/bin/env python3
"""Phase times of DeepSeek's published F&B-pair profile (deepseek-ai/profile-data, train.json).

DeepSeek published a PyTorch-profiler trace of one overlapped forward-and-backward chunk pair
of DualPipe, at DeepSeek-V3's pre-training settings (EP64, TP1, 4K sequence; 4 MoE layers per
chunk; balanced routing simulated; PP communication left out). The CPU thread marks each phase
with a user annotation — attn(F), dispatch(F), mlp(F), combine(F), and for the backward chunk
attn(B), attn(W), dispatch(B), mlp(B), mlp(W), combine(B) — and the GPU kernels each launch
carry a correlation id. This script attributes every kernel to the phase whose annotation
launched it and sums GPU time per phase and per CUDA stream. Standard library only.

  git -C /work/.mirror/deepseek-ai+profile-data/repo show HEAD:train.json > /tmp/train.json
  tools/deepseek_profile_phases.py /tmp/train.json                       # a table
  tools/deepseek_profile_phases.py /tmp/train.json --commit $(git -C /work/.mirror/deepseek-ai+profile-data/repo rev-parse HEAD) \
      --json tests/fixtures/moe/deepseek_profile_train_phases.json        # the fixture

The trace itself is DeepSeek's data and is not stored here; the fixture holds the sums.
Kernel times of the communication stream include the time its kernels wait for peers, and
compute kernels run on the SMs communication leaves them: both are as measured in the pair.
"""

import argparse
import collections
import hashlib
import json
import os
import re
import sys

PHASE = re.compile(r"^(attn|dispatch|mlp|combine)\((F|B|W)\)$")


class UserError(Exception):
    def __init__(self, message, hint):
        super().__init__(message)
        self.message = message
        self.hint = hint


def load(path):
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as exc:
        raise UserError(f"cannot read {path}: {exc.strerror.lower()}", "extract it first: git -C <profile-data git dir> show HEAD:train.json > /tmp/train.json")
    try:
        trace = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise UserError(f"{path} is not JSON: {exc.msg.lower()}", "give the train.json of deepseek-ai/profile-data (a Chrome trace)")
    events = trace.get("traceEvents") if isinstance(trace, dict) else None
    if not isinstance(events, list):
        raise UserError(f"{path} has no traceEvents", "give a PyTorch-profiler Chrome trace")
    return trace, events, hashlib.sha256(raw).hexdigest()


def phases(events):
    """The phase annotations in launch order, and the GPU kernels each launched."""
    marks = sorted((e for e in events if e.get("cat") == "user_annotation" and PHASE.match(e.get("name", ""))), key=lambda e: e["ts"])
    if not marks:
        raise UserError("no phase annotations (attn(F), dispatch(F), ...) in the trace", "this script reads DeepSeek's train.json, whose CPU thread annotates each phase")
    launches = {e["args"]["correlation"]: e for e in events if e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {})}
    kernels = [e for e in events if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    starts = [m["ts"] for m in marks]
    per_phase = [[] for _ in marks]
    unattributed = 0
    for k in kernels:
        launch = launches.get(k.get("args", {}).get("correlation"))
        owner = None
        if launch is not None:
            # the last annotation that started before the launch and still runs at it
            for i in range(len(marks) - 1, -1, -1):
                if starts[i] <= launch["ts"] <= starts[i] + marks[i]["dur"]:
                    owner = i
                    break
        if owner is None:
            unattributed += k["dur"]
        else:
            per_phase[owner].append(k)
    return marks, per_phase, unattributed


def stream_roles(per_phase):
    """{stream id: 'compute' | 'communication' | 'compute (second)'} from what runs on it."""
    busy = collections.Counter()
    comm = collections.Counter()
    for ks in per_phase:
        for k in ks:
            busy[k["tid"]] += k["dur"]
            if "::ep::" in k["name"] or "dispatch" in k["name"] or "combine" in k["name"]:
                comm[k["tid"]] += k["dur"]
    roles = {}
    comm_stream = max(comm, key=comm.get) if comm else None
    others = sorted((t for t in busy if t != comm_stream), key=lambda t: -busy[t])
    if comm_stream is not None:
        roles[comm_stream] = "communication"
    for i, t in enumerate(others):
        roles[t] = "compute" if i == 0 else "compute (second)"
    return roles


def summarize(path, commit=None):
    trace, events, digest = load(path)
    marks, per_phase, unattributed = phases(events)
    roles = stream_roles(per_phase)
    t0 = min(k["ts"] for ks in per_phase for k in ks)
    layers = []
    layer = None
    for mark, ks in zip(marks, per_phase):
        name = mark["name"]
        if layer is None or any(p["phase"] == name for p in layer["phases"]):
            # a phase seen again opens the next layer of the pair
            layer = {"phases": []}
            layers.append(layer)
        by_stream = collections.defaultdict(float)
        for k in ks:
            by_stream[roles.get(k["tid"], str(k["tid"]))] += k["dur"]
        entry = {
            "phase": name,
            "gpu_us": {s: round(v, 1) for s, v in sorted(by_stream.items())},
            "kernels": len(ks),
        }
        if ks:
            entry["start_us"] = round(min(k["ts"] for k in ks) - t0, 1)
            entry["end_us"] = round(max(k["ts"] + k["dur"] for k in ks) - t0, 1)
        layer["phases"].append(entry)
    totals = collections.defaultdict(float)
    for ks in per_phase:
        for k in ks:
            totals[roles.get(k["tid"], str(k["tid"]))] += k["dur"]
    end = max(k["ts"] + k["dur"] for ks in per_phase for k in ks)
    for i, l in enumerate(layers):
        f = [p for p in l["phases"] if p["phase"] == "attn(F)"]
        l["layer"] = i
        l["compute_us"] = round(sum(p["gpu_us"].get("compute", 0) for p in l["phases"]), 1)
        l["compute_second_stream_us"] = round(sum(p["gpu_us"].get("compute (second)", 0) for p in l["phases"]), 1)
        l["communication_us"] = round(sum(p["gpu_us"].get("communication", 0) for p in l["phases"]), 1)
        if f and "start_us" in f[0]:
            l["attn_f_start_us"] = f[0]["start_us"]
    for a, b in zip(layers, layers[1:]):
        if "attn_f_start_us" in a and "attn_f_start_us" in b:
            a["period_us"] = round(b["attn_f_start_us"] - a["attn_f_start_us"], 1)
    props = trace.get("deviceProperties") or [{}]
    return {
        "what": "GPU time per phase of one overlapped forward+backward chunk pair of DeepSeek-V3 (DualPipe), 4 MoE layers per chunk, from DeepSeek's own profile",
        "source": {
            "repo": "deepseek-ai/profile-data",
            "path": "train.json",
            "commit": commit,
            "sha256": digest,
            "readme": "The training profile data demonstrates our overlapping strategy for a pair of individual forward and backward chunks in DualPipe. Each chunk contains 4 MoE (Mixture of Experts) layers. The parallel configuration aligns with DeepSeek-V3 pretraining settings: EP64, TP1 with 4K sequence length. And the PP communication is not included during profiling for simplicity.",
            "readme_routing": "Notice that we simulate an absolutely balanced MoE routing strategy for profiling.",
            "device": props[0].get("name"),
            "sms": props[0].get("numSms"),
            "distributed": trace.get("distributedInfo"),
        },
        "how": "tools/deepseek_profile_phases.py: each kernel is attributed, through its launch's correlation id, to the phase annotation the CPU thread was in when it launched it; times are kernel durations summed per CUDA stream",
        "streams": {str(t): r for t, r in sorted(roles.items(), key=lambda x: str(x[0]))},
        "order_of_phases_per_layer": [p["phase"] for p in layers[1]["phases"]] if len(layers) > 1 else [p["phase"] for p in layers[0]["phases"]],
        "pair_span_us": round(end - t0, 1),
        "pair_gpu_us": {s: round(v, 1) for s, v in sorted(totals.items())},
        "unattributed_gpu_us": round(unattributed, 1),
        "layers": layers,
    }


def print_table(s, out):
    out.write(f"{s['what']}\n  device {s['source']['device']} ({s['source']['sms']} SMs), streams: {s['streams']}\n")
    out.write(f"  phase order per layer (CPU issue order): {' '.join(s['order_of_phases_per_layer'])}\n")
    for l in s["layers"]:
        out.write(f"  layer {l['layer']}: compute {l['compute_us'] / 1000:.2f} ms (+{l['compute_second_stream_us'] / 1000:.2f} ms on the second compute stream), communication {l['communication_us'] / 1000:.2f} ms, period {l.get('period_us', 0) / 1000:.2f} ms\n")
        for p in l["phases"]:
            span = f"{p.get('start_us', 0) / 1000:8.2f}–{p.get('end_us', 0) / 1000:8.2f} ms" if "start_us" in p else ""
            out.write(f"      {p['phase']:<12} {span}  " + ", ".join(f"{k} {v / 1000:.2f} ms" for k, v in p["gpu_us"].items()) + "\n")
    tot = s["pair_gpu_us"]
    out.write(f"  pair: span {s['pair_span_us'] / 1000:.2f} ms; GPU busy " + ", ".join(f"{k} {v / 1000:.2f} ms" for k, v in tot.items()) + f"; unattributed {s['unattributed_gpu_us']:.0f} us\n")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__.split("\n\n", 1)[1], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("trace", help="DeepSeek's train.json")
    p.add_argument("--json", metavar="OUT", help="write the summary as JSON")
    p.add_argument("--commit", help="the profile-data commit the trace was taken from, recorded in the JSON")
    args = p.parse_args(argv)
    try:
        s = summarize(args.trace, args.commit)
    except UserError as e:
        sys.stderr.write(f"error: {e.message}\nhint: {e.hint}\n")
        return 2
    if args.json:
        with open(args.json, "w") as f:
            json.dump(s, f, indent=1)
            f.write("\n")
    print_table(s, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
