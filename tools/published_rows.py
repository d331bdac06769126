#!/usr/bin/env python3
"""Writes tests/fixtures/published/runs.json: every published whole-step row Bubblescope holds,
each with its own configuration as `bubblescope simulate` flags and what was measured.

Sources (numbers copied from the publications, nothing fitted here):
- Zero Bubble paper (Qi et al., ICLR 2024 / arXiv 2401.10241), Table 4 and arXiv Table 6:
  samples per GPU per second, pure pipeline parallelism, A100 SXM 80GB, sequence 1024. The runs
  put one layer fewer on the first and on the last stage (22 = 3·8 − 2, ...). 1F1B-I uses the
  most chunks (one layer per chunk slot). ZB-2p* runs micro-batch b/2 and 2m.
- Megatron-LM SC21 (Narayanan et al. 2021), Table 1, the rows with pipeline parallelism:
  TFLOP/s per GPU turned into a step time by the paper's eq. (3). Configurations from
  Megatron-LM examples/academic_paper_scripts/sc21/run_table_1.sh.
- torchtitan benchmarks/llama3_h100_202412_torchtitan.md, Table 5: Llama 3.1 405B, 1F1B
  against interleaved 1F1B, tokens/s/GPU.

Runtime semantics (docs/cost-model.md, "Blocking sends"): every row names the runtime it ran on
and how that runtime's pipeline sends behave, and the rows on Megatron-LM's own schedules get
`--p2p blocking`. Megatron-LM without overlap_p2p_comm exchanges after each pass through
p2p_communication.py `_communicate` (batch_isend_irecv, then waits on every request), so a send
completes only once the peer reaches its matching exchange. That is the Zero Bubble paper's
1F1B and 1F1B-I baselines (its repository runs them on Megatron-LM's schedules.py) and every
SC21 row (Megatron-LM itself, before overlap_p2p_comm existed). Not the Zero Bubble families
(the authors' runtime posts its sends and receives asynchronously; under blocking exchanges
their orders deadlock) and not torchtitan (PyTorch's pipelining runtime): those stay
`--p2p async`, the default.

Korthikanti et al. 2022 Table 5 is not here: its iteration times could not be read offline.

Usage: python3 tools/published_rows.py  (rewrites the fixture)
"""
import json
import os

ZB_GPU = ["--gpu", "a100-80gb"]

# How each row's runtime sends between pipeline devices: (field text, flags).
MEGATRON = ("Megatron-LM schedules: blocking p2p exchanges (--p2p blocking)", ["--p2p", "blocking"])
ZB_RUNTIME = ("Zero Bubble's runtime: asynchronous p2p (--p2p async, the default)", [])
TORCH = ("PyTorch pipelining (torchtitan): asynchronous p2p (--p2p async, the default)", [])


def zb_layout(layers, devices):
    """Layers per device share: one fewer on the first and on the last."""
    per = (layers + 2) // devices
    shares = [per] * devices
    shares[0] -= 1
    shares[-1] -= 1
    assert sum(shares) == layers, (layers, devices, shares)
    return ",".join(str(s) for s in shares)


def zb_model(layers, heads, hidden, micro_batch, devices, layout=True):
    # zb-v's heuristic schedules equal stages only: its rows take the even split of the
    # layers in proportion (the embedding and the LM head on device 0 either way).
    shares = ["--layout", zb_layout(layers, devices)] if layout else []
    return [
        "--layers", str(layers), "--heads", str(heads), "--hidden", str(hidden),
        "--seq", "1024", "--vocab", "50257", "--micro-batch", str(micro_batch),
    ] + shares + ZB_GPU


# (name, layers, heads, hidden, micro-batch, devices, microbatches, {schedule: [samples/GPU/s]})
ZB_TABLE_4 = [
    ("1.5B", 22, 24, 2304, 6, 8, [24, 32, 64],
     {"zb-2p": [14.5, 14.8, 14.9], "zb-1p": [12.9, 13.4, 14.2], "1f1b": [11.8, 12.5, 13.6], "1f1b-i": [13.1, 13.4, 13.9]}),
    ("6.2B", 30, 32, 4096, 3, 8, [24, 32, 64],
     {"zb-2p": [4.32, 4.35, 4.39], "zb-1p": [3.88, 4.00, 4.20], "1f1b": [3.50, 3.70, 4.03], "1f1b-i": [4.01, 4.08, 4.19]}),
    ("14.6B", 46, 40, 5120, 1, 16, [48, 64, 128],
     {"zb-2p": [1.81, 1.83, 1.85], "zb-1p": [1.61, 1.67, 1.76], "1f1b": [1.40, 1.49, 1.64], "1f1b-i": [1.54, 1.59, 1.66]}),
    ("28.3B", 62, 48, 6144, 1, 32, [96, 128, 256],
     {"zb-2p": [0.99, 1.00, 1.00], "zb-1p": [0.87, 0.90, 0.96], "1f1b": [0.76, 0.80, 0.88], "1f1b-i": [0.82, 0.85, 0.90]}),
]

# arXiv Table 6 (same memory): ZB-2p* runs micro-batch b/2 and 2m.
ZB_TABLE_6 = [
    ("6.2B", 30, 32, 4096, 6, 16, [48, 64, 128],
     {"zb-v": [4.15, 4.21, 4.35], "zb-2p*": [4.36, 4.37, 4.45], "zb-1p": [3.87, 4.00, 4.29], "1f1b": [3.38, 3.57, 3.91]}),
    ("14.6B", 46, 40, 5120, 2, 24, [72, 96, 192],
     {"zb-v": [1.85, 1.88, 1.93], "zb-2p*": [1.84, 1.84, 1.85], "zb-1p": [1.72, 1.78, 1.89], "1f1b": [1.52, 1.61, 1.76]}),
    ("28.3B", 62, 48, 6144, 2, 32, [96, 128, 256],
     {"zb-v": [1.01, 1.02, 1.06], "zb-2p*": [1.00, 1.00, 1.01], "zb-1p": [0.94, 0.97, 1.03], "1f1b": [0.82, 0.87, 0.95]}),
]


def zb_rows():
    rows = []
    for tag, table, data in (("t4", "Zero Bubble Table 4", ZB_TABLE_4), ("t6", "Zero Bubble arXiv Table 6", ZB_TABLE_6)):
        for name, layers, heads, hidden, b, p, ms, schedules in data:
            for i, m in enumerate(ms):
                group = f"{table} {name} m={m}"
                for sched, values in schedules.items():
                    mb, mm, extra = b, m, []
                    family = sched
                    # The paper's baselines ran on Megatron-LM's schedules, its own on the authors' runtime.
                    runtime, p2p = MEGATRON if sched in ("1f1b", "1f1b-i") else ZB_RUNTIME
                    if sched == "1f1b-i":
                        family = "interleaved-1f1b"
                        extra = ["--chunks", str((layers + 2) // p)]
                    elif sched == "zb-2p*":
                        family, mb, mm = "zb-2p", b // 2, 2 * m
                    args = ["-s", family, "-p", str(p), "-m", str(mm)] + extra + p2p + zb_model(layers, heads, hidden, mb, p, sched != "zb-v")
                    rows.append({
                        "id": f"zb-{tag}-{name.lower()}-m{m}-{sched}",
                        "source": f"{table}: {name}, {p} GPUs, micro-batch {b}, m {m}",
                        "group": group,
                        "schedule": sched,
                        "runtime": runtime,
                        "args": args,
                        "metric": "samples_per_gpu_s",
                        "measured": values[i],
                    })
    return rows


def sc21_step(layers, hidden, batch, gpus, tflops):
    s, v = 2048.0, 51200.0
    flops = 96.0 * batch * s * layers * hidden * hidden * (1 + s / (6 * hidden) + v / (16 * layers * hidden))
    return flops / (gpus * tflops * 1e12)


# (size, layers, hidden, heads, pp, chunks, micro-batch, global batch, GPUs, measured TFLOP/s/GPU)
SC21 = [
    ("39.1B", 48, 8192, 64, 2, None, 4, 1536, 512, 138),
    ("76.1B", 60, 10240, 80, 4, 3, 2, 1792, 1024, 140),
    ("145.6B", 80, 12288, 96, 8, 2, 2, 2304, 1536, 148),
    ("310.1B", 96, 16384, 128, 16, 2, 1, 2160, 1920, 155),
    ("529.6B", 105, 20480, 128, 35, 3, 1, 2520, 2520, 163),
    ("1T", 128, 25600, 160, 64, None, 1, 3072, 3072, 163),
]


def sc21_rows():
    rows = []
    for size, layers, hidden, heads, pp, chunks, mb, gb, gpus, tflops in SC21:
        dp = gpus // (8 * pp)
        family = ["-s", "interleaved-1f1b", "--chunks", str(chunks)] if chunks else ["-s", "1f1b"]
        runtime, p2p = MEGATRON
        args = family + p2p + [
            "-p", str(pp), "--layers", str(layers), "--hidden", str(hidden), "--heads", str(heads),
            "--seq", "2048", "--micro-batch", str(mb), "--vocab", "51200", "--tp", "8",
            "--sequence-parallel", "false", "--precision", "fp16", "--gpu", "a100-80gb",
            "--recompute", "full", "--dp", str(dp), "--gpus", str(gpus), "--global-batch", str(gb),
        ]
        rows.append({
            "id": f"sc21-{size.lower()}",
            "source": f"Megatron-LM SC21 Table 1: {size}, TP 8, PP {pp}, DP {dp}, {tflops} TFLOP/s per GPU",
            "group": f"SC21 {size}",
            "schedule": "interleaved-1f1b" if chunks else "1f1b",
            "runtime": runtime,
            "args": args,
            "metric": "step_s",
            "measured": round(sc21_step(layers, hidden, gb, gpus, tflops), 3),
        })
    return rows


def titan_rows():
    rows = []
    # torchtitan splits 126 layers into 8 stages (1F1B) or 16 (interleaved, 2 per rank); each
    # rank's share is 15, 16 ×6, 15 either way.
    layout = "15,16,16,16,16,16,16,15"
    for sched, family, tps in (("1f1b", ["-s", "1f1b"], 100), ("interleaved-1f1b", ["-s", "interleaved-1f1b", "--chunks", "2"], 128)):
        args = family + [
            "-p", "8", "-m", "8", "--model", "llama-3.1-405b-titan", "--layout", layout,
            "--recompute", "full", "--dp", "8", "--zero", "3", "--gpus", "512", "--global-batch", "256",
        ]
        rows.append({
            "id": f"titan-405b-{sched}",
            "source": "torchtitan llama3_h100_202412 Table 5: Llama 3.1 405B, FSDP 8, TP 8, PP 8, Float8, async TP",
            "group": "torchtitan 405B",
            "schedule": sched,
            "runtime": TORCH[0],
            "args": args + TORCH[1],
            "metric": "tokens_per_gpu_s",
            "measured": tps,
        })
    return rows


def main():
    rows = zb_rows() + sc21_rows() + titan_rows()
    out = os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures", "published", "runs.json")
    with open(out, "w") as f:
        json.dump({"rows": rows}, f, indent=1)
        f.write("\n")
    print(f"{len(rows)} rows -> {os.path.normpath(out)}")


if __name__ == "__main__":
    main()
