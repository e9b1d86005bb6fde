"""OLMoE or Qwen3-MoE configuration from a GGUF's olmoe.* / qwen3moe.* metadata, with every
tensor shape checked.

Shared by olmoe_ref.py (torch) and olmoe_f64.py (numpy); it needs neither torch nor anything
but gguf_reader. The keys are transformers' OlmoeConfig / Qwen3MoeConfig field names, plus
"arch" and "qk_norm_per_head" (Qwen3 norms q and k per head with weights of one head's width;
OLMoE over the whole projection).
"""

import gguf_reader as gr


class ConfigError(ValueError):
    """The GGUF does not describe a model this reference can run."""


def read_config(g):
    """Config fields from the GGUF's olmoe.* or qwen3moe.* metadata."""
    arch = g.get("general.architecture")
    if arch not in ("olmoe", "qwen3moe"):
        raise ConfigError("%s: general.architecture is %r, want \"olmoe\" or \"qwen3moe\"" % (g.path, arch))
    qwen3 = arch == "qwen3moe"

    def need(key, kinds=(int,)):
        return g.require(arch + "." + key, kinds)

    cfg = {
        "arch": arch,
        "num_hidden_layers": need("block_count"),
        "hidden_size": need("embedding_length"),
        # Qwen3MoeConfig.moe_intermediate_size; its feed_forward_length is a dense width the
        # MoE layers do not use.
        "intermediate_size": need("expert_feed_forward_length" if qwen3 else "feed_forward_length"),
        "num_attention_heads": need("attention.head_count"),
        "num_key_value_heads": g.get(arch + ".attention.head_count_kv", None),
        "num_experts": need("expert_count"),
        "num_experts_per_tok": need("expert_used_count"),
        "rms_norm_eps": float(need("attention.layer_norm_rms_epsilon", (float, int))),
        "rope_theta": g.get(arch + ".rope.freq_base", 10000.0),
        "max_position_embeddings": need("context_length"),
        # llama.cpp renormalises for qwen3moe always (Qwen3-MoE's norm_topk_prob).
        "norm_topk_prob": True if qwen3 else bool(g.get("olmoe.expert_weights_norm", False)),
        "clip_qkv": None if qwen3 else g.get("olmoe.attention.clamp_kqv", None),
        "qk_norm_per_head": qwen3,
    }
    if cfg["num_key_value_heads"] is None:
        cfg["num_key_value_heads"] = cfg["num_attention_heads"]
    for key in ("clip_qkv", "rope_theta", "rms_norm_eps"):
        v = cfg[key]
        if v is not None and (not isinstance(v, (int, float)) or isinstance(v, bool) or not v > 0):
            raise ConfigError("%s: %s = %r must be a positive number" % (g.path, key, v))
        if v is not None:
            cfg[key] = float(v)
    for key in ("num_hidden_layers", "hidden_size", "intermediate_size", "num_attention_heads",
                "num_key_value_heads", "num_experts", "num_experts_per_tok", "max_position_embeddings"):
        v = cfg[key]
        if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
            raise ConfigError("%s: %s = %r must be a positive integer" % (g.path, key, v))
    h, nh, nkv = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
    hd = g.get(arch + ".attention.key_length", None)
    if hd is None and h % nh or nh % nkv:
        raise ConfigError("%s: hidden %d, %d heads, %d kv heads do not divide evenly" % (g.path, h, nh, nkv))
    cfg["head_dim"] = h // nh if hd is None else hd
    if g.get(arch + ".attention.value_length", cfg["head_dim"]) != cfg["head_dim"]:
        raise ConfigError("%s: value head width differs from key head width" % g.path)
    if cfg["head_dim"] % 2:
        raise ConfigError("%s: head_dim %d is odd; RoPE needs pairs" % (g.path, cfg["head_dim"]))
    if cfg["num_experts_per_tok"] > cfg["num_experts"]:
        raise ConfigError("%s: %d experts used of %d"
                          % (g.path, cfg["num_experts_per_tok"], cfg["num_experts"]))
    emb = g.info("token_embd.weight")
    if len(emb.dims) != 2 or emb.dims[0] != h:
        raise ConfigError("%s: token_embd dims %s, want [%d, vocab]" % (g.path, emb.dims, h))
    cfg["vocab_size"] = emb.dims[1]
    _check_shapes(g, cfg)
    return cfg


def _check_shapes(g, cfg):
    """Every tensor the forward pass reads, with the ggml dims it must have."""
    h, ff, e = cfg["hidden_size"], cfg["intermediate_size"], cfg["num_experts"]
    kvw = cfg["head_dim"] * cfg["num_key_value_heads"]
    qw = cfg["head_dim"] * cfg["num_attention_heads"]
    qn, kn = (cfg["head_dim"], cfg["head_dim"]) if cfg["qk_norm_per_head"] else (qw, kvw)
    want = {"output_norm.weight": [h], "output.weight": [h, cfg["vocab_size"]]}
    for l in range(cfg["num_hidden_layers"]):
        p = "blk.%d." % l
        want.update({
            p + "attn_norm.weight": [h], p + "ffn_norm.weight": [h],
            p + "attn_q.weight": [h, qw], p + "attn_k.weight": [h, kvw], p + "attn_v.weight": [h, kvw],
            p + "attn_output.weight": [qw, h],
            p + "attn_q_norm.weight": [qn], p + "attn_k_norm.weight": [kn],
            p + "ffn_gate_inp.weight": [h, e],
            p + "ffn_gate_exps.weight": [h, ff, e], p + "ffn_up_exps.weight": [h, ff, e],
            p + "ffn_down_exps.weight": [ff, h, e],
        })
    for name, dims in want.items():
        t = g.info(name)
        if list(t.dims) != dims:
            raise ConfigError("%s: tensor %s has dims %s, want %s" % (g.path, name, t.dims, dims))
        if t.type not in gr.DEQUANTIZERS:
            raise ConfigError("%s: tensor %s is %s, which this reference cannot dequantize"
                              % (g.path, name, t.type_name))
