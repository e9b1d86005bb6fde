"""Float32 reference forward pass of OLMoE, read from a GGUF: the oracle the Go engine must match.

It follows transformers' models/olmoe/modeling_olmoe.py (eager attention) step by step, in
float32 PyTorch on the CPU, with weights dequantized from the GGUF by gguf_reader (bit-identical
to ggml). Nothing here is shared with the Go engine.

Usage:
    olmoe_ref.py --model M.gguf --tokens 1,2,3 [--generate N] --logits OUT.bin --out OUT.json
    olmoe_ref.py --batch JOBS.json --logits OUT.bin --out OUT.json
    options: [--rows all|decode] [--ties torch|lowest-id] [--threads 1] [--cache-mb 4096]

JOBS.json is a list of {"model": PATH, "tokens": [ids...], "generate": N, "rows": "all"}; every
model is read once and torch is imported once, so one process can serve a whole test suite.
README.md in this folder documents the output layout.
"""

import argparse
import json
import math
import os
import sys
import time

# Single-threaded BLAS, fixed before numpy/torch load it, whatever the environment says: the same
# input then gives the same bits on every run (the thread count can change how OpenBLAS splits
# and blocks a product). torch's own threads are set by --threads.
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

sys.dont_write_bytecode = True  # leave no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gguf_reader as gr  # noqa: E402
from olmoe_config import ConfigError, read_config  # noqa: E402

FORMAT = "trochilus-olmoe-ref/1"


class Weights:
    """Float32 torch tensors dequantized from the GGUF on first use.

    When the whole model fits in cache_bytes as float32, everything is kept. Otherwise dense
    tensors are kept and each expert is dequantized from the memory map when a token routes to
    it, so a full-size model (1.6 GB of float32 experts per layer) runs in a few GB of RAM.
    """

    def __init__(self, g, cache_bytes):
        self.g = g
        total = sum(t.n_elements * 4 for t in g.tensors.values())
        self.keep_all = total <= cache_bytes
        self.dense = {}
        self.experts = {}

    def get(self, name):
        w = self.dense.get(name)
        if w is None:
            w = torch.from_numpy(self.g.tensor(name))
            self.dense[name] = w
        return w

    def embed(self, ids):
        if self.keep_all:  # small model: the whole table
            return self.get("token_embd.weight")[torch.tensor(ids, dtype=torch.int64)]
        return torch.from_numpy(np.stack([self.g.rows("token_embd.weight", i, 1)[0] for i in ids]))

    def expert(self, layer, e):
        """(gate [ff, h], up [ff, h], down [h, ff]) of expert e in layer."""
        key = (layer, e)
        w = self.experts.get(key)
        if w is None:
            p = "blk.%d." % layer
            w = tuple(torch.from_numpy(self.g.expert(p + n, e))
                      for n in ("ffn_gate_exps.weight", "ffn_up_exps.weight", "ffn_down_exps.weight"))
            if self.keep_all:
                self.experts[key] = w
        return w


class Stats:
    """Facts about a run that tell a comparison how robust its results are: where the router's
    k-th and (k+1)-th probabilities are nearly equal, float32 noise can swap an expert, and the
    logits of that position and every later one may then differ far beyond rounding."""

    def __init__(self):
        self.router_boundary_ties = 0  # k-th and (k+1)-th routing probabilities equal
        self.row_gaps = {}  # position -> smallest p[k-1] - p[k] over the layers (sorted descending)
        self.routing = {}  # position -> per layer, the chosen expert ids in increasing order

    def add_gaps(self, pos0, gaps):
        for i, g in enumerate(gaps.tolist()):
            p = pos0 + i
            self.row_gaps[p] = min(self.row_gaps.get(p, math.inf), g)

    def add_routing(self, pos0, selected):
        for i, row in enumerate(torch.sort(selected, dim=-1).values.tolist()):
            self.routing.setdefault(pos0 + i, []).append(row)


def rms_norm(x, weight, eps):
    # OlmoeRMSNorm: statistics in float32, cast back, then the weight.
    dtype = x.dtype
    x = x.to(torch.float32)
    variance = x.pow(2).mean(-1, keepdim=True)
    x = x * torch.rsqrt(variance + eps)
    return weight * x.to(dtype)


def rope_inv_freq(cfg):
    # transformers' _compute_default_rope_parameters, float32.
    dim = cfg["head_dim"]
    base = cfg["rope_theta"]
    return 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).to(dtype=torch.float) / dim))


def rope_cos_sin(inv_freq, positions):
    # OlmoeRotaryEmbedding.forward: freqs by a (dim/2 x 1) @ (1 x T) product in float32, then
    # cos/sin of cat(freqs, freqs); attention_scaling is 1 for the default rope type.
    inv = inv_freq[None, :, None].float()
    pos = positions[None, None, :].float()
    freqs = (inv @ pos).transpose(1, 2)  # [1, T, dim/2]
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos()[0], emb.sin()[0]  # [T, dim]


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def repeat_kv(x, n_rep):
    # [n_kv, T, d] -> [n_kv * n_rep, T, d], each kv head repeated n_rep times in a row.
    if n_rep == 1:
        return x
    n_kv, t, d = x.shape
    return x[:, None, :, :].expand(n_kv, n_rep, t, d).reshape(n_kv * n_rep, t, d)


class KVCache:
    """Keys (after RoPE) and values per layer, [n_kv, T, head_dim], as transformers' DynamicCache."""

    def __init__(self, n_layers):
        self.k = [None] * n_layers
        self.v = [None] * n_layers
        self.length = 0

    def update(self, layer, k, v):
        if self.k[layer] is not None:
            k = torch.cat((self.k[layer], k), dim=1)
            v = torch.cat((self.v[layer], v), dim=1)
        self.k[layer], self.v[layer] = k, v
        return k, v


def attention(cfg, w, layer, h, cos, sin, cache):
    """OlmoeAttention with eager_attention_forward, for T new tokens after cache.length."""
    p = "blk.%d." % layer
    t = h.shape[0]
    nh, nkv, hd = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]
    eps = cfg["rms_norm_eps"]
    if cfg["qk_norm_per_head"]:
        # Qwen3MoeAttention: q_norm / k_norm are RMSNorms of one head's width, applied to each
        # head of the projection viewed as [T, heads, head_dim].
        q = rms_norm(F.linear(h, w.get(p + "attn_q.weight")).view(t, nh, hd), w.get(p + "attn_q_norm.weight"), eps)
        k = rms_norm(F.linear(h, w.get(p + "attn_k.weight")).view(t, nkv, hd), w.get(p + "attn_k_norm.weight"), eps)
        q, k = q.reshape(t, nh * hd), k.reshape(t, nkv * hd)
    else:
        # OLMoE: q_norm / k_norm are RMSNorms over the whole projection, before the head split.
        q = rms_norm(F.linear(h, w.get(p + "attn_q.weight")), w.get(p + "attn_q_norm.weight"), eps)
        k = rms_norm(F.linear(h, w.get(p + "attn_k.weight")), w.get(p + "attn_k_norm.weight"), eps)
    v = F.linear(h, w.get(p + "attn_v.weight"))
    clip = cfg["clip_qkv"]
    if clip is not None:  # after the norms, as transformers does (llama.cpp clamps before them)
        q.clamp_(min=-clip, max=clip)
        k.clamp_(min=-clip, max=clip)
        v.clamp_(min=-clip, max=clip)
    q = q.view(t, nh, hd).transpose(0, 1)
    k = k.view(t, nkv, hd).transpose(0, 1)
    v = v.view(t, nkv, hd).transpose(0, 1)
    q = (q * cos) + (rotate_half(q) * sin)
    k = (k * cos) + (rotate_half(k) * sin)
    past = cache.length
    k, v = cache.update(layer, k, v)
    k = repeat_kv(k, nh // nkv)
    v = repeat_kv(v, nh // nkv)
    scaling = hd ** -0.5
    scores = torch.matmul(q, k.transpose(1, 2)) * scaling  # [nh, T, past+T]
    # Additive causal mask with the dtype's minimum, as transformers builds it.
    qpos = torch.arange(past, past + t)[:, None]
    kpos = torch.arange(past + t)[None, :]
    mask = torch.zeros(t, past + t, dtype=torch.float32)
    mask.masked_fill_(kpos > qpos, torch.finfo(torch.float32).min)
    scores = scores + mask
    probs = F.softmax(scores, dim=-1, dtype=torch.float32).to(q.dtype)
    out = torch.matmul(probs, v)  # [nh, T, hd]
    out = out.transpose(0, 1).reshape(t, nh * hd).contiguous()
    return F.linear(out, w.get(p + "attn_output.weight"))


def sparse_moe(cfg, w, layer, h, pos0, stats, ties):
    """OlmoeSparseMoeBlock: softmax router, top-k, experts summed in increasing expert id.
    pos0 is the position of h's first row (for the statistics)."""
    p = "blk.%d." % layer
    n_exp, top_k = cfg["num_experts"], cfg["num_experts_per_tok"]
    router_logits = F.linear(h, w.get(p + "ffn_gate_inp.weight"))
    routing = F.softmax(router_logits, dim=1, dtype=torch.float)
    if top_k < n_exp:
        srt = torch.sort(routing, dim=-1, descending=True, stable=True).values
        gaps = srt[:, top_k - 1] - srt[:, top_k]
        stats.router_boundary_ties += int((gaps == 0).sum())
        stats.add_gaps(pos0, gaps)
    if ties == "lowest-id":
        # A stable descending sort keeps the lower expert id first among equal probabilities.
        routing_weights, selected = torch.sort(routing, dim=-1, descending=True, stable=True)
        routing_weights, selected = routing_weights[:, :top_k], selected[:, :top_k]
    else:
        # torch.topk on the CPU does not order ties by index (see README).
        routing_weights, selected = torch.topk(routing, top_k, dim=-1)
    stats.add_routing(pos0, selected)
    if cfg["norm_topk_prob"]:
        routing_weights = routing_weights / routing_weights.sum(dim=-1, keepdim=True)
    routing_weights = routing_weights.to(h.dtype)
    final = torch.zeros_like(h)
    # expert_mask[e, rank, token]; experts with no token are skipped (they add nothing).
    expert_mask = F.one_hot(selected, num_classes=n_exp).permute(2, 1, 0)
    hit = torch.nonzero(expert_mask.sum(dim=(-1, -2)) > 0).flatten().tolist()
    for e in hit:
        rank, tok = torch.where(expert_mask[e])
        gate, up, down = w.expert(layer, e)
        x = h[tok]
        y = F.linear(F.silu(F.linear(x, gate)) * F.linear(x, up), down)
        y = y * routing_weights[tok, rank, None]
        final.index_add_(0, tok, y.to(h.dtype))
    return final


def forward(cfg, w, inv_freq, ids, cache, stats, ties):
    """Logits [T, vocab] for ids placed after the cache's tokens; the cache grows by T."""
    t = len(ids)
    x = w.embed(ids)
    positions = torch.arange(cache.length, cache.length + t)
    cos, sin = rope_cos_sin(inv_freq, positions)
    eps = cfg["rms_norm_eps"]
    for layer in range(cfg["num_hidden_layers"]):
        p = "blk.%d." % layer
        x = x + attention(cfg, w, layer, rms_norm(x, w.get(p + "attn_norm.weight"), eps), cos, sin, cache)
        h = rms_norm(x, w.get(p + "ffn_norm.weight"), eps)
        x = x + sparse_moe(cfg, w, layer, h, cache.length, stats, ties)
    cache.length += t
    x = rms_norm(x, w.get("output_norm.weight"), eps)
    return F.linear(x, w.get("output.weight")).float()


def greedy(row):
    """Argmax with the lowest index among equal maxima; NaN never wins."""
    r = np.where(np.isnan(row), -np.inf, row)
    return int(np.argmax(r))  # np.argmax returns the first maximum


def margin(row, best):
    """Top-1 minus top-2 logit (how far the greedy choice is from flipping)."""
    r = np.where(np.isnan(row), -np.inf, row).astype(np.float64)
    if r.size < 2:
        return math.inf
    second = np.max(np.delete(r, best))
    return float(r[best] - second)


class Model:
    def __init__(self, path, cache_bytes):
        self.g = gr.GGUFFile(path)
        self.cfg = read_config(self.g)
        self.w = Weights(self.g, cache_bytes)
        self.inv_freq = rope_inv_freq(self.cfg)
        self.types = sorted({t.type_name for t in self.g.tensors.values()})


def run_job(model, tokens, n_gen, ties, rows_kept="all"):
    """Prefill the prompt in one pass, then decode n_gen greedy tokens one at a time with the
    KV cache (as transformers' generate does). Returns (logits [rows, vocab] float32, result).
    rows_kept "all" keeps a row per position; "decode" keeps only the rows that chose a
    generated token (from the prompt's last position on)."""
    cfg = model.cfg
    if not tokens:
        raise ConfigError("empty prompt")
    if n_gen < 0:
        raise ConfigError("generate %d is negative" % n_gen)
    if rows_kept not in ("all", "decode"):
        raise ConfigError("rows %r is neither \"all\" nor \"decode\"" % rows_kept)
    vocab = cfg["vocab_size"]
    for i in tokens:
        if not isinstance(i, int) or isinstance(i, bool) or not 0 <= i < vocab:
            raise ConfigError("token %r outside the vocabulary [0, %d)" % (i, vocab))
    total = len(tokens) + max(n_gen - 1, 0)
    if total > cfg["max_position_embeddings"]:
        raise ConfigError("%d positions exceed context_length %d" % (total, cfg["max_position_embeddings"]))
    stats = Stats()
    cache = KVCache(cfg["num_hidden_layers"])
    start = time.perf_counter()
    with torch.no_grad():
        rows = [forward(cfg, model.w, model.inv_freq, tokens, cache, stats, ties).numpy()]
        generated, margins = [], []
        for step in range(n_gen):
            last = rows[-1][-1]
            nxt = greedy(last)
            generated.append(nxt)
            margins.append(margin(last, nxt))
            if step + 1 < n_gen:
                rows.append(forward(cfg, model.w, model.inv_freq, [nxt], cache, stats, ties).numpy())
    first = len(tokens) - 1 if rows_kept == "decode" else 0
    logits = np.ascontiguousarray(np.concatenate(rows, axis=0)[first:], dtype="<f4")
    positions = range(first, first + logits.shape[0])
    row_gaps = [stats.row_gaps[p] for p in positions] if stats.row_gaps else []
    result = {
        "model": model.g.path,
        "prompt": list(tokens),
        "generated": generated,
        "first_row": first,
        "rows": int(logits.shape[0]),
        "vocab": vocab,
        "margins": margins,
        "prompt_argmax": [greedy(r) for r in rows[0]][first:],
        "nonfinite_logits": int((~np.isfinite(logits)).sum()),
        "router_boundary_ties": stats.router_boundary_ties,
        "router_min_gap": min(row_gaps) if row_gaps else None,
        "router_min_gap_by_row": row_gaps or None,
        "routing_by_row": [stats.routing[p] for p in positions],
        "seconds": round(time.perf_counter() - start, 4),
    }
    return logits, result


def parse_tokens(s):
    try:
        return [int(x) for x in s.split(",") if x.strip() != ""]
    except ValueError:
        raise SystemExit("--tokens: %r is not a comma-separated list of integers" % s)


def load_jobs(args):
    if args.batch:
        if args.model or args.tokens is not None:
            raise SystemExit("--batch excludes --model/--tokens")
        with open(args.batch) as f:
            jobs = json.load(f)
        if not isinstance(jobs, list):
            raise SystemExit("%s: want a JSON list of jobs" % args.batch)
        out = []
        for i, j in enumerate(jobs):
            if not isinstance(j, dict) or "model" not in j or "tokens" not in j:
                raise SystemExit("%s: job %d needs \"model\" and \"tokens\"" % (args.batch, i))
            out.append((j["model"], list(j["tokens"]), int(j.get("generate", 0)), j.get("rows", args.rows)))
        return out
    if not args.model or args.tokens is None:
        raise SystemExit("want --model and --tokens, or --batch")
    return [(args.model, parse_tokens(args.tokens), args.generate, args.rows)]


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model")
    ap.add_argument("--tokens", help="comma-separated prompt token ids")
    ap.add_argument("--generate", type=int, default=0, help="greedy tokens to generate")
    ap.add_argument("--batch", help="JSON list of {model, tokens, generate}")
    ap.add_argument("--logits", required=True, help="float32 little-endian logits, all jobs in order")
    ap.add_argument("--out", required=True, help="JSON results")
    ap.add_argument("--rows", choices=("all", "decode"), default="all",
                    help="logits rows kept: every position, or from the prompt's last on")
    ap.add_argument("--ties", choices=("torch", "lowest-id"), default="torch",
                    help="router top-k among equal probabilities: torch.topk's pick, or lowest id")
    ap.add_argument("--threads", type=int, default=1,
                    help="torch intra-op threads (other than 1 may change the last bits)")
    ap.add_argument("--cache-mb", type=int, default=4096,
                    help="keep every dequantized weight when the float32 model fits in this")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    jobs = load_jobs(args)
    models = {}
    results = []
    offset = 0
    t0 = time.perf_counter()
    with open(args.logits, "wb") as lf:
        for i, (path, tokens, n_gen, rows_kept) in enumerate(jobs):
            try:
                if path not in models:
                    models[path] = Model(path, args.cache_mb << 20)
                m = models[path]
                logits, res = run_job(m, tokens, n_gen, args.ties, rows_kept)
            except (gr.GGUFError, ConfigError) as e:
                raise SystemExit("olmoe_ref: job %d (%s): %s" % (i, path, e))
            res["config"] = m.cfg
            res["tensor_types"] = m.types
            res["logits_offset"] = offset
            lf.write(logits.tobytes())
            offset += logits.nbytes
            results.append(res)
    out = {
        "format": FORMAT,
        "torch": torch.__version__,
        "threads": args.threads,
        "ties": args.ties,
        "logits_layout": "float32 little-endian; job i has rows x vocab values at byte logits_offset; "
                         "row r = logits after token first_row + r of prompt + generated[:-1]",
        "results": results,
        "seconds": round(time.perf_counter() - t0, 4),
    }
    with open(args.out, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main(sys.argv[1:])
