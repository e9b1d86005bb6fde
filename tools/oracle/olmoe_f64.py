"""A second, deliberately plain OLMoE forward pass in float64 numpy, to check olmoe_ref.py.

It is written from the formulas (DESIGN.md section 2), not from transformers' code: one token at
a time, explicit loops over heads and experts, no KV cache object, RoPE angles in float64.
Agreement with the float32 torch reference to ~1e-5 says both read the model the same way;
it is slow and meant for tiny models only.

    olmoe_f64.py --model M.gguf --tokens 1,2,3 --logits OUT.f64 [--routing OUT.json]
    olmoe_f64.py --batch JOBS.json     [{"model": M, "tokens": [...], "logits": OUT, "routing": R}, ...]

OUT.f64: float64 little-endian, [len(tokens)][vocab], logits after each prompt position.
OUT.json (optional): per position, per layer, the chosen expert ids in increasing order.
Router ties go to the lower expert id.
"""

import argparse
import json
import os
import sys

import numpy as np

sys.dont_write_bytecode = True  # leave no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gguf_reader as gr  # noqa: E402
from olmoe_config import read_config  # noqa: E402


def run(model, ids, logits_path, routing_path=None):
    g = gr.GGUFFile(model)
    c = read_config(g)

    def w(name):
        return g.tensor(name).astype(np.float64)

    eps, d, nh, nkv = c["rms_norm_eps"], c["head_dim"], c["num_attention_heads"], c["num_key_value_heads"]
    n_exp, top_k = c["num_experts"], c["num_experts_per_tok"]

    def norm(x, weight):
        return x / np.sqrt(np.mean(x * x) + eps) * weight

    def rope(x, pos):  # x: [heads, d], half-split pairs (i, i + d/2)
        i = np.arange(d // 2)
        ang = pos * c["rope_theta"] ** (-2.0 * i / d)
        lo, hi = x[:, : d // 2].copy(), x[:, d // 2:].copy()
        cos, sin = np.cos(ang), np.sin(ang)
        return np.concatenate([lo * cos - hi * sin, hi * cos + lo * sin], axis=1)

    emb = w("token_embd.weight")
    xs = [emb[i].copy() for i in ids]
    layers = []
    for l in range(c["num_hidden_layers"]):
        p = "blk.%d." % l
        layers.append({k: w(p + k + ".weight") for k in (
            "attn_norm", "attn_q", "attn_k", "attn_v", "attn_output", "attn_q_norm", "attn_k_norm",
            "ffn_norm", "ffn_gate_inp", "ffn_gate_exps", "ffn_up_exps", "ffn_down_exps")})
    routing = [[] for _ in ids]
    for L in layers:
        keys, vals, new = [], [], []
        for pos, x in enumerate(xs):
            h = norm(x, L["attn_norm"])
            if c["qk_norm_per_head"]:  # Qwen3: each head normed with one head's weights
                q = np.concatenate([norm(y, L["attn_q_norm"]) for y in (L["attn_q"] @ h).reshape(nh, d)])
                k = np.concatenate([norm(y, L["attn_k_norm"]) for y in (L["attn_k"] @ h).reshape(nkv, d)])
            else:
                q = norm(L["attn_q"] @ h, L["attn_q_norm"])
                k = norm(L["attn_k"] @ h, L["attn_k_norm"])
            v = L["attn_v"] @ h
            if c["clip_qkv"] is not None:
                q, k, v = (np.clip(t, -c["clip_qkv"], c["clip_qkv"]) for t in (q, k, v))
            q = rope(q.reshape(nh, d), pos)
            keys.append(rope(k.reshape(nkv, d), pos))
            vals.append(v.reshape(nkv, d))
            att = np.zeros((nh, d))
            for head in range(nh):
                kv = head // (nh // nkv)
                s = np.array([q[head] @ keys[j][kv] for j in range(pos + 1)]) / np.sqrt(d)
                s = np.exp(s - s.max())
                s /= s.sum()
                att[head] = sum(s[j] * vals[j][kv] for j in range(pos + 1))
            x = x + L["attn_output"] @ att.reshape(-1)
            h = norm(x, L["ffn_norm"])
            r = L["ffn_gate_inp"] @ h
            r = np.exp(r - r.max())
            r /= r.sum()
            chosen = sorted(sorted(range(n_exp), key=lambda e: (-r[e], e))[:top_k])
            routing[pos].append(chosen)
            wsum = sum(r[e] for e in chosen) if c["norm_topk_prob"] else 1.0
            moe = np.zeros_like(x)
            for e in chosen:  # increasing expert id
                gt = L["ffn_gate_exps"][e] @ h
                up = L["ffn_up_exps"][e] @ h
                moe += (r[e] / wsum) * (L["ffn_down_exps"][e] @ (gt / (1 + np.exp(-gt)) * up))
            new.append(x + moe)
        xs = new
    out = np.stack([w("output.weight") @ norm(x, w("output_norm.weight")) for x in xs])
    out.astype("<f8").tofile(logits_path)
    if routing_path:
        with open(routing_path, "w") as f:
            json.dump(routing, f)


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("--model")
    ap.add_argument("--tokens")
    ap.add_argument("--logits")
    ap.add_argument("--routing")
    ap.add_argument("--batch")
    a = ap.parse_args(argv)
    if a.batch:
        with open(a.batch) as f:
            for job in json.load(f):
                run(job["model"], [int(x) for x in job["tokens"]], job["logits"], job.get("routing"))
    elif a.model and a.tokens and a.logits:
        run(a.model, [int(x) for x in a.tokens.split(",")], a.logits, a.routing)
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
