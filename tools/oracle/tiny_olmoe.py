"""Writes a tiny OLMoE-shaped GGUF with random weights, for testing olmoe_ref.py on its own.

    tiny_olmoe.py OUT.gguf [--seed S] [--hidden 64] [--ff 32] [--layers 2] [--heads 4]
                  [--kv-heads 4] [--experts 4] [--used 2] [--vocab 128] [--ctx 128]
                  [--types ROLE=TYPE,...] [--norm-topk] [--clamp-kqv C] [--alignment A]

Roles: embd, output, attn (q/k/v/o), exps (gate/up experts), down (down experts), router, norm.
Quantized tensors are random blocks whose scales are chosen so values come out roughly zero-mean
with the wanted spread; ne0 of a K-quant tensor must be a multiple of 256.
The project's real generator is internal/modelgen (Go); this one exists so the reference can be
tested without it.
"""

import argparse
import os
import sys

import numpy as np

sys.dont_write_bytecode = True  # leave no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gguf_reader as gr  # noqa: E402
import gguf_writer as gw  # noqa: E402

# Offsets of the f16 scale fields (d, then dmin where there is one) inside each block type, and
# the dmin/d ratio that centres the values at zero (mean of sc*q over mean of m).
_SCALE_FIELDS = {
    "Q8_0": ((0,), 0.0), "Q4_0": ((0,), 0.0), "Q6_K": ((208,), 0.0), "Q3_K": ((108,), 0.0),
    "Q4_K": ((0, 2), 7.5), "Q5_K": ((0, 2), 15.5), "Q2_K": ((80, 82), 1.5),
}


def random_raw(rng, tname, dims, std, mean=0.0):
    """Random raw bytes for a tensor of ggml type tname and ggml dims, values ~ mean + std*N."""
    n = int(np.prod(dims))
    if tname in ("F32", "F16", "BF16"):
        x = (mean + std * rng.standard_normal(n)).astype(np.float32)
        if tname == "F32":
            return x.tobytes()
        if tname == "F16":
            return x.astype(np.float16).tobytes()
        return (x.view(np.uint32) >> 16).astype(np.uint16).tobytes()
    tid = gr.TYPE_BY_NAME[tname]
    _, blk, size = gr.GGML_TYPES[tid]
    nb = n // blk
    raw = rng.integers(0, 256, size=(nb, size), dtype=np.uint8)
    offs, ratio = _SCALE_FIELDS[tname]

    def set_scales(d):
        d16 = d.astype(np.float16).view(np.uint8).reshape(nb, 2)
        raw[:, offs[0]:offs[0] + 2] = d16
        if len(offs) == 2:
            m16 = (d * ratio).astype(np.float16).view(np.uint8).reshape(nb, 2)
            raw[:, offs[1]:offs[1] + 2] = m16

    # Per-block jitter of the scale, then one global factor measured from a first pass.
    jitter = (0.5 + rng.random(nb)).astype(np.float32)
    set_scales(jitter * np.float32(1.0 / 64))
    got = gr.dequantize(tid, raw.reshape(-1), n).std()
    set_scales(jitter * np.float32(std / 64 / max(got, 1e-30)))
    if mean:
        raise ValueError("a mean is only supported for float types")
    return raw.tobytes()


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--ff", type=int, default=32)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--kv-heads", type=int, default=None)
    ap.add_argument("--experts", type=int, default=4)
    ap.add_argument("--used", type=int, default=2)
    ap.add_argument("--vocab", type=int, default=128)
    ap.add_argument("--ctx", type=int, default=128)
    ap.add_argument("--types", default="")
    ap.add_argument("--norm-topk", action="store_true")
    ap.add_argument("--clamp-kqv", type=float, default=None)
    ap.add_argument("--alignment", type=int, default=gr.DEFAULT_ALIGNMENT)
    a = ap.parse_args(argv)
    types = {"embd": "F32", "output": "F32", "attn": "F32", "exps": "F32", "down": "F32",
             "router": "F32", "norm": "F32"}
    for kv in filter(None, a.types.split(",")):
        role, t = kv.split("=")
        if role not in types or t not in gr.TYPE_BY_NAME:
            raise SystemExit("--types: bad %r" % kv)
        types[role] = t
    rng = np.random.default_rng(a.seed)
    h, ff, e, nkv = a.hidden, a.ff, a.experts, a.kv_heads or a.heads
    kvw = h // a.heads * nkv
    w = gw.Writer(a.alignment)
    w.add("general.architecture", gr.STRING, "olmoe")
    w.add("general.name", gr.STRING, "tiny-olmoe-ref-test")
    for key, val in (("block_count", a.layers), ("context_length", a.ctx), ("embedding_length", h),
                     ("feed_forward_length", ff), ("attention.head_count", a.heads),
                     ("attention.head_count_kv", nkv), ("expert_count", e), ("expert_used_count", a.used)):
        w.add("olmoe." + key, gr.UINT32, val)
    w.add("olmoe.rope.freq_base", gr.FLOAT32, 10000.0)
    w.add("olmoe.attention.layer_norm_rms_epsilon", gr.FLOAT32, 1e-5)
    if a.norm_topk:
        w.add("olmoe.expert_weights_norm", gr.BOOL, True)
    if a.clamp_kqv is not None:
        w.add("olmoe.attention.clamp_kqv", gr.FLOAT32, a.clamp_kqv)
    w.add("tokenizer.ggml.model", gr.STRING, "gpt2")
    w.add("tokenizer.ggml.tokens", gr.ARRAY, (gr.STRING, ["t%d" % i for i in range(a.vocab)]))
    w.add("tokenizer.ggml.bos_token_id", gr.UINT32, a.vocab - 1)
    w.add("tokenizer.ggml.eos_token_id", gr.UINT32, a.vocab - 1)

    def t(name, role, dims, std, mean=0.0):
        w.add_tensor(name, dims, gr.TYPE_BY_NAME[types[role]], random_raw(rng, types[role], dims, std, mean))

    t("token_embd.weight", "embd", [h, a.vocab], 1.0)
    for l in range(a.layers):
        p = "blk.%d." % l
        t(p + "attn_norm.weight", "norm", [h], 0.1, 1.0)
        t(p + "attn_q.weight", "attn", [h, h], h ** -0.5)
        t(p + "attn_k.weight", "attn", [h, kvw], h ** -0.5)
        t(p + "attn_v.weight", "attn", [h, kvw], h ** -0.5)
        t(p + "attn_output.weight", "attn", [h, h], h ** -0.5)
        t(p + "attn_q_norm.weight", "norm", [h], 0.1, 1.0)
        t(p + "attn_k_norm.weight", "norm", [kvw], 0.1, 1.0)
        t(p + "ffn_norm.weight", "norm", [h], 0.1, 1.0)
        t(p + "ffn_gate_inp.weight", "router", [h, e], 2 * h ** -0.5)
        t(p + "ffn_gate_exps.weight", "exps", [h, ff, e], h ** -0.5)
        t(p + "ffn_up_exps.weight", "exps", [h, ff, e], h ** -0.5)
        t(p + "ffn_down_exps.weight", "down", [ff, h, e], ff ** -0.5)
    t("output_norm.weight", "norm", [h], 0.1, 1.0)
    t("output.weight", "output", [h, a.vocab], 3 * h ** -0.5)
    w.write(a.out)


if __name__ == "__main__":
    main(sys.argv[1:])
