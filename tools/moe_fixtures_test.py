#!/usr/bin/env python3
"""Consistency tests of the issue-41 oracle files: python3 tools/moe_fixtures_test.py (stdlib).

They check that each file says what its source says and holds together, so a hand edit or a
regeneration that changes meaning fails here:
- dualpipe_formulas.json: every expression is the quoted README cell, rewritten mechanically;
- megatron-a2a-warmup.json: every row obeys the rule read in Megatron's code (written out here);
- pytorch-dualpipev/: every file is a complete DualPipeV order (each stage runs F, then I or B,
  then W, once per microbatch; pairs join the two stages of a rank) and index.json counts it;
- deepseek_v3_training.json: the derived figures follow from the quoted ones;
- deepseek_profile_train_phases.json: the per-phase sums add up to the pair's totals.
"""

import collections
import csv
import json
import os
import re
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIX = os.path.join(ROOT, "tests", "fixtures", "moe")
GOLD = os.path.join(ROOT, "tests", "golden")


def load(*parts):
    with open(os.path.join(*parts)) as f:
        return json.load(f)


def readme_cell_to_expr(cell):
    """'(*PP*/2-1)(𝐹&𝐵+𝐵-3𝑊)' → '(PP/2-1)*(FB+B-3*W)'."""
    s = cell.replace("*PP*", "PP").replace("𝐹&𝐵", "FB").replace("𝐹", "F").replace("𝐵", "B").replace("𝑊", "W")
    s = s.replace(")(", ")*(")
    s = re.sub(r"(\d)([A-Z])", r"\1*\2", s)
    return s


def evaluate(expr, **values):
    if not re.fullmatch(r"[A-Z0-9+\-*/() ]+", expr):
        raise ValueError(expr)
    return eval(expr, {"__builtins__": {}}, values)  # the grammar above: names, numbers, + - * / ( )


class DualPipeFormulas(unittest.TestCase):
    def setUp(self):
        self.d = load(FIX, "dualpipe_formulas.json")

    def test_expressions_are_the_quoted_cells(self):
        for m in self.d["methods"]:
            self.assertEqual(readme_cell_to_expr(m["bubble_readme"]), m["bubble"], m["method"])
            self.assertIn(m["bubble_readme"], self.d["source"]["table_quote"])
            self.assertEqual(m["devices"], m["devices_readme"].replace("*", ""))
            self.assertEqual(m["activation_per_device"], m["activation_readme"].replace("*", ""))
            self.assertEqual(m["parameter_per_device"] + "×", m["parameter_readme"])

    def test_quoted_rows_name_every_method_once(self):
        rows = [l for l in self.d["source"]["table_quote"].splitlines() if l.startswith("| ") and not l.startswith("| Method")]
        self.assertEqual([r.split("|")[1].strip() for r in rows], [m["method"] for m in self.d["methods"]])

    def test_dualpipe_beats_zb1p_when_the_pair_overlaps(self):
        # PP = 8, F = 1, B = 2, W = 1, F&B = 3 (DualPipe's figure preset): 21, 7, 3.
        v = dict(PP=8, F=1, B=2, W=1, FB=3)
        got = {m["method"]: evaluate(m["bubble"], **v) for m in self.d["methods"]}
        self.assertEqual((got["1F1B"], got["ZB1P"], got["DualPipe"], got["DualPipeV"]), (21, 7, 6, 6))


class MegatronWarmup(unittest.TestCase):
    def test_rows_follow_the_rule(self):
        d = load(GOLD, "megatron-a2a-warmup.json")
        self.assertEqual(d["source"]["flag_lines"], [969])
        for r in d["rows"]:
            pp, vpp, m, g, rank = r["pp"], r["vpp"], r["microbatches"], r["group"], r["rank"]
            total = m * vpp
            self.assertEqual(r["total_microbatches"], total)
            if pp == 1:
                base = 0
            elif vpp == 1:
                base = pp - rank - 1
            else:
                base = 2 * (pp - rank - 1) + (vpp - 1) * g
            self.assertEqual(r["warmup_without"], min(base, total), r)
            refused = pp > 1 and vpp == 1
            self.assertEqual(r["megatron_refuses_with_flag"], refused, r)
            if refused:
                self.assertIsNone(r["warmup_with"])
            else:
                extra = 1 if vpp > 1 else 0
                self.assertEqual(r["warmup_with"], min(base + extra, total), r)

    def test_flag_adds_exactly_one_where_it_is_not_capped(self):
        d = load(GOLD, "megatron-a2a-warmup.json")
        changed = [r for r in d["rows"] if r["warmup_with"] is not None and r["warmup_with"] != r["warmup_without"]]
        self.assertTrue(changed)
        self.assertTrue(all(r["warmup_with"] - r["warmup_without"] == 1 for r in changed))


CELL = re.compile(r"^(\d+)(F|I|W|B)(\d+)$")
PAIR = re.compile(r"^\((\d+F\d+);(\d+B\d+)\)OVERLAP_F_B$")


def parse_compute(path):
    with open(path, newline="") as f:
        rows = [[c.strip() for c in row] for row in csv.reader(f)]
    out = []
    for row in rows:
        acts = []
        for c in row:
            if not c:
                continue
            m = PAIR.match(c)
            parts = [m.group(1), m.group(2)] if m else [c]
            acts.append([CELL.match(p).groups() for p in parts])
        out.append(acts)
    return out


class PyTorchDualPipeV(unittest.TestCase):
    def test_every_order_is_complete_and_paired_within_a_rank(self):
        d = load(GOLD, "pytorch-dualpipev", "index.json")
        self.assertEqual(d["torch"], "2.15.0")
        for size in d["sizes"]:
            p, m = size["devices"], size["microbatches"]
            v = list(range(p)) + list(reversed(range(p)))
            self.assertEqual(size["stage_to_rank"], v)
            ranks = parse_compute(os.path.join(GOLD, "pytorch-dualpipev", size["compute_only"]["file"]))
            self.assertEqual(len(ranks), p)
            done = collections.defaultdict(list)  # (stage, mb) -> kinds in order
            for rank, acts in enumerate(ranks):
                for act in acts:
                    stages = {int(s) for s, _, _ in act}
                    self.assertTrue(all(v[s] == rank for s in stages), (p, m, rank, act))
                    if len(act) == 2:  # a pair: forward of one local stage, full backward of the other
                        self.assertEqual([k for _, k, _ in act], ["F", "B"])
                        self.assertEqual(len(stages), 2)
                    for s, k, mb in act:
                        done[(int(s), int(mb))].append(k)
            self.assertEqual(len(done), 2 * p * m)
            for key, kinds in done.items():
                self.assertIn(kinds, (["F", "B"], ["F", "I", "W"]), (p, m, key))
            pairs = [sum(1 for a in acts if len(a) == 2) for acts in ranks]
            self.assertEqual(pairs, size["overlap_pairs_per_rank"])

    def test_dependencies_hold_on_the_v(self):
        # Forward of stage s before forward of s+1 for the same microbatch, backward the other
        # way: a minimal cross-rank check with unit-time steps in each rank's own order.
        d = load(GOLD, "pytorch-dualpipev", "index.json")
        size = next(s for s in d["sizes"] if (s["devices"], s["microbatches"]) == (4, 10))
        ranks = parse_compute(os.path.join(GOLD, "pytorch-dualpipev", size["compute_only"]["file"]))
        pos = {}
        for rank, acts in enumerate(ranks):
            for i, act in enumerate(acts):
                for s, k, mb in act:
                    pos[(int(s), k if k != "I" else "B", int(mb))] = (rank, i)
        stages = 2 * size["devices"]
        for mb in range(size["microbatches"]):
            for s in range(stages - 1):
                a, b = pos[(s, "F", mb)], pos[(s + 1, "F", mb)]
                if a[0] == b[0]:
                    self.assertLess(a[1], b[1])
                a, b = pos[(s + 1, "B", mb)], pos[(s, "B", mb)]
                if a[0] == b[0]:
                    self.assertLess(a[1], b[1])


class DeepSeekTraining(unittest.TestCase):
    def test_derived_figures_follow_from_the_quoted_ones(self):
        d = load(FIX, "deepseek_v3_training.json")
        f, x = d["facts"], d["derived"]
        per_tok = 1e12 / (f["gpu_hours_per_trillion_tokens"]["value"] * 3600)
        self.assertAlmostEqual(x["tokens_per_second_per_gpu"]["value"], per_tok, delta=0.1)
        self.assertEqual(x["data_parallel_degree"]["value"], f["gpus"]["value"] // f["pipeline_parallel"]["value"])
        self.assertEqual(x["tokens_per_step"]["value"], f["global_batch"]["value"] * f["sequence_length"]["value"])
        self.assertAlmostEqual(x["days_per_trillion_tokens_on_2048"]["value"], 3.7, delta=0.05)  # the report's 3.7 days
        self.assertEqual(f["expert_parallel"]["value"] // f["gpus_per_node"]["value"], f["expert_parallel"]["nodes"])


class DeepSeekProfile(unittest.TestCase):
    def test_phase_sums_add_up(self):
        d = load(FIX, "deepseek_profile_train_phases.json")
        totals = collections.Counter()
        for layer in d["layers"]:
            for p in layer["phases"]:
                for stream, us in p["gpu_us"].items():
                    totals[stream] += us
            self.assertAlmostEqual(layer["compute_us"], sum(p["gpu_us"].get("compute", 0) for p in layer["phases"]), delta=0.5)
        for stream, us in d["pair_gpu_us"].items():
            self.assertAlmostEqual(totals[stream], us, delta=1.0 * len(d["layers"]) * 10)
        self.assertEqual(d["unattributed_gpu_us"], 0)

    def test_communication_runs_on_its_own_stream_beside_compute(self):
        d = load(FIX, "deepseek_profile_train_phases.json")
        for layer in d["layers"]:
            for p in layer["phases"]:
                kind = "communication" if p["phase"].startswith(("dispatch", "combine")) else "compute"
                self.assertIn(kind, p["gpu_us"], p)
        busy = d["pair_gpu_us"]
        # the pair takes less than its compute plus its communication: they overlap
        self.assertLess(d["pair_span_us"], busy["compute"] + busy["communication"])
        self.assertGreater(d["pair_span_us"], busy["compute"])


if __name__ == "__main__":
    unittest.main()
