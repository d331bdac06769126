"""Checks the exact search against an independent solver: OR-Tools' CP-SAT.

Run by tools/cp-sat-check.sh, which installs OR-Tools in a virtual environment. For a random
sample of small problems (every family, P = 2..4, M = P..8, five cost sets) it asks
`optimal_problem` for the problem and the search's answer, models the same problem in CP-SAT
and compares. A contradiction (exit status 1) is one of:

- an order CP-SAT finds that costs less than an optimum the search proved, or less than the
  lower bound the search proved (its pruning or its bound is unsound);
- a lower bound CP-SAT proves above the cost of the search's order (one of the two models is
  wrong: the search's orders are simulated, so its cost is real);
- a CP-SAT order that two timers cost differently: this file's as-soon-as-possible re-timing
  and Bubblescope's simulator (`optimal_problem --time`), or that the simulator finds over
  the memory limit (the problem statement and the simulator disagree).

An order CP-SAT finds that is cheaper than the search's best where the search proved only an
interval (and inside that interval) contradicts nothing: it is counted as "CP-SAT's order
better", evidence of where the search's orders are weak.

The CP-SAT model: an interval per op on its device's no-overlap; each op after the ops it waits
for, plus the communication time across devices; each device's activation memory as a
reservoir (+alloc as an op starts, -release as it ends) at most the limit; cost at least every
device's last end minus its first start. Its start times are free, where the simulator starts
every op as soon as possible, and the span cost can fall when a device starts later, so its
optimum is a lower bound on the problem's; its orders are re-timed as soon as possible here
(an implementation independent of the simulator's) before they are compared.
"""

import argparse
import json
import math
import random
import subprocess
import sys
import time

from ortools.sat.python import cp_model

COST_SETS = [(1, 1, 1, 0), (1, 1, 1, 1), (2, 3, 1, 0), (2, 3, 1, 1), (3, 4, 2, 1)]
# Times and memory are multiples of 1/SCALE in every cost set above.
TIME_SCALE = 4
MEMORY_SCALE = 1024


def producers(ops):
    prod = {}
    for i, o in enumerate(ops):
        for k in o["provides"]:
            prod.setdefault(k, i)
    return prod


def asap_cost(problem, orders):
    """The longest device span of per-device orders timed as soon as possible (None: deadlock)."""
    ops, comm = problem["ops"], problem["comm"]
    prod = producers(ops)
    end = {}
    pos = [0] * len(orders)
    free = [0.0] * len(orders)
    first = [None] * len(orders)
    left = len(ops)
    while left:
        progress = False
        for d, order in enumerate(orders):
            while pos[d] < len(order):
                o = order[pos[d]]
                start = free[d]
                if any(prod[k] not in end for k in ops[o]["deps"]):
                    break
                for k in ops[o]["deps"]:
                    p = prod[k]
                    start = max(start, end[p] + (0 if ops[p]["device"] == d else comm))
                end[o] = free[d] = start + ops[o]["time"]
                first[d] = start if first[d] is None else first[d]
                pos[d] += 1
                left -= 1
                progress = True
        if not progress:
            return None
    return max(free[d] - first[d] for d in range(len(orders)) if first[d] is not None)


def solve(problem, seconds, workers, seed=0, deterministic=False):
    ops = problem["ops"]
    comm = round(problem["comm"] * TIME_SCALE)
    limit = problem["limit"]
    devices = 1 + max(o["device"] for o in ops)
    horizon = round(sum(o["time"] for o in ops) * TIME_SCALE) + comm * len(ops) + 1
    m = cp_model.CpModel()
    start, end, interval = [], [], []
    for i, o in enumerate(ops):
        s, e = m.NewIntVar(0, horizon, f"s{i}"), m.NewIntVar(0, horizon, f"e{i}")
        start.append(s)
        end.append(e)
        interval.append(m.NewIntervalVar(s, round(o["time"] * TIME_SCALE), e, f"i{i}"))
    prod = producers(ops)
    for i, o in enumerate(ops):
        for k in o["deps"]:
            p = prod[k]
            m.Add(start[i] >= end[p] + (0 if ops[p]["device"] == o["device"] else comm))
    cost = m.NewIntVar(0, horizon, "cost")
    for d in range(devices):
        mine = [i for i, o in enumerate(ops) if o["device"] == d]
        m.AddNoOverlap([interval[i] for i in mine])
        if limit is not None:
            times, changes = [], []
            for i in mine:
                alloc = round(ops[i]["alloc"] * MEMORY_SCALE)
                release = round(ops[i]["release"] * MEMORY_SCALE)
                if alloc:
                    times.append(start[i])
                    changes.append(alloc)
                if release:
                    times.append(end[i])
                    changes.append(-release)
            if times:
                m.AddReservoirConstraint(times, changes, -(10**12), math.floor(limit * MEMORY_SCALE + 1e-6))
        first, last = m.NewIntVar(0, horizon, f"f{d}"), m.NewIntVar(0, horizon, f"l{d}")
        m.AddMinEquality(first, [start[i] for i in mine])
        m.AddMaxEquality(last, [end[i] for i in mine])
        m.Add(cost >= last - first)
        # Redundant: a device's span holds all its work.
        m.Add(last - first >= round(sum(ops[i]["time"] for i in mine) * TIME_SCALE))
    m.Minimize(cost)
    solver = cp_model.CpSolver()
    solver.parameters.random_seed = seed
    if deterministic:
        # One worker and CP-SAT's deterministic clock: the same answers on every run.
        solver.parameters.num_workers = 1
        solver.parameters.max_deterministic_time = seconds
    else:
        solver.parameters.max_time_in_seconds = seconds
        solver.parameters.num_workers = workers
    began = time.time()
    status = solver.Solve(m)
    out = {"status": solver.StatusName(status), "seconds": round(time.time() - began, 1)}
    out["bound"] = solver.BestObjectiveBound() / TIME_SCALE
    if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        orders = [
            sorted((i for i, o in enumerate(ops) if o["device"] == d), key=lambda i: solver.Value(start[i]))
            for d in range(devices)
        ]
        out["relaxed"] = solver.ObjectiveValue() / TIME_SCALE
        out["asap"] = asap_cost(problem, orders)
        out["orders"] = orders
    return out


def simulated(binary, args, orders):
    """Bubblescope's simulator on `orders`: {cost, fits}, or {error} when it cannot run them."""
    run = subprocess.run([binary, "--time", *args], input=json.dumps(orders), capture_output=True, text=True)
    return json.loads(run.stdout) if run.returncode == 0 else {"error": (run.stderr.strip().splitlines() or ["no output"])[0]}


def disagreement(ours, cp, sim, eps=1e-6):
    """What the search's answer and CP-SAT's contradict each other on (empty: nothing)."""
    wrong = []
    if sim is not None:
        asap, cost = cp.get("asap"), sim.get("cost")
        if asap is None or cost is None or abs(cost - asap) > eps:
            re_timed = "deadlocks" if asap is None else f"costs {asap}"
            simulator = sim.get("error") or f"costs {cost}"
            wrong.append(f"CP-SAT's order, re-timed here: {re_timed}; in the simulator: {simulator}")
        elif not sim["fits"]:
            wrong.append("CP-SAT's order is over the memory limit in the simulator")
        elif asap < ours["cost"] - eps and ours["proven"]:
            wrong.append("CP-SAT found a cheaper order than the proven optimum")
        elif asap < ours["bound"] - eps:
            wrong.append("CP-SAT found an order below the search's lower bound")
    if cp["bound"] > ours["cost"] + eps:
        wrong.append("CP-SAT's lower bound is above the search's order")
    return wrong


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--binary", required=True, help="the optimal_problem example")
    ap.add_argument("--count", type=int, default=40, help="problems to check")
    ap.add_argument("--seconds", type=float, default=10, help="CP-SAT's time per problem")
    ap.add_argument("--workers", type=int, default=2, help="CP-SAT's threads")
    ap.add_argument("--seed", type=int, default=1, help="the sample's and CP-SAT's random seed")
    ap.add_argument(
        "--deterministic",
        action="store_true",
        help="one worker, --seconds of CP-SAT's deterministic time: repeatable runs",
    )
    ap.add_argument("--max-devices", type=int, default=4)
    args = ap.parse_args()
    families = subprocess.run([args.binary, "--families"], capture_output=True, text=True, check=True).stdout.split()
    cases = [
        (f, p, m, c)
        for f in families
        for p in range(2, args.max_devices + 1)
        for m in range(p, 9)
        for c in COST_SETS
    ]
    random.Random(args.seed).shuffle(cases)
    checked = disagreements = 0
    tally = {"both proven": 0, "only the search proved": 0, "only CP-SAT proved": 0, "neither": 0}
    better = 0
    for family, p, m, c in cases:
        if checked >= args.count:
            break
        problem_args = [family, str(p), str(m), *map(str, c)]
        run = subprocess.run([args.binary, *problem_args], capture_output=True, text=True)
        if run.returncode != 0:
            continue  # the family does not generate at this size
        problem = json.loads(run.stdout)
        ours = problem["search"]
        cp = solve(problem, args.seconds, args.workers, args.seed, args.deterministic)
        checked += 1
        sim = simulated(args.binary, problem_args, cp["orders"]) if "orders" in cp else None
        wrong = disagreement(ours, cp, sim)
        improves = not wrong and cp.get("asap") is not None and cp["asap"] < ours["cost"] - 1e-6
        better += improves
        cp_proven = cp["status"] == "OPTIMAL" and cp.get("asap") is not None and abs(cp["asap"] - cp["bound"]) < 1e-6
        tally[
            ("both proven" if cp_proven else "only the search proved")
            if ours["proven"]
            else ("only CP-SAT proved" if cp_proven else "neither")
        ] += 1
        disagreements += bool(wrong)
        print(
            f"{family:17} P={p} M={m} F,B,W,comm={','.join(map(str, c)):9} "
            f"search [{ours['bound']:g}, {ours['cost']:g}]{' proven' if ours['proven'] else ''}  "
            f"cp-sat [{cp['bound']:g}, {cp.get('asap', '-')}] {cp['status'].lower()} {cp['seconds']}s"
            + ("  <-- " + "; ".join(wrong) if wrong else "")
            + ("  (CP-SAT's order better)" if improves else ""),
            flush=True,
        )
    print(
        f"\n{checked} problems, {disagreements} contradictions; "
        + ", ".join(f"{k} {v}" for k, v in tally.items())
        + f"; CP-SAT's order better than the search's unproven best {better}"
    )
    sys.exit(1 if disagreements else 0)


if __name__ == "__main__":
    main()
