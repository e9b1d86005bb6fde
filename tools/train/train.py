"""Trains the project's small OLMoE- and Qwen3-MoE-architecture models on the CPU,
deterministically.

    train.py --data DIR --out W.safetensors [--arch olmoe|qwen3moe] [--steps N] [--threads T]
             [--seed S] [--log LOG.jsonl]

DIR is what `go run ./tools/train data` writes (text.bin, chat.bin, data.json). The model is
OLMoE as transformers' modeling_olmoe.py defines it (q/k RMS norms over the whole projection,
RoPE by rotate_half, a softmax router choosing the top k experts without renormalising, SwiGLU
experts), written here in batched form for training; --arch qwen3moe is Qwen3-MoE as
modeling_qwen3_moe.py defines it (Model.forward_qwen3); tools/oracle/olmoe_ref.py is the
reference the engine is compared with, and this file shares nothing with it. The loss is
cross-entropy over the whole vocabulary plus OLMoE's load-balancing loss (0.01) and router
z-loss (0.001); for Qwen3-MoE, transformers' load_balancing_loss_func (0.01) alone.

Each sequence of the batch is, by a fixed draw: a window of the corpus; a window in which a
passage recurs (passage, other text, the passage again and what followed it), so that the
model learns to copy from its context; or chat examples packed end to end.

The weights are written as float32 safetensors named and shaped as the GGUF tensors (torch
shapes, the reverse of ggml's dims); `go run ./tools/train export` quantizes them into a GGUF.
With the same data, seed, step count, thread count and machine, the file is the same bit for
bit; another CPU may round differently inside PyTorch's kernels (recipe.sh records the loss).
"""

import argparse
import json
import math
import os
import struct
import sys
import time

sys.dont_write_bytecode = True

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

SHAPE = {
    "arch": "olmoe", "layers": 4, "hidden": 256, "heads": 4, "kv_heads": 4, "head_dim": 64,
    "experts": 16, "experts_used": 4, "expert_ffn": 256, "vocab": 50304, "context": 1024,
    "rope_theta": 10000.0, "rms_eps": 1e-5, "norm_topk_prob": False,
}

# Qwen3-30B-A3B's structure at the same small scale: grouped-query attention (2 key/value heads
# for 4), q/k RMS norms per head, RoPE theta 1e6, RMS eps 1e-6, the chosen experts' weights
# renormalised, Qwen3's vocabulary.
QWEN3_SHAPE = {
    "arch": "qwen3moe", "layers": 4, "hidden": 256, "heads": 4, "kv_heads": 2, "head_dim": 64,
    "experts": 16, "experts_used": 4, "expert_ffn": 256, "vocab": 151936, "context": 1024,
    "rope_theta": 1000000.0, "rms_eps": 1e-6, "norm_topk_prob": True,
}

SHAPES = {"olmoe": SHAPE, "qwen3moe": QWEN3_SHAPE}


def rms_norm(x, w, eps):
    return w * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


class Params(torch.nn.ParameterDict):
    """Parameters by their GGUF names (a ParameterDict key cannot hold a dot)."""

    def __setitem__(self, name, value):
        super().__setitem__(name.replace(".", "__"), value)

    def __getitem__(self, name):
        return super().__getitem__(name.replace(".", "__"))

    def named(self):
        return {k.replace("__", "."): v for k, v in super().items()}


class Model(torch.nn.Module):
    def __init__(self, s, used):
        super().__init__()
        self.s = s
        h, q, kv = s["hidden"], s["heads"] * s["head_dim"], s["kv_heads"] * s["head_dim"]
        e, f, v = s["experts"], s["expert_ffn"], s["vocab"]
        std = 0.02
        P = torch.nn.Parameter

        def normal(*shape, scale=std):
            return P(torch.randn(*shape) * scale)

        self.p = Params()
        qwen3 = s["arch"] == "qwen3moe"
        if qwen3:
            # Qwen3's 151,936 rows would make the embedding's gradient and AdamW's update most
            # of a step: only the used ids' rows are parameters, the others zero on export.
            index = torch.full((v,), -1, dtype=torch.int64)
            index[used] = torch.arange(len(used))
            self.register_buffer("index", index, persistent=False)
            self.p["token_embd.weight"] = normal(len(used), h)
        else:
            self.p["token_embd.weight"] = normal(v, h)
        # q/k norm widths: OLMoE norms the whole projection, Qwen3 each head with one head's
        # weights.
        qn, kn = (s["head_dim"], s["head_dim"]) if qwen3 else (q, kv)
        for l in range(s["layers"]):
            b = "blk.%d." % l
            self.p[b + "attn_norm.weight"] = P(torch.ones(h))
            self.p[b + "attn_q.weight"] = normal(q, h)
            self.p[b + "attn_k.weight"] = normal(kv, h)
            self.p[b + "attn_v.weight"] = normal(kv, h)
            self.p[b + "attn_output.weight"] = normal(h, q, scale=std / math.sqrt(2 * s["layers"]))
            self.p[b + "attn_q_norm.weight"] = P(torch.ones(qn))
            self.p[b + "attn_k_norm.weight"] = P(torch.ones(kn))
            self.p[b + "ffn_norm.weight"] = P(torch.ones(h))
            self.p[b + "ffn_gate_inp.weight"] = normal(e, h)
            # One parameter per expert (stacked on export): the gradient of a slice of a
            # stacked parameter would be a whole zero-filled stack per expert.
            for x in range(e):
                self.p[b + "ffn_gate_exps.%d" % x] = normal(f, h)
                self.p[b + "ffn_up_exps.%d" % x] = normal(f, h)
                self.p[b + "ffn_down_exps.%d" % x] = normal(h, f, scale=std / math.sqrt(2 * s["layers"]))
        self.p["output_norm.weight"] = P(torch.ones(h))
        # Only the rows of the token ids the data uses are trained; the others are zero (see
        # loss), so the output matrix holds len(used) rows here and all of them on export.
        self.register_buffer("used", used, persistent=False)
        self.p["output.weight"] = normal(len(used), h)
        self.unused_logit = math.log(v - len(used))
        d = s["head_dim"]
        inv = 1.0 / (s["rope_theta"] ** (torch.arange(0, d, 2, dtype=torch.int64).float() / d))
        pos = torch.arange(s["context"]).float()
        fr = torch.outer(pos, inv)
        emb = torch.cat((fr, fr), dim=-1)
        self.register_buffer("cos", emb.cos(), persistent=False)
        self.register_buffer("sin", emb.sin(), persistent=False)

    def forward(self, ids):
        if self.s["arch"] == "qwen3moe":
            return self.forward_qwen3(ids)
        s, p = self.s, self.p
        B, T = ids.shape
        nh, nkv, hd, eps = s["heads"], s["kv_heads"], s["head_dim"], s["rms_eps"]
        E, K = s["experts"], s["experts_used"]
        x = p["token_embd.weight"][ids]
        cos, sin = self.cos[:T], self.sin[:T]
        mask = torch.full((T, T), float("-inf")).triu(1)
        aux = x.new_zeros(())
        for l in range(s["layers"]):
            b = "blk.%d." % l
            a = rms_norm(x, p[b + "attn_norm.weight"], eps)
            q = rms_norm(F.linear(a, p[b + "attn_q.weight"]), p[b + "attn_q_norm.weight"], eps)
            k = rms_norm(F.linear(a, p[b + "attn_k.weight"]), p[b + "attn_k_norm.weight"], eps)
            v = F.linear(a, p[b + "attn_v.weight"])
            q = q.view(B, T, nh, hd).transpose(1, 2)
            k = k.view(B, T, nkv, hd).transpose(1, 2)
            v = v.view(B, T, nkv, hd).transpose(1, 2)
            q = q * cos + rotate_half(q) * sin
            k = k * cos + rotate_half(k) * sin
            if nkv != nh:
                k = k.repeat_interleave(nh // nkv, dim=1)
                v = v.repeat_interleave(nh // nkv, dim=1)
            att = torch.softmax(q @ k.transpose(-1, -2) * hd ** -0.5 + mask, dim=-1)
            o = (att @ v).transpose(1, 2).reshape(B, T, nh * hd)
            x = x + F.linear(o, p[b + "attn_output.weight"])

            hN = rms_norm(x, p[b + "ffn_norm.weight"], eps).reshape(B * T, -1)
            logits = F.linear(hN, p[b + "ffn_gate_inp.weight"])
            probs = torch.softmax(logits, dim=-1)
            w, sel = torch.topk(probs, K, dim=-1)
            if s["norm_topk_prob"]:
                w = w / w.sum(-1, keepdim=True)
            out = torch.zeros_like(hN)
            for e in range(E):
                tok, rank = torch.where(sel == e)
                if tok.numel() == 0:
                    continue
                xe = hN[tok]
                gate, up, down = (p[b + "ffn_%s_exps.%d" % (n, e)] for n in ("gate", "up", "down"))
                ye = F.linear(F.silu(F.linear(xe, gate)) * F.linear(xe, up), down)
                out.index_add_(0, tok, ye * w[tok, rank, None])
            x = x + out.view(B, T, -1)
            # OLMoE's load-balancing loss (fraction routed times mean probability, per expert)
            # and router z-loss.
            frac = F.one_hot(sel, E).float().sum(1).mean(0) / K
            aux = aux + 0.01 * E * (frac * probs.mean(0)).sum()
            aux = aux + 0.001 * torch.logsumexp(logits, dim=-1).pow(2).mean()
        x = rms_norm(x, p["output_norm.weight"], eps)
        return F.linear(x, p["output.weight"]), aux

    def forward_qwen3(self, ids):
        """Qwen3-MoE as transformers' modeling_qwen3_moe.py defines it, step by step:
        Qwen3MoeDecoderLayer (input_layernorm, self_attn, residual; post_attention_layernorm,
        mlp, residual), Qwen3MoeAttention (q_norm and k_norm applied to q_proj and k_proj viewed
        as heads, then RoPE by rotate_half, repeat_kv, softmax(q k^T * head_dim^-0.5 + causal
        mask) v, o_proj; no biases, no sliding window), Qwen3MoeSparseMoeBlock (softmax of the
        gate's logits, top k, divided by their sum as norm_topk_prob says, experts
        down(silu(gate(x)) * up(x)) weighted and summed), the final norm and lm_head. The
        auxiliary loss is transformers' load_balancing_loss_func (the one Qwen3-MoE trains
        with; no router z-loss), at OLMoE's coefficient 0.01 rather than Qwen3's 0.001 since
        this model trains for few steps."""
        s, p = self.s, self.p
        B, T = ids.shape
        nh, nkv, hd, eps = s["heads"], s["kv_heads"], s["head_dim"], s["rms_eps"]
        E, K, L = s["experts"], s["experts_used"], s["layers"]
        x = p["token_embd.weight"][self.index[ids]]
        cos, sin = self.cos[:T], self.sin[:T]  # unsqueezed over heads by broadcasting
        mask = torch.full((T, T), float("-inf")).triu(1)
        aux = x.new_zeros(())
        for l in range(L):
            b = "blk.%d." % l
            # Qwen3MoeAttention.forward
            a = rms_norm(x, p[b + "attn_norm.weight"], eps)
            q = rms_norm(F.linear(a, p[b + "attn_q.weight"]).view(B, T, nh, hd), p[b + "attn_q_norm.weight"], eps).transpose(1, 2)
            k = rms_norm(F.linear(a, p[b + "attn_k.weight"]).view(B, T, nkv, hd), p[b + "attn_k_norm.weight"], eps).transpose(1, 2)
            v = F.linear(a, p[b + "attn_v.weight"]).view(B, T, nkv, hd).transpose(1, 2)
            q = q * cos + rotate_half(q) * sin
            k = k * cos + rotate_half(k) * sin
            # repeat_kv: query head j reads key/value head j // (nh / nkv).
            k = k[:, :, None].expand(B, nkv, nh // nkv, T, hd).reshape(B, nh, T, hd)
            v = v[:, :, None].expand(B, nkv, nh // nkv, T, hd).reshape(B, nh, T, hd)
            att = torch.softmax(q @ k.transpose(-1, -2) * hd ** -0.5 + mask, dim=-1)
            o = (att @ v).transpose(1, 2).reshape(B, T, nh * hd)
            x = x + F.linear(o, p[b + "attn_output.weight"])

            # Qwen3MoeSparseMoeBlock.forward
            hN = rms_norm(x, p[b + "ffn_norm.weight"], eps).reshape(B * T, -1)
            logits = F.linear(hN, p[b + "ffn_gate_inp.weight"])
            probs = torch.softmax(logits, dim=1)
            w, sel = torch.topk(probs, K, dim=-1)
            w = w / w.sum(dim=-1, keepdim=True)
            out = torch.zeros_like(hN)
            for e in range(E):
                tok, rank = torch.where(sel == e)
                if tok.numel() == 0:
                    continue
                xe = hN[tok]
                gate, up, down = (p[b + "ffn_%s_exps.%d" % (n, e)] for n in ("gate", "up", "down"))
                ye = F.linear(F.silu(F.linear(xe, gate)) * F.linear(xe, up), down)
                out.index_add_(0, tok, ye * w[tok, rank, None])
            x = x + out.view(B, T, -1)
            # load_balancing_loss_func over every layer's router logits: num_experts times the
            # sum over (slot, expert) of the fraction of tokens routed there times the mean
            # probability, with the means over all layers' tokens (the layers' mean here).
            frac = F.one_hot(sel, E).float().mean(0)
            aux = aux + 0.01 * E / L * (frac * probs.mean(0)[None]).sum()
        x = rms_norm(x, p["output_norm.weight"], eps)
        return F.linear(x, p["output.weight"]), aux

    def loss(self, logits, targets):
        """Cross-entropy over the whole vocabulary, whose unused rows are zero: their logits are
        all 0, so together they are one more logit of log(their count). targets are indices
        into used."""
        n = logits.shape[-1]
        rest = logits.new_full(logits.shape[:-1] + (1,), self.unused_logit)
        return F.cross_entropy(torch.cat((logits, rest), dim=-1).reshape(-1, n + 1), targets.reshape(-1))

    def gguf_tensors(self):
        """The parameters by GGUF name, the output matrix with all of the vocabulary's rows."""
        t = {k: v.detach() for k, v in self.p.named().items() if "_exps." not in k}
        for l in range(self.s["layers"]):
            for n in ("gate", "up", "down"):
                b = "blk.%d.ffn_%s_exps." % (l, n)
                t[b + "weight"] = torch.stack([self.p[b + str(e)].detach() for e in range(self.s["experts"])])
        full = torch.zeros(self.s["vocab"], self.s["hidden"])
        full[self.used] = t["output.weight"].detach()
        t["output.weight"] = full
        if self.s["arch"] == "qwen3moe":
            full = torch.zeros(self.s["vocab"], self.s["hidden"])
            full[self.used] = t["token_embd.weight"].detach()
            t["token_embd.weight"] = full
        return t


class Sampler:
    """Draws training sequences from the data with its own generator."""

    def __init__(self, data, T, seed, holdout):
        self.text = np.fromfile(os.path.join(data, "text.bin"), dtype="<i4").astype(np.int64)
        raw = np.fromfile(os.path.join(data, "chat.bin"), dtype="<i4").astype(np.int64)
        self.chat, i = [], 0
        while i < len(raw):
            n = int(raw[i])
            self.chat.append(raw[i + 1:i + 1 + n])
            i += 1 + n
        # The last holdout fraction of the text is never trained on: the held-out loss.
        self.cut = int(len(self.text) * (1 - holdout))
        self.T = T
        self.rng = np.random.default_rng(seed)

    def window(self, n):
        i = int(self.rng.integers(0, self.cut - n))
        return self.text[i:i + n]

    def sequence(self):
        T, r = self.T + 1, self.rng
        kind = r.random()
        if kind < 0.45:
            return self.window(T)
        if kind < 0.75:
            # A passage, other text, the passage again, then what followed it in the corpus.
            L = int(r.integers(24, 320))
            gap = int(r.integers(0, T - 2 * L)) if T - 2 * L > 0 else 0
            i = int(r.integers(0, self.cut - T))
            a = self.text[i:i + L]
            rest = self.text[i + L:i + L + T]
            seq = np.concatenate([a, self.window(gap), a, rest])
            return seq[:T]
        parts, n = [], 0
        while n < T:
            ex = self.chat[int(r.integers(0, len(self.chat)))]
            parts.append(ex)
            n += len(ex)
        return np.concatenate(parts)[:T]

    def batch(self, B):
        return torch.from_numpy(np.stack([self.sequence() for _ in range(B)]))

    def holdout(self, B):
        """Fixed windows of the held-out text."""
        T = self.T + 1
        starts = np.linspace(self.cut, len(self.text) - T, B).astype(np.int64)
        return torch.from_numpy(np.stack([self.text[s:s + T] for s in starts]))


def write_safetensors(path, tensors, metadata):
    head, off, blobs = {"__metadata__": metadata}, 0, []
    for name in sorted(tensors):
        a = tensors[name].detach().contiguous().float().numpy().astype("<f4")
        b = a.tobytes()
        head[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(head, sort_keys=True).encode()
    h += b" " * ((-len(h)) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)
    os.replace(tmp, path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True)
    ap.add_argument("--arch", default="olmoe", choices=sorted(SHAPES))
    ap.add_argument("--out", required=True)
    ap.add_argument("--steps", type=int, default=1500)
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--seq", type=int, default=1024)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--log", default="")
    ap.add_argument("--eval-every", type=int, default=100)
    args = ap.parse_args()

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    torch.use_deterministic_algorithms(True)
    sampler = Sampler(args.data, args.seq, args.seed, holdout=0.02)
    used = torch.from_numpy(np.unique(np.concatenate([sampler.text] + sampler.chat)))
    shape = SHAPES[args.arch]
    index = torch.full((shape["vocab"],), -1, dtype=torch.int64)
    index[used] = torch.arange(len(used))
    model = Model(shape, used)
    decay = [t for t in model.p.named().values() if t.dim() >= 2]
    keep = [t for t in model.p.named().values() if t.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": keep, "weight_decay": 0.0}],
                            lr=args.lr, betas=(0.9, 0.95), eps=1e-8)
    warm = max(1, args.steps // 20)

    def lr_at(step):
        if step < warm:
            return args.lr * (step + 1) / warm
        t = (step - warm) / max(1, args.steps - warm)
        return args.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * t)))

    held = sampler.holdout(4)
    log = open(args.log, "a") if args.log else None
    t0 = time.time()
    for step in range(args.steps):
        for g in opt.param_groups:
            g["lr"] = lr_at(step)
        seq = sampler.batch(args.batch)
        logits, aux = model(seq[:, :-1])
        loss = model.loss(logits, index[seq[:, 1:]])
        opt.zero_grad(set_to_none=True)
        (loss + aux).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        rec = {"step": step + 1, "loss": round(loss.item(), 6), "aux": round(aux.item(), 5),
               "lr": lr_at(step), "seconds": round(time.time() - t0, 1)}
        if (step + 1) % args.eval_every == 0 or step + 1 == args.steps:
            with torch.no_grad():
                hl, _ = model(held[:, :-1])
                rec["heldout"] = round(model.loss(hl, index[held[:, 1:]]).item(), 5)
        print(json.dumps(rec), flush=True)
        if log:
            log.write(json.dumps(rec) + "\n")
            log.flush()
    recipe = "seed %d, %d steps of %d x %d tokens, lr %g, %d threads, torch %s" % (
        args.seed, args.steps, args.batch, args.seq, args.lr, args.threads, torch.__version__)
    write_safetensors(args.out, model.gguf_tensors(),
                      {"shape": json.dumps(shape, sort_keys=True), "recipe": recipe})


if __name__ == "__main__":
    main()
