"""Checks gguf_reader's numpy dequantizers against the real ggml library, bit for bit.

ggml's dequantize_row_* and half/bfloat16 row converters are exported by libggml-base.so (the
npm package @node-llama-cpp/linux-x64 ships one); this script calls them through ctypes on the
same raw blocks the numpy code dequantizes and counts the float32 results whose bits differ.

    ggml_check.py LIBGGML_BASE.so [--all-halves] TYPE IN.raw [TYPE IN.raw ...]

--all-halves also converts every one of the 65536 f16 and bf16 bit patterns both ways.
Prints one JSON object: {"TYPE": {"elements": N, "mismatches": M, "first_mismatch": ...}, ...}.
The exit status is 0 even when there are mismatches: the caller judges the counts.
"""

import ctypes
import json
import os
import sys

import numpy as np

sys.dont_write_bytecode = True  # leave no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gguf_reader as gr  # noqa: E402

# ggml's row function for each type the numpy code supports (F32 needs none: it is a copy).
ROW_FUNCS = {
    "F16": "ggml_fp16_to_fp32_row", "BF16": "ggml_bf16_to_fp32_row",
    "Q8_0": "dequantize_row_q8_0", "Q4_0": "dequantize_row_q4_0",
    "Q2_K": "dequantize_row_q2_K", "Q3_K": "dequantize_row_q3_K", "Q4_K": "dequantize_row_q4_K",
    "Q5_K": "dequantize_row_q5_K", "Q6_K": "dequantize_row_q6_K",
}


def ggml_dequantize(lib, tname, raw, n):
    fn = getattr(lib, ROW_FUNCS[tname])
    fn.restype = None
    fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64]
    src = np.ascontiguousarray(raw, dtype=np.uint8)
    dst = np.empty(n, dtype=np.float32)
    fn(src.ctypes.data, dst.ctypes.data, n)
    return dst


def compare(ours, theirs):
    a, b = ours.view(np.uint32), theirs.view(np.uint32)
    bad = np.nonzero(a != b)[0]
    out = {"elements": int(a.size), "mismatches": int(bad.size)}
    if bad.size:
        i = int(bad[0])
        out["first_mismatch"] = {"index": i, "numpy_bits": "%08x" % a[i], "ggml_bits": "%08x" % b[i]}
    return out


def main(argv):
    if len(argv) < 1:
        raise SystemExit(__doc__)
    lib = ctypes.CDLL(argv[0])
    args = argv[1:]
    report = {}
    if args and args[0] == "--all-halves":
        args = args[1:]
        every = np.arange(65536, dtype=np.uint16).view(np.uint8)
        for tname, ours in (("F16", gr.f16_to_f32), ("BF16", gr.bf16_to_f32)):
            report["all-" + tname] = compare(ours(np.arange(65536, dtype=np.uint16)),
                                             ggml_dequantize(lib, tname, every, 65536))
    if len(args) % 2:
        raise SystemExit("want TYPE IN.raw pairs")
    for i in range(0, len(args), 2):
        tname, path = args[i], args[i + 1]
        tid = gr.TYPE_BY_NAME[tname]
        _, blk, size = gr.GGML_TYPES[tid]
        raw = np.fromfile(path, dtype=np.uint8)
        n = raw.size // size * blk
        ours = gr.dequantize(tid, raw, n)
        if tname == "F32":
            theirs = raw[:n * 4].copy().view("<f4")
        else:
            theirs = ggml_dequantize(lib, tname, raw, n)
        report[tname] = compare(ours, theirs)
    json.dump(report, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main(sys.argv[1:])
