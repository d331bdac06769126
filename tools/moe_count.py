#!/usr/bin/env python3
"""Parameters and forward FLOPs per token of MoE models, counted from their published configs.

An oracle for Bubblescope's MoE cost model (issue 41), written independently of it: standard
library only, reading tests/fixtures/moe/configs.json (every value there names the file it
came from). It prints, per model, the total and activated parameters (the MTP module apart),
the forward FLOPs per token at a given sequence length, and the model card's figures next to
them, flagging a difference over 1%.

  tools/moe_count.py                          # every model, sequence length 4096
  tools/moe_count.py --model deepseek-v3 --seq 4096
  tools/moe_count.py --json                   # the same numbers, machine-readable
  tools/moe_count.py --terms deepseek-v3      # each term of the count on its own line

What is counted:
- Parameters: every weight matrix, norm vector and router bias. Embedding and output head are
  separate terms; activated parameters include both, as the model cards do.
- Forward FLOPs per token: 2 per multiply-accumulate of every matrix a token passes through
  (the output head included, the embedding lookup excluded, the router's full E scores
  included, only the top-k routed experts and the shared experts), plus attention's score
  and context products: 2·heads·(qk_dim + v_dim) per attended position and layer. Attended
  positions are `seq` ("full", the Megatron/PaLM convention) or (seq+1)/2 on average
  ("causal", what a causal kernel computes). Norms, softmax, activations and RoPE are
  elementwise and left out. Training is 3 × forward (backward = 2 × forward).
- Multi-head latent attention (MLA) is priced as DeepSeek trains it: down-projections
  (hidden→q_lora_rank, hidden→kv_lora_rank+rope), up-projections (q_lora_rank→heads·(nope+rope),
  kv_lora_rank→heads·(nope+v)), output heads·v→hidden; scores over nope+rope dims and context
  over v dims. Not as MHA.
"""

import argparse
import json
import math
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_CONFIGS = os.path.join(ROOT, "tests", "fixtures", "moe", "configs.json")
FLAG_PERCENT = 1.0


class UserError(Exception):
    def __init__(self, message, hint):
        super().__init__(message)
        self.message = message
        self.hint = hint


# ---------------------------------------------------------------------------------------------
# Reading a model


REQUIRED = ["layers", "dense_layers", "hidden", "vocab", "tie_embeddings", "attention", "heads", "glu"]
MLA_KEYS = ["q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"]


def plain_config(entry):
    """The model's config as {key: value}, from the sourced form {key: {"value": v, ...}}."""
    config = entry.get("config")
    if not isinstance(config, dict):
        raise UserError(f"model {entry.get('id')!r} has no `config` object", "give each model a config of {key: {\"value\": ...}}")
    return {k: (v["value"] if isinstance(v, dict) and "value" in v else v) for k, v in config.items()}


def positive_int(c, key, model_id, allow_zero=False):
    v = c.get(key)
    if isinstance(v, bool) or not isinstance(v, int) or v < 0 or (v == 0 and not allow_zero):
        want = "a non-negative integer" if allow_zero else "a positive integer"
        raise UserError(f"model {model_id!r}: `{key}` is {v!r}", f"`{key}` must be {want}")
    return v


def validate(c, model_id):
    """Checks a plain config; raises UserError naming the first problem."""
    for key in REQUIRED:
        if key not in c:
            raise UserError(f"model {model_id!r} has no `{key}`", "every model needs " + ", ".join(REQUIRED))
    for key in ("layers", "hidden", "vocab", "heads"):
        positive_int(c, key, model_id)
    positive_int(c, "dense_layers", model_id, allow_zero=True)
    if c["dense_layers"] > c["layers"]:
        raise UserError(f"model {model_id!r}: {c['dense_layers']} dense layers of {c['layers']}", "dense_layers counts the first layers that are dense: at most `layers`")
    kind = c["attention"]
    if kind not in ("mha", "gqa", "mla"):
        raise UserError(f"model {model_id!r}: attention {kind!r}", "attention is one of mha, gqa, mla")
    if kind == "mla":
        for key in MLA_KEYS:
            if key == "q_lora_rank" and c.get(key) is None:
                continue  # DeepSeek-V2-Lite style: a plain query projection
            positive_int(c, key, model_id)
    else:
        present = [k for k in MLA_KEYS if c.get(k) is not None]
        if present:
            raise UserError(f"model {model_id!r}: MLA setting {present[0]} on {kind} attention", "set attention to \"mla\" or remove the MLA ranks")
        positive_int(c, "kv_heads", model_id)
        positive_int(c, "head_dim", model_id)
        if c["heads"] % c["kv_heads"]:
            raise UserError(f"model {model_id!r}: {c['heads']} heads, {c['kv_heads']} kv heads", "kv_heads must divide heads")
    moe_layers = c["layers"] - c["dense_layers"]
    experts = c.get("experts", 0) or 0
    if moe_layers and not experts:
        raise UserError(f"model {model_id!r}: {moe_layers} MoE layers but no experts", "set `experts`, or make every layer dense with dense_layers = layers")
    if experts:
        positive_int(c, "experts", model_id)
        positive_int(c, "top_k", model_id)
        positive_int(c, "expert_ffn", model_id)
        if c["top_k"] > c["experts"]:
            raise UserError(f"model {model_id!r}: top_k {c['top_k']} above {c['experts']} experts", "top_k is how many routed experts a token uses: at most `experts`")
        positive_int(c, "shared_experts", model_id, allow_zero=True)
    elif c.get("expert_ffn"):
        raise UserError(f"model {model_id!r}: an expert_ffn without experts", "set `experts` or remove `expert_ffn`")
    if c["dense_layers"]:
        positive_int(c, "dense_ffn", model_id)
    positive_int(c, "mtp_layers", model_id, allow_zero=True) if "mtp_layers" in c else None
    if c.get("qk_norm", "none") not in ("none", "per_head", "full"):
        raise UserError(f"model {model_id!r}: qk_norm {c.get('qk_norm')!r}", "qk_norm is one of none, per_head, full")


# ---------------------------------------------------------------------------------------------
# The count: every term a named weight shape, so each can be checked (and dropped) on its own


def mlp_matrices(c, ffn):
    """Weights of one MLP of intermediate size `ffn`: gate, up, down for a GLU, up, down otherwise."""
    return (3 if c["glu"] else 2) * c["hidden"] * ffn


def attention_params(c):
    """Per layer: {term: parameters} of the attention block (projections and its own norms)."""
    h, heads = c["hidden"], c["heads"]
    if c["attention"] == "mla":
        nope, rope, v = c["qk_nope_head_dim"], c["qk_rope_head_dim"], c["v_head_dim"]
        rq, rkv = c.get("q_lora_rank"), c["kv_lora_rank"]
        t = {}
        if rq:
            t["mla_q_down"] = h * rq
            t["mla_q_down_norm"] = rq
            t["mla_q_up"] = rq * heads * (nope + rope)
        else:
            t["mla_q"] = h * heads * (nope + rope)
        t["mla_kv_down"] = h * (rkv + rope)  # the latent plus the shared rope key
        t["mla_kv_down_norm"] = rkv
        t["mla_kv_up"] = rkv * heads * (nope + v)
        t["mla_out"] = heads * v * h
        return t
    d, kv = c["head_dim"], c["kv_heads"]
    t = {"attn_q": h * heads * d, "attn_k": h * kv * d, "attn_v": h * kv * d, "attn_out": heads * d * h}
    qk = c.get("qk_norm", "none")
    if qk == "per_head":
        t["attn_qk_norm"] = 2 * d
    elif qk == "full":
        t["attn_qk_norm"] = heads * d + kv * d
    return t


def attention_core_flops(c, ctx):
    """Per layer and token: score (Q·K) and context (P·V) multiply-adds over `ctx` positions."""
    heads = c["heads"]
    if c["attention"] == "mla":
        qk, v = c["qk_nope_head_dim"] + c["qk_rope_head_dim"], c["v_head_dim"]
    else:
        qk = v = c["head_dim"]
    return {"attn_scores": 2 * heads * qk * ctx, "attn_context": 2 * heads * v * ctx}


def moe_layer_params(c, active):
    """Per MoE layer: routed experts (all, or the top-k a token uses), shared experts, router."""
    e, f = c["experts"], c["expert_ffn"]
    shared_ffn = c.get("shared_expert_ffn", c.get("shared_experts", 0) * f)
    t = {"routed_experts": (c["top_k"] if active else e) * mlp_matrices(c, f)}
    if shared_ffn:
        t["shared_experts"] = mlp_matrices(c, shared_ffn)
    t["router"] = c["hidden"] * e
    if c.get("router_bias"):
        t["router_bias"] = e
    return t


def layer_terms(c, dense, active):
    """{term: parameters} of one transformer layer."""
    t = dict(attention_params(c))
    t["layer_norms"] = 2 * c["hidden"]
    if dense:
        t["dense_mlp"] = mlp_matrices(c, c["dense_ffn"])
    else:
        t.update(moe_layer_params(c, active))
    return t


def add(into, terms, times=1):
    for k, v in terms.items():
        into[k] = into.get(k, 0) + v * times


def main_terms(c, active):
    """{term: parameters} of the main model (MTP apart): total, or activated per token."""
    t = {"embedding": c["vocab"] * c["hidden"]}
    t["output_head"] = 0 if c["tie_embeddings"] else c["vocab"] * c["hidden"]
    t["final_norm"] = c["hidden"]
    add(t, layer_terms(c, True, active), c["dense_layers"]) if c["dense_layers"] else None
    moe = c["layers"] - c["dense_layers"]
    add(t, layer_terms(c, False, active), moe) if moe else None
    return t


def mtp_terms(c, active):
    """{term: parameters} of the MTP modules: their own weights only (embedding and head shared).

    DeepSeek-V3 (README_WEIGHTS.md): enorm, hnorm, eh_proj (2h→h), one transformer layer with
    the main model's structure (an MoE layer), and shared_head's norm.
    """
    n = c.get("mtp_layers", 0) or 0
    t = {}
    if not n:
        return t
    h = c["hidden"]
    add(t, {"mtp_enorm_hnorm": 2 * h, "mtp_eh_proj": 2 * h * h, "mtp_head_norm": h}, n)
    add(t, {"mtp_" + k: v for k, v in layer_terms(c, c["dense_layers"] == c["layers"], active).items()}, n)
    return t


NOT_MATMUL = ("norm", "router_bias")  # elementwise: no FLOPs counted


def forward_flop_terms(c, seq, causal):
    """{term: forward FLOPs per token} of the main model at sequence length `seq`."""
    ctx = (seq + 1) / 2 if causal else seq
    t = {}
    for k, v in main_terms(c, active=True).items():
        if k == "embedding" or any(s in k for s in NOT_MATMUL):
            continue
        t[k] = 2 * v
    add(t, attention_core_flops(c, ctx), c["layers"])
    return t


def count(entry, seq):
    """Every figure of one model, as a dict."""
    c = plain_config(entry)
    validate(c, entry.get("id"))
    total_t, active_t = main_terms(c, False), main_terms(c, True)
    mtp_total_t, mtp_active_t = mtp_terms(c, False), mtp_terms(c, True)
    emb = total_t["embedding"] + total_t["output_head"]
    fwd_full = sum(forward_flop_terms(c, seq, causal=False).values())
    fwd_causal = sum(forward_flop_terms(c, seq, causal=True).values())
    return {
        "id": entry.get("id"),
        "params_total": sum(total_t.values()),
        "params_active": sum(active_t.values()),
        "params_active_without_input_embedding": sum(active_t.values()) - total_t["embedding"],
        "params_embedding_and_head": emb,
        "params_non_embedding": sum(total_t.values()) - emb,
        "mtp_params": sum(mtp_total_t.values()),
        "mtp_params_active_with_shared": sum(mtp_active_t.values()) + emb,
        "params_total_with_mtp": sum(total_t.values()) + sum(mtp_total_t.values()),
        "seq": seq,
        "forward_flops_per_token_full": fwd_full,
        "forward_flops_per_token_causal": fwd_causal,
        "matmul_flops_per_token": fwd_full - sum(attention_core_flops(c, seq).values()) * c["layers"],
        "training_flops_per_token_causal": 3 * fwd_causal,
        "terms_total": total_t,
        "terms_active": active_t,
        "terms_mtp": mtp_total_t,
    }


# ---------------------------------------------------------------------------------------------
# The model cards


CARD_TO_COUNT = {
    "total_params": "params_total",
    "active_params": "params_active",
    "active_params_rounded": "params_active",
    "non_embedding_params": "params_non_embedding",
    "mtp_params": "mtp_params",
    "mtp_active_params": "mtp_params_active_with_shared",
    "with_mtp_params": "params_total_with_mtp",
    "embedding_params": None,  # one matrix: compared with vocab × hidden below
}
PAIRS = ("paper", "card_rounded")  # [total, active]


def stated_unit(value):
    """The rounding unit of a stated figure: 36.7e9 → 1e8, 671e9 → 1e9, 7e9 → 1e9."""
    billions = f"{value / 1e9:.6f}".rstrip("0").rstrip(".")
    decimals = len(billions.split(".")[1]) if "." in billions else 0
    return 10 ** (9 - decimals)


def comparisons(entry, counted):
    """[(what, stated, counted, percent difference, rounds to the statement, source)]."""
    rows = []
    card = entry.get("model_card", {})
    for key, item in card.items():
        value = item.get("value")
        if key in PAIRS:
            pairs = [("total_params", value[0], "params_total"), ("active_params", value[1], "params_active")]
        elif key == "embedding_params":
            pairs = [(key, value, None)]
        elif key in CARD_TO_COUNT:
            pairs = [(key, value, CARD_TO_COUNT[key])]
        else:
            continue
        for what, stated, field in pairs:
            got = counted["terms_total"]["embedding"] if field is None else counted[field]
            diff = 100.0 * (got - stated) / stated
            rounds = abs(got - stated) <= stated_unit(stated) / 2
            rows.append((f"{key}" if key not in PAIRS else f"{key}.{what}", stated, got, diff, rounds, item.get("source")))
    return rows


# ---------------------------------------------------------------------------------------------
# Output


def billions(x):
    return f"{x / 1e9:,.3f}B"


def gflops(x):
    return f"{x / 1e9:,.2f}"


def print_model(entry, counted, out):
    out.write(f"{entry.get('name', entry.get('id'))} ({entry.get('id')})\n")
    out.write(f"  params total            {billions(counted['params_total'])}\n")
    out.write(f"  params active / token   {billions(counted['params_active'])}  (embedding and head {billions(counted['params_embedding_and_head'])} included)\n")
    if counted["mtp_params"]:
        out.write(f"  MTP module (apart)      {billions(counted['mtp_params'])} own, {billions(counted['mtp_params_active_with_shared'])} active with the shared embedding and head\n")
    s = counted["seq"]
    out.write(f"  forward GFLOP / token   {gflops(counted['forward_flops_per_token_causal'])} causal, {gflops(counted['forward_flops_per_token_full'])} full attention (seq {s}; matmuls alone {gflops(counted['matmul_flops_per_token'])})\n")
    ref = entry.get("training_flops_reference")
    if ref:
        got = counted["training_flops_per_token_causal"]
        diff = 100.0 * (got - ref["value"]) / ref["value"]
        out.write(f"  training GFLOP / token  {gflops(got)} (3 × causal forward) vs {gflops(ref['value'])} stated ({diff:+.1f}%): {ref['source']}\n")
    out.write("  model card              stated      counted     diff     \n")
    for what, stated, got, diff, rounds, source in comparisons(entry, counted):
        flag = "  FLAG >1%" if abs(diff) > FLAG_PERCENT else ""
        note = "" if rounds else " (does not round to the stated figure)"
        out.write(f"    {what:<28} {billions(stated):>10}  {billions(got):>10}  {diff:+6.2f}%{flag}{note}  [{source}]\n")
    out.write("\n")


def print_terms(counted, out):
    for title, terms in (("total", counted["terms_total"]), ("active", counted["terms_active"]), ("mtp", counted["terms_mtp"])):
        out.write(f"{title}:\n")
        for k, v in terms.items():
            out.write(f"  {k:<24} {v:>16,}\n")


def load(path):
    try:
        with open(path) as f:
            data = json.load(f)
    except OSError as exc:
        raise UserError(f"cannot read {path}: {exc.strerror.lower()}", "pass --configs with the path of a configs.json like tests/fixtures/moe/configs.json")
    except json.JSONDecodeError as exc:
        raise UserError(f"{path} is not JSON: {exc.msg.lower()} at line {exc.lineno}", "fix the file or pass another with --configs")
    models = data.get("models") if isinstance(data, dict) else None
    if not isinstance(models, list) or not models:
        raise UserError(f"{path} has no `models` list", "a configs file is {\"models\": [{\"id\": ..., \"config\": {...}}]}")
    return models


def pick(models, wanted):
    if wanted is None:
        return models
    chosen = [m for m in models if m.get("id") == wanted]
    if not chosen:
        raise UserError(f"no model {wanted!r}", "use one of " + ", ".join(str(m.get("id")) for m in models))
    return chosen


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--configs", default=DEFAULT_CONFIGS, help="configs file (default: tests/fixtures/moe/configs.json)")
    p.add_argument("--model", help="one model id (default: all)")
    p.add_argument("--seq", type=int, default=4096, help="sequence length for the attention term (default 4096)")
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    p.add_argument("--terms", metavar="MODEL", help="print every term of one model's count")
    args = p.parse_args(argv)
    try:
        if args.seq < 1:
            raise UserError(f"--seq {args.seq}", "the sequence length is a positive number of tokens")
        models = load(args.configs)
        if args.terms:
            print_terms(count(pick(models, args.terms)[0], args.seq), sys.stdout)
            return 0
        chosen = pick(models, args.model)
        results = [(m, count(m, args.seq)) for m in chosen]
        if args.json:
            rows = []
            for m, r in results:
                r = dict(r)
                r["model_card"] = [
                    {"what": w, "stated": s, "counted": g, "percent": round(d, 3), "flag": abs(d) > FLAG_PERCENT, "rounds_to_stated": ok, "source": src}
                    for w, s, g, d, ok, src in comparisons(m, r)
                ]
                rows.append(r)
            json.dump(rows, sys.stdout, indent=1)
            sys.stdout.write("\n")
        else:
            for m, r in results:
                print_model(m, r, sys.stdout)
        return 0
    except UserError as e:
        sys.stderr.write(f"error: {e.message}\nhint: {e.hint}\n")
        return 2


if __name__ == "__main__":
    sys.exit(main())
