#!/usr/bin/env python3
"""The roofline cost model (core/src/model/roofline.rs) against every profiled row of the Zero
Bubble paper, in plain Python: the prototype the Rust model was written from.

    python3 tools/roofline_check.py          # the table at the default efficiencies
    python3 tools/roofline_check.py --fit    # the best efficiencies, and a cross-check

Rows: ICLR Table 6 (arXiv Table 9): the median rank of ZB-2p runs on A100 SXM 80GB, sequence
1024, layers padded as the runs padded them; and the arXiv ZB-V profiles from the authors'
`efficiency.py` (one layer per chunk). F, B, W and the hop in ms. No dependencies.
"""
import itertools
import sys

# A100 SXM 80GB: peak dense BF16 FLOP/s, HBM bytes/s, NVLink bytes/s each way, NIC bytes/s.
A100 = dict(peak=312e12, hbm=2039e9, link=300e9, network=25e9)
SEQ = 1024
# The defaults of core/src/model/hardware.rs and roofline.rs.
GEMM, MEMORY, FORWARD_SHARE = 0.80, 0.64, 0.62
LINK_SHARE, NETWORK_SHARE, LATENCY = 0.16, 0.80, 5e-6

# (name, layers in the profiled stage, hidden, heads, micro-batch, devices, F, B, W, hop)
ROWS = [
    ("1.5B m24", 3, 2304, 24, 6, 8, 18.522, 18.086, 9.337, 0.601),
    ("1.5B m32", 3, 2304, 24, 6, 8, 18.513, 18.086, 9.331, 0.626),
    ("1.5B m64", 3, 2304, 24, 6, 8, 18.546, 18.097, 9.321, 0.762),
    ("6.2B m24", 4, 4096, 32, 3, 8, 29.718, 29.444, 19.927, 0.527),
    ("6.2B m32", 4, 4096, 32, 3, 8, 29.802, 29.428, 19.530, 0.577),
    ("6.2B m64", 4, 4096, 32, 3, 8, 29.935, 29.621, 19.388, 0.535),
    ("14.6B m48", 3, 5120, 40, 1, 16, 11.347, 11.248, 8.132, 0.377),
    ("14.6B m64", 3, 5120, 40, 1, 16, 11.307, 11.254, 8.101, 0.379),
    ("14.6B m128", 3, 5120, 40, 1, 16, 11.325, 11.308, 8.109, 0.378),
    ("28.3B m96", 2, 6144, 48, 1, 32, 10.419, 10.207, 7.715, 0.408),
    ("28.3B m128", 2, 6144, 48, 1, 32, 10.408, 10.204, 7.703, 0.408),
    ("28.3B m256", 2, 6144, 48, 1, 32, 10.402, 10.248, 7.698, 0.460),
    ("ZB-V 6.2B m48", 1, 4096, 32, 6, 16, 14.407, 14.380, 9.676, 1.610),
    ("ZB-V 6.2B m64", 1, 4096, 32, 6, 16, 14.412, 14.393, 9.688, 1.621),
    ("ZB-V 6.2B m128", 1, 4096, 32, 6, 16, 14.316, 14.306, 9.639, 1.619),
    ("ZB-V 14.6B m72", 1, 5120, 40, 2, 24, 6.763, 6.969, 5.251, 0.755),
    ("ZB-V 14.6B m96", 1, 5120, 40, 2, 24, 6.783, 6.984, 5.259, 0.758),
    ("ZB-V 14.6B m192", 1, 5120, 40, 2, 24, 6.785, 6.990, 5.260, 0.770),
    ("ZB-V 28.3B m96", 1, 6144, 48, 2, 32, 9.458, 9.748, 7.288, 0.879),
    ("ZB-V 28.3B m128", 1, 6144, 48, 2, 32, 9.469, 9.744, 7.306, 0.892),
    ("ZB-V 28.3B m256", 1, 6144, 48, 2, 32, 9.447, 9.644, 7.193, 0.887),
]


def layer_ops(h, a, s, b):
    """One GPT layer's operators (no FlashAttention, g = A, FFN = 4H): (pass, flops, bytes)."""
    f, t, sc = 4 * h, b * s, b * a * s * s
    ops = []
    for k, n in [(h, 3 * h), (h, h), (h, f), (f, h)]:
        mm = 2.0 * (t * k + k * n + t * n)
        ops += [("F", 2.0 * t * k * n, mm), ("B", 2.0 * t * k * n, mm)]
        ops.append(("W", 2.0 * t * k * n, 2.0 * t * (k + n) + 8.0 * k * n))
    for p in "FFBBBB":  # QK^T, PV; dP, dV, dQ, dK
        ops.append((p, 2.0 * t * s * h, 2.0 * (sc + 2 * t * h)))
    ops += [("F", 0, 9.0 * sc), ("B", 0, 11.0 * sc)]  # softmax and dropout
    ops += [("F", 0, 4.0 * t * h), ("B", 0, 4.0 * t * h)]  # context permute
    ops += [("F", 0, 8.0 * t * h), ("B", 0, 12.0 * t * h)]  # two layer norms
    ops += [("F", 0, 14.0 * t * h), ("B", 0, 22.0 * t * h)]  # bias, dropout, residual
    ops += [("F", 0, 4.0 * t * f), ("B", 0, 6.0 * t * f)]  # GeLU
    ops.append(("B", 0, 2.0 * t * (3 * h + 2 * h + f)))  # bias gradients
    return ops


def passes(ops, gemm, memory, forward=FORWARD_SHARE, gpu=A100):
    """Seconds per pass: each operator at the slower of its FLOPs and its bytes."""
    out = {"F": 0.0, "B": 0.0, "W": 0.0}
    for p, flops, nbytes in ops:
        m = memory * (forward if p == "F" else 1.0)
        out[p] += max(flops / (gpu["peak"] * gemm), nbytes / (gpu["hbm"] * m))
    return out


def hops(h, b, devices, gpu=A100, per_node=8):
    """Seconds per hop within a node, across nodes, and the mean over the chain the runtime
    times (devices fill nodes in order)."""
    nbytes = 2.0 * b * SEQ * h
    within = LATENCY + nbytes / (gpu["link"] * LINK_SHARE)
    across = LATENCY + nbytes / (gpu["network"] * NETWORK_SHARE)
    crossings = -(-devices // per_node) - 1
    mean = ((devices - 1 - crossings) * within + crossings * across) / (devices - 1)
    return within, across, mean


def predicted(row, gemm=GEMM, memory=MEMORY, forward=FORWARD_SHARE):
    _, layers, h, a, b = row[:5]
    t = passes(layer_ops(h, a, SEQ, b), gemm, memory, forward)
    return [layers * t[p] * 1e3 for p in "FBW"]


def errors(rows, gemm, memory, forward):
    return [[(x - m) / m for x, m in zip(predicted(r, gemm, memory, forward), r[6:9])] for r in rows]


def fit(rows):
    """The (gemm, memory, forward) of a grid that minimise the largest error."""
    grid = itertools.product(
        [x / 100 for x in range(70, 90)], [x / 100 for x in range(50, 96, 2)], [x / 100 for x in range(40, 101, 2)]
    )
    return min((max(abs(e) for r in errors(rows, *g) for e in r), g) for g in grid)


def table():
    cell = lambda m, p: f"{m:.3f} / {p:.3f} ({(p - m) / m:+.1%})"
    print("| row | P | F ms measured / model | B | W | hop: measured chain mean / model mean (slowest) |")
    print("|---|---|---|---|---|---|")
    worst = 0.0
    for row in ROWS:
        f, b, w = predicted(row)
        within, across, mean = hops(row[2], row[4], row[5])
        worst = max(worst, *(abs(p - m) / m for p, m in zip((f, b, w), row[6:9])))
        slowest = f" ({across * 1e3:.3f})" if row[5] > 8 else ""
        print(f"| {row[0]} | {row[5]} | {cell(row[6], f)} | {cell(row[7], b)} | {cell(row[8], w)} | "
              f"{cell(row[9], mean * 1e3)}{slowest} |")
    print(f"\nlargest F/B/W error: {worst:.1%} (gemm {GEMM}, memory {MEMORY}, forward share {FORWARD_SHARE})")


def cross_check():
    iclr, zbv = ROWS[:12], ROWS[12:]
    for label, train, test in [("ICLR rows", iclr, zbv), ("ZB-V rows", zbv, iclr)]:
        worst, g = fit(train)
        held = max(abs(e) for r in errors(test, *g) for e in r)
        print(f"fit on the {label}: gemm {g[0]}, memory {g[1]}, forward {g[2]}: largest error {worst:.1%}, "
              f"on the others {held:.1%}")
    worst, g = fit(ROWS)
    print(f"fit on all rows: gemm {g[0]}, memory {g[1]}, forward {g[2]}: largest error {worst:.1%}")


if __name__ == "__main__":
    table()
    if "--fit" in sys.argv:
        cross_check()
