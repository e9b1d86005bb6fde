"""Checks that the model train.py trained is the model its GGUF export describes.

    check.py --weights W.safetensors --gguf M-f32.gguf --data DIR

It runs train.py's own forward pass (the one the loss was computed by) on a window of the
held-out text and tools/oracle/olmoe_ref.py (transformers' OLMoE or Qwen3-MoE, read from the
GGUF) on the same tokens, and compares the logits: the trained rows must agree to float32 rounding, the
untrained rows must be exactly zero. A mistake in how a tensor is named, laid out or applied
would show here as a large difference, not as a slightly worse model.
"""

import argparse
import json
import os
import struct
import sys

sys.dont_write_bytecode = True
here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
sys.path.insert(0, os.path.join(here, "..", "oracle"))

import numpy as np  # noqa: E402
import torch  # noqa: E402

import olmoe_ref  # noqa: E402
import train  # noqa: E402


def read_safetensors(path):
    with open(path, "rb") as f:
        b = f.read()
    n = struct.unpack("<Q", b[:8])[0]
    head = json.loads(b[8:8 + n])
    meta = head.pop("__metadata__", {})
    data = b[8 + n:]
    out = {}
    for name, t in head.items():
        a, z = t["data_offsets"]
        out[name] = torch.from_numpy(np.frombuffer(data[a:z], dtype="<f4").reshape(t["shape"]).copy())
    return out, meta


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--weights", required=True)
    ap.add_argument("--gguf", required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--tokens", type=int, default=96)
    args = ap.parse_args()
    torch.set_num_threads(1)

    w, meta = read_safetensors(args.weights)
    shape = json.loads(meta["shape"])
    sampler = train.Sampler(args.data, args.tokens, 0, holdout=0.02)
    ids = sampler.holdout(1)[0, :args.tokens]

    used = torch.nonzero(w["output.weight"].abs().sum(1) > 0).flatten()
    model = train.Model(shape, used)
    with torch.no_grad():
        for name, t in model.p.named().items():
            if "_exps." in name:
                base, e = name.rsplit(".", 1)
                t.copy_(w[base + ".weight"][int(e)])
            elif name == "output.weight" or name == "token_embd.weight" and shape["arch"] == "qwen3moe":
                # Qwen3's embedding, like every output matrix, holds only the used rows.
                t.copy_(w[name][used])
            else:
                t.copy_(w[name])
        mine, _ = model(ids[None, :])
    mine = mine[0].numpy()

    ref = olmoe_ref.Model(args.gguf, 1 << 32)
    theirs, _ = olmoe_ref.run_job(ref, [int(i) for i in ids], 0, "torch")
    u = used.numpy()
    rest = np.setdiff1d(np.arange(theirs.shape[1]), u)
    diff = float(np.abs(theirs[:, u] - mine).max())
    scale = float(np.abs(mine).max())
    zero = float(np.abs(theirs[:, rest]).max()) if len(rest) else 0.0
    print(json.dumps({"positions": len(ids), "trained_rows": len(u), "max_abs_diff": diff,
                      "max_abs_logit": scale, "untrained_max_abs": zero}))
    if diff > 1e-3 * max(1.0, scale) or zero != 0.0:
        sys.exit("check: the export does not compute what was trained")


if __name__ == "__main__":
    main()
