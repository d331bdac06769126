#!/usr/bin/env python3
"""Writes a large trace set for the reading benchmark: a real fixture's ranks, padded with
copies of their own operators (before the profiled steps, so the run read is unchanged) until
the set holds SIZE bytes of uncompressed JSON.

    tools/big-trace.py tests/fixtures/traces/interleaved-zb target/big-trace --size 1G
    /usr/bin/time -v target/release/bubblescope trace target/big-trace --json > /dev/null

Real GPU traces are mostly operators and kernels: this is their shape, at their size.
"""

import argparse
import gzip
import json
import os
import sys


def size_of(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    text = text.strip().upper()
    if text and text[-1] in units:
        return int(float(text[:-1]) * units[text[-1]])
    return int(text)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run", help="a fixture folder with rank*.pt.trace.json.gz")
    parser.add_argument("out", help="the folder to write (plain .pt.trace.json files)")
    parser.add_argument("--size", default="1G", help="total uncompressed bytes over all ranks [default: 1G]")
    args = parser.parse_args()
    files = sorted(f for f in os.listdir(args.run) if f.endswith(".pt.trace.json.gz"))
    if not files:
        sys.exit(f"error: {args.run} holds no .pt.trace.json.gz files\nhint: give a folder of tests/fixtures/traces")
    os.makedirs(args.out, exist_ok=True)
    per_rank = size_of(args.size) // len(files)
    for name in files:
        with gzip.open(os.path.join(args.run, name), "rt") as f:
            trace = json.load(f)
        events = trace.pop("traceEvents")
        ops = [e for e in events if e.get("cat") == "cpu_op" and e.get("ph") == "X"]
        first = min(e["ts"] for e in events if e.get("ph") == "X")
        path = os.path.join(args.out, name[: -len(".gz")])
        with open(path, "w") as out:
            head = json.dumps(trace)[:-1]
            out.write(head + ', "traceEvents": [')
            written = len(head)
            for i, e in enumerate(events):
                out.write(("," if i else "") + json.dumps(e))
            # Copies of the rank's operators, a day before its first event.
            k = 0
            while written < per_rank:
                e = dict(ops[k % len(ops)])
                e["ts"] = first - 86_400e6 + k * 10.0
                line = "," + json.dumps(e)
                out.write(line)
                written += len(line)
                k += 1
            out.write("]}\n")
        print(f"{path}: {os.path.getsize(path) / (1 << 20):.0f} MiB, {k} operators added", file=sys.stderr)


if __name__ == "__main__":
    main()
