"""A minimal GGUF v3 writer for oracle tests: typed metadata and raw tensor blocks.

Tensors are given as raw bytes plus ggml dims (ne0 first) and type, so quantized blocks are
written exactly as produced; gguf_reader reads them back.
"""

import struct

import numpy as np

import gguf_reader as gr


def _string(s):
    b = s.encode("utf-8")
    return struct.pack("<Q", len(b)) + b


def _value(vtype, v):
    if vtype in gr._SCALAR:
        return np.array([v], dtype=gr._SCALAR[vtype][0]).tobytes()
    if vtype == gr.STRING:
        return _string(v)
    if vtype == gr.ARRAY:
        etype, vals = v
        out = struct.pack("<IQ", etype, len(vals))
        if etype in gr._SCALAR:
            return out + np.asarray(vals, dtype=gr._SCALAR[etype][0]).tobytes()
        return out + b"".join(_value(etype, x) for x in vals)
    raise ValueError("unknown metadata value type %d" % vtype)


class Writer:
    def __init__(self, alignment=gr.DEFAULT_ALIGNMENT):
        self.kv = []
        self.tensors = []
        self.alignment = alignment
        if alignment != gr.DEFAULT_ALIGNMENT:
            self.add("general.alignment", gr.UINT32, alignment)

    def add(self, key, vtype, value):
        self.kv.append((key, vtype, value))

    def add_tensor(self, name, dims, ggml_type, raw):
        raw = bytes(raw)
        n = 1
        for d in dims:
            n *= d
        want = gr.row_bytes(ggml_type, dims[0]) * (n // dims[0])
        if len(raw) != want:
            raise ValueError("tensor %r: %d bytes given, dims %s of %s need %d"
                             % (name, len(raw), dims, gr.GGML_TYPES[ggml_type][0], want))
        self.tensors.append((name, list(dims), ggml_type, raw))

    def write(self, path):
        a = self.alignment
        head = [b"GGUF", struct.pack("<IQQ", 3, len(self.tensors), len(self.kv))]
        for key, vtype, value in self.kv:
            head += [_string(key), struct.pack("<I", vtype), _value(vtype, value)]
        off = 0
        offsets = []
        for name, dims, ttype, raw in self.tensors:
            offsets.append(off)
            head += [_string(name), struct.pack("<I", len(dims)),
                     struct.pack("<%dQ" % len(dims), *dims), struct.pack("<IQ", ttype, off)]
            off = (off + len(raw) + a - 1) // a * a
        header = b"".join(head)
        with open(path, "wb") as f:
            f.write(header)
            f.write(b"\0" * ((-len(header)) % a))
            for (name, dims, ttype, raw), o in zip(self.tensors, offsets):
                f.write(raw)
                f.write(b"\0" * ((-len(raw)) % a))
