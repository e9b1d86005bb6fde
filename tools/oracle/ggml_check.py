"""Checks gguf_reader's numpy dequantizers against the real ggml library, bit for bit.

ggml's dequantize_row_* and half/bfloat16 row converters are exported by libggml-base.so (the
npm package @node-llama-cpp/linux-x64 ships one); this script calls them through ctypes on the
same raw blocks the numpy code dequantizes and counts the float32 results whose bits differ.

    ggml_check.py LIBGGML_BASE.so [--all-halves] [--tables] TYPE IN.raw [TYPE IN.raw ...]

--all-halves also converts every one of the 65536 f16 and bf16 bit patterns both ways.
--tables compares the tables gguf_reader computes from their definitions (ksigns_iq2xs, the
doubled E2M1 levels) with the library's own copies, reported as "table-NAME".
The tables that have no definition (the IQ grids, kvalues_iq4nl) are read out of the same
library (ggml_tables.py). Blocks are compared 8192 at a time.
Prints one JSON object: {"TYPE": {"blocks": B, "elements": N, "mismatches": M, "nan_bits_differ":
K, "nans": X, "first_mismatch": ...}, ...}, first_mismatch being the first element whose bits
differ (either kind) with its block's bytes: a mismatch is an element whose float32 bits differ
and that is not NaN on both sides; nan_bits_differ counts the NaNs on both sides whose bits
(sign or payload) differ. The exit status is 0 even when there are mismatches: the caller judges
the counts.
"""

import ctypes
import json
import os
import sys

import numpy as np

sys.dont_write_bytecode = True  # leave no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gguf_reader as gr  # noqa: E402
import ggml_tables  # noqa: E402

# ggml's row function for each type the numpy code supports (F32 needs none: it is a copy).
ROW_FUNCS = {
    "F16": "ggml_fp16_to_fp32_row", "BF16": "ggml_bf16_to_fp32_row",
    "Q8_0": "dequantize_row_q8_0", "Q4_0": "dequantize_row_q4_0",
    "Q2_K": "dequantize_row_q2_K", "Q3_K": "dequantize_row_q3_K", "Q4_K": "dequantize_row_q4_K",
    "Q5_K": "dequantize_row_q5_K", "Q6_K": "dequantize_row_q6_K",
    "Q4_1": "dequantize_row_q4_1", "Q5_0": "dequantize_row_q5_0", "Q5_1": "dequantize_row_q5_1",
    "IQ4_NL": "dequantize_row_iq4_nl", "IQ4_XS": "dequantize_row_iq4_xs",
    "MXFP4": "dequantize_row_mxfp4", "NVFP4": "dequantize_row_nvfp4",
    "TQ1_0": "dequantize_row_tq1_0", "TQ2_0": "dequantize_row_tq2_0",
    "Q1_0": "dequantize_row_q1_0", "Q2_0": "dequantize_row_q2_0",
    "IQ2_XXS": "dequantize_row_iq2_xxs", "IQ2_XS": "dequantize_row_iq2_xs",
    "IQ2_S": "dequantize_row_iq2_s", "IQ3_XXS": "dequantize_row_iq3_xxs",
    "IQ3_S": "dequantize_row_iq3_s", "IQ1_S": "dequantize_row_iq1_s", "IQ1_M": "dequantize_row_iq1_m",
}

CHUNK = 8192  # blocks per comparison, to bound memory


def ggml_dequantize(lib, tname, raw, n):
    fn = getattr(lib, ROW_FUNCS[tname])
    fn.restype = None
    fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64]
    src = np.ascontiguousarray(raw, dtype=np.uint8)
    dst = np.empty(n, dtype=np.float32)
    fn(src.ctypes.data, dst.ctypes.data, n)
    return dst


class Tally:
    """Counts, over the chunks of one type, the elements whose bits differ."""

    def __init__(self):
        self.out = {"blocks": 0, "elements": 0, "mismatches": 0, "nan_bits_differ": 0, "nans": 0}

    def add(self, ours, theirs, raw=None, block_elems=1, block_bytes=0):
        a, b = ours.view(np.uint32), theirs.view(np.uint32)
        o = self.out
        differ = a != b
        both_nan = np.isnan(ours) & np.isnan(theirs)
        bad = np.nonzero(differ & ~both_nan)[0]
        if "first_mismatch" not in o and differ.any():  # the first element whose bits differ
            i = int(np.argmax(differ))
            o["first_mismatch"] = {"index": o["elements"] + i, "numpy_bits": "%08x" % a[i],
                                   "ggml_bits": "%08x" % b[i]}
            if raw is not None:
                k = i // block_elems
                o["first_mismatch"]["block"] = bytes(raw[k * block_bytes:(k + 1) * block_bytes]).hex()
        o["blocks"] += a.size // block_elems
        o["elements"] += int(a.size)
        o["mismatches"] += int(bad.size)
        o["nan_bits_differ"] += int(np.count_nonzero(differ & both_nan))
        o["nans"] += int(np.count_nonzero(np.isnan(theirs)))
        return self


def compare(ours, theirs):
    return Tally().add(ours, theirs).out


def check_tables():
    """The computed tables against the library's copies."""
    report = {}
    for name, ours in (("ksigns_iq2xs", gr.KSIGNS_IQ2XS.astype(np.int64)),
                       ("kvalues_fp4", gr.E2M1_DOUBLED.astype(np.int64))):
        theirs = ggml_tables.table(name).astype(np.int64)
        bad = np.nonzero(ours != theirs)[0]
        report["table-" + name] = {"elements": int(ours.size), "mismatches": int(bad.size)}
    return report


def main(argv):
    if len(argv) < 1:
        raise SystemExit(__doc__)
    lib = ctypes.CDLL(argv[0])
    ggml_tables.use_library(argv[0])
    args = argv[1:]
    report = {}
    if args and args[0] == "--all-halves":
        args = args[1:]
        every = np.arange(65536, dtype=np.uint16).view(np.uint8)
        for tname, ours in (("F16", gr.f16_to_f32), ("BF16", gr.bf16_to_f32)):
            report["all-" + tname] = compare(ours(np.arange(65536, dtype=np.uint16)),
                                             ggml_dequantize(lib, tname, every, 65536))
    if args and args[0] == "--tables":
        args = args[1:]
        report.update(check_tables())
    if len(args) % 2:
        raise SystemExit("want TYPE IN.raw pairs")
    for i in range(0, len(args), 2):
        tname, path = args[i], args[i + 1]
        tid = gr.TYPE_BY_NAME[tname]
        _, blk, size = gr.GGML_TYPES[tid]
        raw = np.fromfile(path, dtype=np.uint8)
        nb = raw.size // size
        tally = Tally()
        for first in range(0, nb, CHUNK):
            part = raw[first * size:min(nb, first + CHUNK) * size]
            n = part.size // size * blk
            ours = gr.dequantize(tid, part, n)
            if tname == "F32":
                theirs = part[:n * 4].copy().view("<f4")
            else:
                theirs = ggml_dequantize(lib, tname, part, n)
            tally.add(ours, theirs, part, blk, size)
        report[tname] = tally.out
    json.dump(report, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main(sys.argv[1:])
