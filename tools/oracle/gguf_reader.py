"""A small, independent GGUF (v2/v3) reader with numpy dequantizers that follow ggml bit for bit.

This is oracle code: it exists so the Go engine can be checked against something written
separately. It reads the header, every metadata value type, the tensor table and the data
section (aligned by general.alignment), and hands out tensors as read-only numpy views of a
memory map, or as float32 arrays dequantized the way ggml's dequantize_row_* does it.

Shapes: GGUF lists dims in ggml order (ne0 first, the contiguous one); numpy arrays come back
with the dims reversed, so a ggml [in, out] matrix is numpy [out, in] and a stacked expert
tensor ggml [in, out, n_expert] is numpy [n_expert, out, in].

Exactness: each dequantizer does its arithmetic in float32 in the same order as ggml's C code
(ggml-quants.c), rounding each product to float32 before the next operation, so the results
are bit-identical to libggml-base (which is compiled without FMA contraction). Integers are
converted to float32 explicitly because numpy would widen int32 * float32 to float64.

Command line (used by the Go tests):
    gguf_reader.py info FILE.gguf                 JSON: version, alignment, data offset, metadata
                                                  (arrays summarised), tensor table
    gguf_reader.py dequant TYPE IN.raw OUT.f32 [TYPE IN OUT ...]
                                                  dequantize raw blocks of TYPE (a ggml type name
                                                  such as Q4_K) to little-endian float32
    gguf_reader.py dump FILE.gguf OUT.f32         every tensor dequantized, in table order, one
                                                  after another (little-endian float32)
"""

import json
import mmap
import os
import struct
import sys

import numpy as np

GGUF_MAGIC = b"GGUF"
DEFAULT_ALIGNMENT = 32
MAX_DIMS = 4  # GGML_MAX_DIMS

# Metadata value types (gguf.h: enum gguf_type).
UINT8, INT8, UINT16, INT16, UINT32, INT32, FLOAT32, BOOL, STRING, ARRAY, UINT64, INT64, FLOAT64 = range(13)

_SCALAR = {
    UINT8: ("<u1", 1), INT8: ("<i1", 1), UINT16: ("<u2", 2), INT16: ("<i2", 2),
    UINT32: ("<u4", 4), INT32: ("<i4", 4), FLOAT32: ("<f4", 4), BOOL: ("<u1", 1),
    UINT64: ("<u8", 8), INT64: ("<i8", 8), FLOAT64: ("<f8", 8),
}
VALUE_TYPE_NAMES = {
    UINT8: "UINT8", INT8: "INT8", UINT16: "UINT16", INT16: "INT16", UINT32: "UINT32",
    INT32: "INT32", FLOAT32: "FLOAT32", BOOL: "BOOL", STRING: "STRING", ARRAY: "ARRAY",
    UINT64: "UINT64", INT64: "INT64", FLOAT64: "FLOAT64",
}

# ggml types this reader knows the block size of: id -> (name, elements per block, bytes per block).
GGML_TYPES = {
    0: ("F32", 1, 4), 1: ("F16", 1, 2), 2: ("Q4_0", 32, 18), 3: ("Q4_1", 32, 20),
    6: ("Q5_0", 32, 22), 7: ("Q5_1", 32, 24), 8: ("Q8_0", 32, 34), 9: ("Q8_1", 32, 36),
    10: ("Q2_K", 256, 84), 11: ("Q3_K", 256, 110), 12: ("Q4_K", 256, 144),
    13: ("Q5_K", 256, 176), 14: ("Q6_K", 256, 210), 15: ("Q8_K", 256, 292),
    16: ("IQ2_XXS", 256, 66), 17: ("IQ2_XS", 256, 74), 18: ("IQ3_XXS", 256, 98),
    19: ("IQ1_S", 256, 50), 20: ("IQ4_NL", 32, 18), 21: ("IQ3_S", 256, 110),
    22: ("IQ2_S", 256, 82), 23: ("IQ4_XS", 256, 136), 24: ("I8", 1, 1), 25: ("I16", 1, 2),
    26: ("I32", 1, 4), 27: ("I64", 1, 8), 28: ("F64", 1, 8), 29: ("IQ1_M", 256, 56),
    30: ("BF16", 1, 2), 34: ("TQ1_0", 256, 54), 35: ("TQ2_0", 256, 66), 39: ("MXFP4", 32, 17),
    40: ("NVFP4", 64, 36), 41: ("Q1_0", 128, 18), 42: ("Q2_0", 64, 18),
}
TYPE_BY_NAME = {name: tid for tid, (name, _, _) in GGML_TYPES.items()}


class GGUFError(ValueError):
    """The file is not a GGUF this reader accepts, or it is damaged."""


class TensorInfo:
    """One entry of the tensor table. dims are in ggml order (ne0 first)."""

    __slots__ = ("name", "dims", "type", "offset", "nbytes")

    def __init__(self, name, dims, ggml_type, offset, nbytes):
        self.name = name
        self.dims = dims
        self.type = ggml_type
        self.offset = offset  # absolute, in bytes from the start of the file
        self.nbytes = nbytes

    @property
    def type_name(self):
        return GGML_TYPES[self.type][0]

    @property
    def n_elements(self):
        n = 1
        for d in self.dims:
            n *= d
        return n

    @property
    def shape(self):
        """The numpy shape: ggml dims reversed."""
        return tuple(reversed(self.dims))


def row_bytes(ggml_type, n):
    """Bytes taken by n consecutive elements of ggml_type (n a whole number of blocks)."""
    if ggml_type not in GGML_TYPES:
        raise GGUFError("unknown ggml type %d" % ggml_type)
    name, blk, size = GGML_TYPES[ggml_type]
    if n % blk:
        raise GGUFError("%s: %d elements is not a whole number of %d-element blocks" % (name, n, blk))
    return n // blk * size


class _Cursor:
    """Bounds-checked little-endian reads from a buffer."""

    def __init__(self, buf, where):
        self.buf = buf
        self.pos = 0
        self.where = where

    def take(self, n, what):
        if n < 0 or self.pos + n > len(self.buf):
            raise GGUFError("%s: %s needs %d bytes at offset %d, past end of file (%d bytes)"
                            % (self.where, what, n, self.pos, len(self.buf)))
        b = self.buf[self.pos:self.pos + n]
        self.pos += n
        return b

    def u32(self, what):
        return struct.unpack("<I", self.take(4, what))[0]

    def u64(self, what):
        return struct.unpack("<Q", self.take(8, what))[0]

    def string(self, what):
        n = self.u64(what + " length")
        raw = self.take(n, what)
        try:
            return bytes(raw).decode("utf-8")
        except UnicodeDecodeError as e:
            raise GGUFError("%s: %s at offset %d is not UTF-8: %s" % (self.where, what, self.pos - n, e))

    def value(self, vtype, what):
        if vtype in _SCALAR:
            dt, size = _SCALAR[vtype]
            v = np.frombuffer(self.take(size, what), dtype=dt)[0]
            return bool(v) if vtype == BOOL else v.item()
        if vtype == STRING:
            return self.string(what)
        if vtype == ARRAY:
            etype = self.u32(what + " element type")
            count = self.u64(what + " element count")
            if etype in _SCALAR:
                dt, size = _SCALAR[etype]
                if count > (len(self.buf) - self.pos) // size:
                    raise GGUFError("%s: %s: %d elements of %d bytes run past end of file"
                                    % (self.where, what, count, size))
                arr = np.frombuffer(self.take(count * size, what), dtype=dt).copy()
                return (etype, arr.astype(bool) if etype == BOOL else arr)
            if etype == STRING:
                # Each string takes at least its 8-byte length: a cheap bound before the loop.
                if count > (len(self.buf) - self.pos) // 8:
                    raise GGUFError("%s: %s: %d strings run past end of file" % (self.where, what, count))
                return (etype, [self.string("%s[%d]" % (what, i)) for i in range(count)])
            if etype == ARRAY:
                if count > (len(self.buf) - self.pos) // 12:
                    raise GGUFError("%s: %s: %d nested arrays run past end of file"
                                    % (self.where, what, count))
                return (etype, [self.value(ARRAY, "%s[%d]" % (what, i)) for i in range(count)])
            raise GGUFError("%s: %s: unknown array element type %d" % (self.where, what, etype))
        raise GGUFError("%s: %s: unknown value type %d" % (self.where, what, vtype))


class GGUFFile:
    """An open GGUF file: metadata, tensor table and memory-mapped data.

    metadata maps key -> value. Scalars are Python int/float/bool/str; arrays are
    (element_type, values) with values a numpy array for numbers or a list for strings and
    nested arrays. metadata_types maps key -> value type.
    """

    def __init__(self, path):
        self.path = path
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size == 0:
                raise GGUFError("%s: empty file" % path)
            self._mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        self.buf = memoryview(self._mm)
        self.size = size
        try:
            self._parse()
        except GGUFError:
            self.close()
            raise

    def close(self):
        # numpy views keep the map alive until they are gone; release what we hold.
        self.buf = None
        self._mm = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _parse(self):
        c = _Cursor(self.buf, self.path)
        magic = bytes(c.take(4, "magic"))
        if magic != GGUF_MAGIC:
            raise GGUFError("%s: magic %r is not GGUF" % (self.path, magic))
        self.version = c.u32("version")
        if self.version not in (2, 3):
            # Version 1 used 32-bit counts; a byte-swapped version means a big-endian file.
            raise GGUFError("%s: GGUF version %d not supported (want 2 or 3)" % (self.path, self.version))
        n_tensors = c.u64("tensor count")
        n_kv = c.u64("metadata count")
        # A KV takes at least 8 (key length) + 4 (type) + 1 bytes; a tensor info at least 8+4+4+8.
        if n_kv > self.size // 13 or n_tensors > self.size // 24:
            raise GGUFError("%s: %d metadata entries and %d tensors cannot fit in %d bytes"
                            % (self.path, n_kv, n_tensors, self.size))
        self.metadata = {}
        self.metadata_types = {}
        for i in range(n_kv):
            key = c.string("metadata key %d" % i)
            if key in self.metadata:
                raise GGUFError("%s: metadata key %r appears twice" % (self.path, key))
            vtype = c.u32("type of %s" % key)
            self.metadata[key] = c.value(vtype, key)
            self.metadata_types[key] = vtype
        align = self.metadata.get("general.alignment", DEFAULT_ALIGNMENT)
        if self.metadata_types.get("general.alignment", UINT32) != UINT32 or \
                not isinstance(align, int) or align <= 0 or align & (align - 1):
            raise GGUFError("%s: general.alignment %r is not a power of two" % (self.path, align))
        self.alignment = align
        infos = []
        for i in range(n_tensors):
            name = c.string("tensor %d name" % i)
            n_dims = c.u32("tensor %s dims" % name)
            if n_dims == 0 or n_dims > MAX_DIMS:
                raise GGUFError("%s: tensor %r has %d dims (1..%d allowed)"
                                % (self.path, name, n_dims, MAX_DIMS))
            dims = [c.u64("tensor %s dim %d" % (name, d)) for d in range(n_dims)]
            ttype = c.u32("tensor %s type" % name)
            off = c.u64("tensor %s offset" % name)
            infos.append((name, dims, ttype, off))
        self.data_offset = (c.pos + align - 1) // align * align
        if self.data_offset > self.size:
            raise GGUFError("%s: data section at %d starts past end of file (%d bytes)"
                            % (self.path, self.data_offset, self.size))
        self.tensors = {}
        for name, dims, ttype, off in infos:
            if name in self.tensors:
                raise GGUFError("%s: tensor %r appears twice" % (self.path, name))
            if ttype not in GGML_TYPES:
                raise GGUFError("%s: tensor %r: unknown ggml type %d" % (self.path, name, ttype))
            n = 1
            for d in dims:
                if d == 0 or d > self.size * 256:  # no real element count exceeds 256 per file byte
                    raise GGUFError("%s: tensor %r: dims %s impossible for a %d-byte file"
                                    % (self.path, name, dims, self.size))
                n *= d
            try:
                nbytes = row_bytes(ttype, dims[0]) * (n // dims[0])
            except GGUFError as e:
                raise GGUFError("%s: tensor %r dims %s: %s" % (self.path, name, dims, e))
            if off % align:
                raise GGUFError("%s: tensor %r: offset %d not aligned to %d" % (self.path, name, off, align))
            start = self.data_offset + off
            if start + nbytes > self.size:
                raise GGUFError("%s: tensor %r: %d bytes at offset %d run past end of file (%d bytes)"
                                % (self.path, name, nbytes, start, self.size))
            self.tensors[name] = TensorInfo(name, dims, ttype, start, nbytes)

    # ---- metadata helpers ----

    def get(self, key, default=None):
        """A metadata value; arrays come back as their values only."""
        if key not in self.metadata:
            return default
        v = self.metadata[key]
        if self.metadata_types[key] == ARRAY:
            return v[1]
        return v

    def require(self, key, kinds=(int, float)):
        if key not in self.metadata:
            raise GGUFError("%s: metadata %s missing" % (self.path, key))
        v = self.get(key)
        if not isinstance(v, kinds) or isinstance(v, bool) and bool not in kinds:
            raise GGUFError("%s: metadata %s = %r has the wrong type" % (self.path, key, v))
        return v

    # ---- tensor data ----

    def info(self, name):
        if name not in self.tensors:
            raise GGUFError("%s: tensor %r not found" % (self.path, name))
        return self.tensors[name]

    def raw(self, name):
        """The tensor's bytes as a read-only uint8 view of the map."""
        t = self.info(name)
        return np.frombuffer(self.buf, dtype=np.uint8, count=t.nbytes, offset=t.offset)

    def tensor(self, name):
        """The whole tensor dequantized to float32, numpy shape (dims reversed)."""
        t = self.info(name)
        return dequantize(t.type, self.raw(name), t.n_elements).reshape(t.shape)

    def rows(self, name, first, count):
        """count rows (ne0-long) starting at row first, dequantized: shape [count, ne0]."""
        t = self.info(name)
        n_rows = t.n_elements // t.dims[0]
        if first < 0 or count < 0 or first + count > n_rows:
            raise GGUFError("%s: tensor %r: rows [%d, %d) outside its %d rows"
                            % (self.path, name, first, first + count, n_rows))
        rb = row_bytes(t.type, t.dims[0])
        raw = np.frombuffer(self.buf, dtype=np.uint8, count=rb * count, offset=t.offset + rb * first)
        return dequantize(t.type, raw, count * t.dims[0]).reshape(count, t.dims[0])

    def expert(self, name, e):
        """Expert e of a stacked 3-D tensor (ggml [in, out, n_expert]) as float32 [out, in]."""
        t = self.info(name)
        if len(t.dims) != 3:
            raise GGUFError("%s: tensor %r has dims %s, not [in, out, n_expert]" % (self.path, name, t.dims))
        n_in, n_out, n_exp = t.dims
        if not 0 <= e < n_exp:
            raise GGUFError("%s: tensor %r: expert %d outside [0, %d)" % (self.path, name, e, n_exp))
        return self.rows(name, e * n_out, n_out)


# ---------------------------------------------------------------------------------------------
# Dequantization. Each function takes the raw bytes of whole blocks (uint8 array) and returns
# float32 elements in order.


def f16_to_f32(u16):
    """IEEE half bits -> float32, as ggml's GGML_FP16_TO_FP32 does it: exact for every finite
    value and infinity; a NaN keeps sign and payload and comes back quiet (ggml's software
    conversion multiplies by a power of two, which sets the quiet bit)."""
    u16 = np.asarray(u16, dtype=np.uint16)
    out = u16.view(np.float16).astype(np.float32)
    nan = (u16 & 0x7C00) == 0x7C00
    nan &= (u16 & 0x03FF) != 0
    if nan.any():
        bits = out.view(np.uint32)
        h = u16[nan].astype(np.uint32)
        bits[nan] = ((h & 0x8000) << 16) | 0x7FC00000 | ((h & 0x03FF) << 13)
    return out


def bf16_to_f32(u16):
    """bfloat16 bits -> float32: the top half of the float32 (ggml shifts, NaNs included)."""
    return (np.asarray(u16, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def _blocks(raw, n, block_elems, block_bytes, name):
    raw = np.asarray(raw, dtype=np.uint8)
    if n % block_elems:
        raise GGUFError("%s: %d elements is not a whole number of %d-element blocks" % (name, n, block_elems))
    nb = n // block_elems
    if raw.size < nb * block_bytes:
        raise GGUFError("%s: %d elements need %d bytes, have %d" % (name, n, nb * block_bytes, raw.size))
    return raw[:nb * block_bytes].reshape(nb, block_bytes)


def _half(b, at):
    """The f16 at byte offset at of every block, as float32 [nb, 1]."""
    return f16_to_f32(b[:, at:at + 2].copy().view("<u2"))


def _deq_f32(raw, n):
    return _blocks(raw, n, 1, 4, "F32").copy().view("<f4").reshape(n).astype(np.float32)


def _deq_f16(raw, n):
    return f16_to_f32(_blocks(raw, n, 1, 2, "F16").copy().view("<u2").reshape(n))


def _deq_bf16(raw, n):
    return bf16_to_f32(_blocks(raw, n, 1, 2, "BF16").copy().view("<u2").reshape(n))


def _deq_q8_0(raw, n):
    # block_q8_0 { f16 d; int8 qs[32]; }: y = qs[j]*d.
    b = _blocks(raw, n, 32, 34, "Q8_0")
    d = _half(b, 0)
    q = b[:, 2:34].view(np.int8).astype(np.float32)
    return (q * d).reshape(n)


def _deq_q4_0(raw, n):
    # block_q4_0 { f16 d; uint8 qs[16]; }: element j (low nibble) and j+16 (high nibble), (q-8)*d.
    b = _blocks(raw, n, 32, 18, "Q4_0")
    d = _half(b, 0)
    qs = b[:, 2:18]
    q = np.concatenate([(qs & 0x0F), (qs >> 4)], axis=1).astype(np.float32) - np.float32(8)
    return (q * d).reshape(n)


def _k_scale_min(s):
    """The 8 six-bit (scale, min) pairs of a Q4_K/Q5_K block (ggml's get_scale_min_k4).
    s: [nb, 12] uint8 -> two [nb, 8] uint8 arrays."""
    sc = np.empty((s.shape[0], 8), dtype=np.uint8)
    mn = np.empty((s.shape[0], 8), dtype=np.uint8)
    sc[:, :4] = s[:, 0:4] & 63
    mn[:, :4] = s[:, 4:8] & 63
    sc[:, 4:] = (s[:, 8:12] & 0x0F) | ((s[:, 0:4] >> 6) << 4)
    mn[:, 4:] = (s[:, 8:12] >> 4) | ((s[:, 4:8] >> 6) << 4)
    return sc, mn


# The K-quant loops of ggml's dequantize_row_* written as numpy reshapes: each block's bits are
# spread over axes whose row-major order is the element order, and a value is computed in a
# [blocks, sub-blocks, elements] shape so its sub-block's scale broadcasts.
_SHIFT2 = (2 * np.arange(4, dtype=np.uint8))[None, None, :, None, None]  # 2j of (n, j, h, l)
_HBIT3 = (4 * np.arange(2, dtype=np.uint8)[:, None]
          + np.arange(4, dtype=np.uint8)[None, :])[None, :, :, None, None]  # bit 4n + j
_HBIT5 = np.arange(8, dtype=np.uint8).reshape(1, 4, 2, 1)  # bit 2c + h of qh[l]
_SHIFT6 = (2 * np.arange(4, dtype=np.uint8))[None, None, :, None]  # 2g of (n, g, l)


def _nibbles(qs):
    """[nb, c, 32] bytes -> [nb, c, 2, 32]: low nibbles of 32 bytes, then their high nibbles."""
    return np.stack([qs & 0x0F, qs >> 4], axis=2)


def _crumbs(qs):
    """Q2_K/Q3_K 2-bit quants: qs [nb, 64] -> [nb, 256]. Element 128n + 32j + 16h + l is bits
    2j of qs[32n + 16h + l]."""
    return ((qs.reshape(-1, 2, 1, 2, 16) >> _SHIFT2) & 3).reshape(-1, 256)


def _deq_q4_k(raw, n):
    # block_q4_K { f16 d; f16 dmin; uint8 scales[12]; uint8 qs[128]; }
    # Element 64c + 32h + l is nibble h of qs[32c + l], in sub-block 2c + h.
    # y = (d*sc)*q - (dmin*m): both products rounded to float32 first.
    b = _blocks(raw, n, 256, 144, "Q4_K")
    d, dmin = _half(b, 0), _half(b, 2)
    sc, mn = _k_scale_min(b[:, 4:16])
    d1 = (d * sc.astype(np.float32))[:, :, None]
    m1 = (dmin * mn.astype(np.float32))[:, :, None]
    q = _nibbles(b[:, 16:144].reshape(-1, 4, 32)).reshape(-1, 8, 32).astype(np.float32)
    return (d1 * q - m1).reshape(n)


def _deq_q5_k(raw, n):
    # block_q5_K { f16 d; f16 dmin; uint8 scales[12]; uint8 qh[32]; uint8 qs[128]; }
    # As Q4_K, plus 16 when bit 2c + h of qh[l] is set.
    b = _blocks(raw, n, 256, 176, "Q5_K")
    d, dmin = _half(b, 0), _half(b, 2)
    sc, mn = _k_scale_min(b[:, 4:16])
    d1 = (d * sc.astype(np.float32))[:, :, None]
    m1 = (dmin * mn.astype(np.float32))[:, :, None]
    lo = _nibbles(b[:, 48:176].reshape(-1, 4, 32))
    hi = ((b[:, 16:48].reshape(-1, 1, 1, 32) >> _HBIT5) & 1) << 4
    q = (lo | hi).reshape(-1, 8, 32).astype(np.float32)
    return (d1 * q - m1).reshape(n)


def _deq_q6_k(raw, n):
    # block_q6_K { uint8 ql[128]; uint8 qh[64]; int8 scales[16]; f16 d; }
    # Element 128n + 32g + l: low nibble (g >> 1) of ql[64n + 32(g & 1) + l], two high bits at 2g
    # of qh[32n + l]; sub-block of 16. y = (d*sc)*q with q in [-32, 31]: two roundings, left to
    # right as in the C expression.
    b = _blocks(raw, n, 256, 210, "Q6_K")
    d = _half(b, 208)
    sc = b[:, 192:208].view(np.int8).astype(np.float32)
    lo = _nibbles(b[:, 0:128].reshape(-1, 2, 2, 32).reshape(-1, 4, 32)).reshape(-1, 2, 2, 2, 32)
    lo = lo.transpose(0, 1, 3, 2, 4).reshape(-1, 2, 4, 32)  # (n, g & 1, g >> 1, l) -> (n, g, l)
    hi = (b[:, 128:192].reshape(-1, 2, 1, 32) >> _SHIFT6) & 3
    q = (lo | (hi << 4)).astype(np.int16) - 32
    ds = (d * sc)[:, :, None]
    return (ds * q.reshape(-1, 16, 16).astype(np.float32)).reshape(n)


def _deq_q2_k(raw, n):
    # block_q2_K { uint8 scales[16]; uint8 qs[64]; f16 d; f16 dmin; }
    # scale byte: low nibble scale, high nibble min; y = (d*sc)*q - (dmin*m).
    b = _blocks(raw, n, 256, 84, "Q2_K")
    d, dmin = _half(b, 80), _half(b, 82)
    s = b[:, 0:16]
    dl = (d * (s & 0x0F).astype(np.float32))[:, :, None]
    ml = (dmin * (s >> 4).astype(np.float32))[:, :, None]
    q = _crumbs(b[:, 16:80]).reshape(-1, 16, 16).astype(np.float32)
    return (dl * q - ml).reshape(n)


def _deq_q3_k(raw, n):
    # block_q3_K { uint8 hmask[32]; uint8 qs[64]; uint8 scales[12]; f16 d; }
    # 16 six-bit scales unpacked from 12 bytes as ggml does with four uint32 words;
    # y = (d*(sc-32)) * (q - (hmask bit ? 0 : 4)), the hmask bit of element 128n + 32j + 16h + l
    # being bit 4n + j of hmask[16h + l].
    b = _blocks(raw, n, 256, 110, "Q3_K")
    d = _half(b, 108)
    aux = b[:, 96:108].copy().view("<u4")  # [nb, 3]
    a0, a1, tmp = aux[:, 0], aux[:, 1], aux[:, 2]
    k1, k2 = np.uint32(0x03030303), np.uint32(0x0F0F0F0F)
    words = np.stack([
        (a0 & k2) | (((tmp >> 0) & k1) << 4),
        (a1 & k2) | (((tmp >> 2) & k1) << 4),
        ((a0 >> 4) & k2) | (((tmp >> 4) & k1) << 4),
        ((a1 >> 4) & k2) | (((tmp >> 6) & k1) << 4),
    ], axis=1).astype("<u4")
    sc = words.view(np.int8).reshape(-1, 16).astype(np.float32) - np.float32(32)
    dl = (d * sc)[:, :, None]
    q = _crumbs(b[:, 32:96]).astype(np.int16)
    h = ((b[:, 0:32].reshape(-1, 1, 1, 2, 16) >> _HBIT3) & 1).reshape(-1, 256)
    q = q - np.where(h == 1, 0, 4).astype(np.int16)
    return (dl * q.reshape(-1, 16, 16).astype(np.float32)).reshape(n)


# ---- the legacy 32-element formats beside Q4_0 and Q8_0 ----


def _plus_min(p, m):
    """p + m as ggml's x*d + m computes it on x86: the sum rounded once, and where both are
    NaN the first operand's (the product's) NaN, which numpy's operand order does not promise."""
    r = p + m
    nan = np.isnan(p)
    if nan.any():
        r = np.where(nan, p, r)
    return r


def _fifth_bits(b, at):
    """Q5_0/Q5_1: the little-endian 32-bit qh at byte at, element k's fifth bit being bit k,
    as 0 or 16 per element: [nb, 32]."""
    return np.unpackbits(b[:, at:at + 4], axis=1, bitorder="little") << 4


def _low_high(qs):
    """[..., 16] bytes -> [..., 32]: their low nibbles, then their high nibbles."""
    return np.concatenate([qs & 0x0F, qs >> 4], axis=-1)


def _deq_q4_1(raw, n):
    # block_q4_1 { f16 d; f16 m; uint8 qs[16]; }: y = q*d + m (q the nibble, 0..15).
    b = _blocks(raw, n, 32, 20, "Q4_1")
    d, m = _half(b, 0), _half(b, 2)
    q = _low_high(b[:, 4:20]).astype(np.float32)
    return _plus_min(q * d, m).reshape(n)


def _deq_q5_0(raw, n):
    # block_q5_0 { f16 d; uint8 qh[4]; uint8 qs[16]; }: y = (q - 16)*d, q = nibble | fifth bit.
    b = _blocks(raw, n, 32, 22, "Q5_0")
    d = _half(b, 0)
    q = (_low_high(b[:, 6:22]) | _fifth_bits(b, 2)).astype(np.int16) - 16
    return (q.astype(np.float32) * d).reshape(n)


def _deq_q5_1(raw, n):
    # block_q5_1 { f16 d; f16 m; uint8 qh[4]; uint8 qs[16]; }: y = q*d + m.
    b = _blocks(raw, n, 32, 24, "Q5_1")
    d, m = _half(b, 0), _half(b, 2)
    q = (_low_high(b[:, 8:24]) | _fifth_bits(b, 4)).astype(np.float32)
    return _plus_min(q * d, m).reshape(n)


# ---- the formats whose codes index a table of levels ----


def _table(name):
    """A table read out of libggml-base.so (ggml_tables.py): only the IQ grids and IQ4_NL's
    levels, which have no closed form."""
    sys.dont_write_bytecode = True  # leave no __pycache__ in the source tree
    try:
        import ggml_tables
    except ImportError:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import ggml_tables
    try:
        return ggml_tables.table(name)
    except ggml_tables.TablesError as e:
        raise GGUFError(str(e))


_LEVELS = {}  # table name -> float32 levels or grid rows, converted once


def _levels(name, elems=1, signed=False):
    """Table name as float32: [16] for a level table, [entries, elems] for a grid whose entry
    packs its elements' bytes (element j in byte j), int8 where signed."""
    if name not in _LEVELS:
        t = _table(name)
        if elems > 1:
            t = t.view(np.int8 if signed else np.uint8).reshape(-1, elems)  # the words are little-endian
        _LEVELS[name] = t.astype(np.float32)
    return _LEVELS[name]


def _e2m1_doubled():
    """The 16 E2M1 (OCP FP4) values, doubled to integers (ggml's kvalues_mxfp4): code bit 3 the
    sign, bits 1-2 the exponent (bias 1), bit 0 the mantissa; a zero exponent is subnormal."""
    out = []
    for c in range(16):
        e, m = (c >> 1) & 3, c & 1
        mag = m if e == 0 else (2 + m) << (e - 1)  # 2 * 2^(e-1) * (1 + m/2)
        out.append(-mag if c & 8 else mag)
    return np.array(out, dtype=np.float32)


E2M1_DOUBLED = _e2m1_doubled()


def _e8m0_halves():
    """GGML_E8M0_TO_FP32_HALF for every byte e: 2^(e-128), subnormal for e < 2 (e = 255, OCP's
    NaN, is 2^127 in ggml too)."""
    e = np.arange(256, dtype=np.uint32)
    bits = np.where(e < 2, np.uint32(0x00200000) << e, (e - np.uint32(1)) << np.uint32(23))
    return bits.astype(np.uint32).view(np.float32)


def _ue4m3_halves():
    """Half of ggml_ue4m3_to_fp32 for every byte: 0x00 and 0x7f (E4M3's NaN) give 0; otherwise
    bit 7 is ignored, bits 3-6 are the exponent (bias 7) and bits 0-2 the mantissa, subnormal
    (mantissa * 2^-9) under a zero exponent. Every value is exact in float32."""
    out = np.zeros(256, dtype=np.float64)
    for e in range(256):
        if e in (0x00, 0x7F):
            continue
        exp, man = (e >> 3) & 15, e & 7
        out[e] = man * 2.0 ** -9 if exp == 0 else (1 + man / 8) * 2.0 ** (exp - 7)
    return (out / 2).astype(np.float32)


E8M0_HALVES = _e8m0_halves()
UE4M3_HALVES = _ue4m3_halves()


def _deq_iq4_nl(raw, n):
    # block_iq4_nl { f16 d; uint8 qs[16]; }: y = d * kvalues_iq4nl[nibble], low nibbles first.
    b = _blocks(raw, n, 32, 18, "IQ4_NL")
    d = _half(b, 0)
    return (d * _levels("kvalues_iq4nl")[_low_high(b[:, 2:18])]).reshape(n)


def _deq_iq4_xs(raw, n):
    # block_iq4_xs { f16 d; uint16 scales_h; uint8 scales_l[4]; uint8 qs[128]; }
    # Sub-block ib of 32: ls = nibble ib of scales_l | (bits 2ib, 2ib+1 of scales_h) << 4,
    # dl = d*(ls - 32), y = dl * kvalues_iq4nl[nibble] (16 bytes, low nibbles first).
    b = _blocks(raw, n, 256, 136, "IQ4_XS")
    d = _half(b, 0)
    sh = b[:, 2:4].copy().view("<u2")
    sl = b[:, 4:8]
    lo = np.stack([sl & 0x0F, sl >> 4], axis=2).reshape(-1, 8).astype(np.int16)
    hi = ((sh >> (2 * np.arange(8, dtype=np.uint16))) & 3).astype(np.int16)
    dl = d * ((lo | (hi << 4)) - 32).astype(np.float32)
    q = _levels("kvalues_iq4nl")[_low_high(b[:, 8:136].reshape(-1, 8, 16))]
    return (dl[:, :, None] * q).reshape(n)


def _deq_mxfp4(raw, n):
    # block_mxfp4 { uint8 e; uint8 qs[16]; }: y = kvalues_mxfp4[nibble] * E8M0_HALF(e).
    b = _blocks(raw, n, 32, 17, "MXFP4")
    d = E8M0_HALVES[b[:, 0:1]]
    return (E2M1_DOUBLED[_low_high(b[:, 1:17])] * d).reshape(n)


def _deq_nvfp4(raw, n):
    # block_nvfp4 { uint8 d[4]; uint8 qs[32]; }: four sub-blocks of 16, each a UE4M3 scale and 8
    # bytes (low nibbles elements 0-7, high 8-15); y = kvalues_mxfp4[nibble] * UE4M3(d[s])/2.
    b = _blocks(raw, n, 64, 36, "NVFP4")
    d = UE4M3_HALVES[b[:, 0:4]][:, :, None]
    return (E2M1_DOUBLED[_low_high(b[:, 4:36].reshape(-1, 4, 8))] * d).reshape(n)


def _ternary_digits():
    """TQ1_0's digits as ggml reads them, for every byte q and digit n (0..4): the byte is a
    base-3 fixed-point fraction, so digit n is ((q * 3^n mod 256) * 3) >> 8, stored minus 1."""
    q = np.arange(256, dtype=np.uint16)
    p = [(q * 3 ** k) & 0xFF for k in range(5)]
    return np.stack([((x * 3) >> 8).astype(np.int16) - 1 for x in p]).astype(np.float32)


_TQ1_DIGITS = _ternary_digits()  # [5, 256]


def _deq_tq1_0(raw, n):
    # block_tq1_0 { uint8 qs[48]; uint8 qh[4]; f16 d; }: five digits per qs byte and four per qh
    # byte, digit-major within each run of bytes: qs[0:32] (elements 0-159), qs[32:48]
    # (160-239), qh (240-255); y = (digit - 1)*d.
    b = _blocks(raw, n, 256, 54, "TQ1_0")
    d = _half(b, 52)
    nb = b.shape[0]

    def run(lo, hi, digits):
        return _TQ1_DIGITS[np.arange(digits)[None, :, None], b[:, None, lo:hi]].reshape(nb, -1)

    q = np.concatenate([run(0, 32, 5), run(32, 48, 5), run(48, 52, 4)], axis=1)
    return (q * d).reshape(n)


_MINUS_ONE = np.arange(4, dtype=np.float32) - np.float32(1)  # a 2-bit code c as c - 1
_SHIFT_2BIT = 2 * np.arange(4, dtype=np.uint8)


def _deq_tq2_0(raw, n):
    # block_tq2_0 { uint8 qs[64]; f16 d; }: element 128h + 32l + m is bits 2l, 2l+1 of
    # qs[32h + m]; y = (code - 1)*d.
    b = _blocks(raw, n, 256, 66, "TQ2_0")
    d = _half(b, 64)
    q = (b[:, 0:64].reshape(-1, 2, 1, 32) >> _SHIFT_2BIT[None, None, :, None]) & 3
    return (_MINUS_ONE[q].reshape(-1, 256) * d).reshape(n)


def _deq_q1_0(raw, n):
    # block_q1_0 { f16 d; uint8 qs[16]; }: element j is bit j%8 of qs[j/8]; y = d where it is
    # set, -d where it is clear (a negation: a NaN's sign flips too).
    b = _blocks(raw, n, 128, 18, "Q1_0")
    d = _half(b, 0)
    clear = 1 - np.unpackbits(b[:, 2:18], axis=1, bitorder="little").astype(np.uint32)
    y = np.repeat(d, 128, axis=1)
    y.view(np.uint32)[...] ^= clear << np.uint32(31)
    return y.reshape(n)


def _deq_q2_0(raw, n):
    # block_q2_0 { f16 d; uint8 qs[16]; }: element j is bits 2(j%4), 2(j%4)+1 of qs[j/4];
    # y = (code - 1)*d.
    b = _blocks(raw, n, 64, 18, "Q2_0")
    d = _half(b, 0)
    q = (b[:, 2:18, None] >> _SHIFT_2BIT) & 3
    return (_MINUS_ONE[q].reshape(-1, 64) * d).reshape(n)


# ---- the lattice (IQ1-IQ3) formats ----
# Each 8 elements are a grid entry's magnitudes times a sub-block factor, then signed: ggml
# writes y = db * grid[j] * (sign ? -1.f : 1.f), and its compiler turns the last factor into a
# sign flip (a NaN's sign flips as well), so the sign bits are XORed into the rounded product.


def _sign_masks():
    """[256, 8] uint32: for a sign byte, bit j -> the float32 sign bit of element j."""
    s = np.arange(256, dtype=np.uint32)[:, None] >> np.arange(8, dtype=np.uint32)
    return (s & 1) << np.uint32(31)


_SIGN_MASKS = _sign_masks()
# ksigns_iq2xs: sign pattern s7 of 7 bits, the eighth bit making the count of minus signs even.
KSIGNS_IQ2XS = np.array([s | (bin(s).count("1") & 1) << 7 for s in range(128)], dtype=np.uint8)
_SHIFT7 = 7 * np.arange(4, dtype=np.uint32)  # sign pattern l of a word at bits 7l to 7l+6

IQ1S_DELTA = np.float32(0.125)  # ggml's IQ1S_DELTA and IQ1M_DELTA
IQ1M_DELTA = np.float32(0.125)
_IQ1_VALUES = {}  # delta -> [2, 2048, 8] float32: grid + delta, grid - delta


def _iq1_values(delta):
    if delta not in _IQ1_VALUES:
        g = _levels("iq1s_grid", 8, signed=True)
        _IQ1_VALUES[delta] = np.stack([g + delta, g - delta])  # exact: small integers +- 1/8
    return _IQ1_VALUES[delta]


def _signed(y, signs):
    """y [..., 8] float32 with element j's sign flipped where bit j of signs [...] is set."""
    y.view(np.uint32)[...] ^= _SIGN_MASKS[signs]
    return y


def _iq2_factor(d, s):
    """An IQ2 sub-block factor: d*(0.5 + s)*0.25, rounded after each product, as ggml."""
    return (d * (np.float32(0.5) + s.astype(np.float32))) * np.float32(0.25)


def _deq_iq2_xxs(raw, n):
    # block_iq2_xxs { f16 d; uint16 qs[32]; }: per 32 elements two words: four bytes indexing
    # iq2xxs_grid, then four 7-bit sign patterns (bits 7l..7l+6) under a 4-bit scale (28-31).
    b = _blocks(raw, n, 256, 66, "IQ2_XXS")
    d = _half(b, 0)
    idx = b[:, 2:66].reshape(-1, 8, 8)[:, :, 0:4]
    aux = b[:, 2:66].copy().view("<u4").reshape(-1, 8, 2)[:, :, 1]
    db = _iq2_factor(d, aux >> 28)
    y = db[:, :, None, None] * _levels("iq2xxs_grid", 8)[idx]
    return _signed(y, KSIGNS_IQ2XS[(aux[:, :, None] >> _SHIFT7) & 127]).reshape(n)


def _deq_iq2_xs(raw, n):
    # block_iq2_xs { f16 d; uint16 qs[32]; uint8 scales[8]; }: each word a 9-bit index into
    # iq2xs_grid under a 7-bit sign pattern; scale byte ib: low nibble for the sub-block's first
    # 16 elements, high nibble for the rest.
    b = _blocks(raw, n, 256, 74, "IQ2_XS")
    d = _half(b, 0)
    q = b[:, 2:66].copy().view("<u2").reshape(-1, 8, 4)
    sc = b[:, 66:74]
    db = _iq2_factor(d[:, :, None], np.stack([sc & 0x0F, sc >> 4], axis=2))[:, :, [0, 0, 1, 1]]
    y = db[..., None] * _levels("iq2xs_grid", 8)[q & 511]
    return _signed(y, KSIGNS_IQ2XS[q >> 9]).reshape(n)


def _deq_iq2_s(raw, n):
    # block_iq2_s { f16 d; uint8 qs[64]; uint8 qh[8]; uint8 scales[8]; }: qs[0:32] the low 8
    # bits of the 10-bit indices into iq2s_grid, qs[32:64] a sign byte per 8 elements, qh[ib]
    # bits 2l, 2l+1 the high bits of index 4ib + l; scales as IQ2_XS's.
    b = _blocks(raw, n, 256, 82, "IQ2_S")
    d = _half(b, 0)
    lo = b[:, 2:34].reshape(-1, 8, 4).astype(np.uint16)
    hi = (b[:, 66:74, None].astype(np.uint16) >> (2 * np.arange(4, dtype=np.uint16))) & 3
    sc = b[:, 74:82]
    db = _iq2_factor(d[:, :, None], np.stack([sc & 0x0F, sc >> 4], axis=2))[:, :, [0, 0, 1, 1]]
    y = db[..., None] * _levels("iq2s_grid", 8)[lo | (hi << 8)]
    return _signed(y, b[:, 34:66].reshape(-1, 8, 4)).reshape(n)


def _deq_iq3_xxs(raw, n):
    # block_iq3_xxs { f16 d; uint8 qs[96]; }: qs[0:64] index iq3xxs_grid (4 elements each, in
    # element order), then per 32 elements a word of four 7-bit sign patterns (one per 8) under
    # a 4-bit scale: factor d*(0.5 + s)*0.5.
    b = _blocks(raw, n, 256, 98, "IQ3_XXS")
    d = _half(b, 0)
    aux = b[:, 66:98].copy().view("<u4")
    db = (d * (np.float32(0.5) + (aux >> 28).astype(np.float32))) * np.float32(0.5)
    y = db[:, :, None, None] * _levels("iq3xxs_grid", 4)[b[:, 2:66]].reshape(-1, 8, 4, 8)
    return _signed(y, KSIGNS_IQ2XS[(aux[:, :, None] >> _SHIFT7) & 127]).reshape(n)


def _deq_iq3_s(raw, n):
    # block_iq3_s { f16 d; uint8 qs[64]; uint8 qh[8]; uint8 signs[32]; uint8 scales[4]; }: qs
    # the low 8 bits of the 9-bit indices into iq3s_grid (4 elements each), bit k of qh[ib] the
    # ninth bit of index 8ib + k, a sign byte per 8 elements, a 4-bit scale s per 32 (low nibble
    # for even sub-blocks): factor d*(1 + 2s).
    b = _blocks(raw, n, 256, 110, "IQ3_S")
    d = _half(b, 0)
    idx = b[:, 2:66].astype(np.uint16) | (np.unpackbits(b[:, 66:74], axis=1, bitorder="little").astype(np.uint16) << 8)
    sc = b[:, 106:110]
    s = np.stack([sc & 0x0F, sc >> 4], axis=2).reshape(-1, 8).astype(np.int16)
    db = d * (1 + 2 * s).astype(np.float32)
    y = db[:, :, None, None] * _levels("iq3s_grid", 4)[idx].reshape(-1, 8, 4, 8)
    return _signed(y, b[:, 74:106].reshape(-1, 8, 4)).reshape(n)


def _deq_iq1_s(raw, n):
    # block_iq1_s { f16 d; uint8 qs[32]; uint16 qh[8]; }: qs the low 8 bits of the 11-bit
    # indices into iq1s_grid (8 int8s each); qh[ib]: bits 3l..3l+2 the high bits of index
    # 4ib + l, bits 12-14 a scale s (factor d*(2s + 1)), bit 15 the delta's sign;
    # y = factor * (grid + delta).
    b = _blocks(raw, n, 256, 50, "IQ1_S")
    d = _half(b, 0)
    qh = b[:, 34:50].copy().view("<u2")
    dl = d * (2 * ((qh >> 12) & 7) + 1).astype(np.float32)
    idx = b[:, 2:34].reshape(-1, 8, 4).astype(np.uint16) | (((qh[:, :, None] >> (3 * np.arange(4, dtype=np.uint16))) & 7) << 8)
    vals = _iq1_values(IQ1S_DELTA)[(qh >> 15)[:, :, None], idx]
    return (dl[:, :, None, None] * vals).reshape(n)


def _deq_iq1_m(raw, n):
    # block_iq1_m { uint8 qs[32]; uint8 qh[16]; uint8 scales[8]; }: qs as IQ1_S's; a nibble of
    # qh per index (nibble l%2 of qh[2ib + l/2]): bits 0-2 its high bits, bit 3 the delta's
    # sign; the scales are four words of 3-bit scales (one per 16 elements, word ib/2 bits
    # 6(ib%2) + 3h) whose top nibbles together are the f16 d (word k's in bits 4k..4k+3).
    b = _blocks(raw, n, 256, 56, "IQ1_M")
    sc = b[:, 48:56].copy().view("<u2")
    h = (sc[:, 0] >> 12) | ((sc[:, 1] >> 8) & 0x00F0) | ((sc[:, 2] >> 4) & 0x0F00) | (sc[:, 3] & 0xF000)
    d = f16_to_f32(h)[:, None, None]
    s = sc[:, [0, 0, 1, 1, 2, 2, 3, 3]] >> np.array([0, 6] * 4, dtype=np.uint16)
    dl = d * (2 * np.stack([s & 7, (s >> 3) & 7], axis=2) + 1).astype(np.float32)
    qh = b[:, 32:48].reshape(-1, 8, 2)
    nib = np.stack([qh & 0x0F, qh >> 4], axis=3).reshape(-1, 8, 4)
    idx = b[:, 0:32].reshape(-1, 8, 4).astype(np.uint16) | ((nib & 7).astype(np.uint16) << 8)
    vals = _iq1_values(IQ1M_DELTA)[nib >> 3, idx]
    return (dl[:, :, [0, 0, 1, 1], None] * vals).reshape(n)


DEQUANTIZERS = {
    0: _deq_f32, 1: _deq_f16, 30: _deq_bf16, 8: _deq_q8_0, 2: _deq_q4_0,
    12: _deq_q4_k, 13: _deq_q5_k, 14: _deq_q6_k, 10: _deq_q2_k, 11: _deq_q3_k,
    3: _deq_q4_1, 6: _deq_q5_0, 7: _deq_q5_1, 20: _deq_iq4_nl, 23: _deq_iq4_xs, 39: _deq_mxfp4,
    40: _deq_nvfp4, 34: _deq_tq1_0, 35: _deq_tq2_0, 41: _deq_q1_0, 42: _deq_q2_0,
    16: _deq_iq2_xxs, 17: _deq_iq2_xs, 22: _deq_iq2_s, 18: _deq_iq3_xxs, 21: _deq_iq3_s,
    19: _deq_iq1_s, 29: _deq_iq1_m,
}

# The types whose dequantizer reads a table out of libggml-base.so (ggml_tables.py).
NEEDS_LIBGGML = {"IQ4_NL", "IQ4_XS", "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ3_XXS", "IQ3_S", "IQ1_S", "IQ1_M"}


def dequantize(ggml_type, raw, n):
    """n float32 elements from the raw bytes of a ggml_type tensor (whole blocks)."""
    if ggml_type not in DEQUANTIZERS:
        name = GGML_TYPES.get(ggml_type, ("type %d" % ggml_type,))[0]
        raise GGUFError("dequantize: %s is not supported" % name)
    # Infinite and NaN results are ggml's too (an infinite or NaN scale, MXFP4's 12 * 2^127):
    # numpy's warnings about them are noise.
    with np.errstate(over="ignore", invalid="ignore"):
        return DEQUANTIZERS[ggml_type](raw, n)


# ---------------------------------------------------------------------------------------------
# Command line.


def _jsonable(v):
    if isinstance(v, tuple):  # array: (element type, values)
        etype, vals = v
        out = {"array_of": VALUE_TYPE_NAMES.get(etype, str(etype)), "len": len(vals)}
        if len(vals) <= 16:
            out["values"] = [_jsonable(x) for x in (vals.tolist() if isinstance(vals, np.ndarray) else vals)]
        return out
    if isinstance(v, float) and (v != v or v in (float("inf"), float("-inf"))):
        return repr(v)
    return v


def _cmd_info(path):
    with GGUFFile(path) as g:
        out = {
            "version": g.version,
            "alignment": g.alignment,
            "data_offset": g.data_offset,
            "metadata": {k: {"type": VALUE_TYPE_NAMES[g.metadata_types[k]], "value": _jsonable(v)}
                         for k, v in g.metadata.items()},
            "tensors": [{"name": t.name, "type": t.type_name, "dims": t.dims,
                         "offset": t.offset, "nbytes": t.nbytes} for t in g.tensors.values()],
        }
    json.dump(out, sys.stdout, indent=1)
    sys.stdout.write("\n")


def _cmd_dequant(args):
    if not args or len(args) % 3:
        raise SystemExit("dequant: want TYPE IN OUT triples")
    for i in range(0, len(args), 3):
        tname, src, dst = args[i:i + 3]
        if tname not in TYPE_BY_NAME:
            raise SystemExit("dequant: unknown ggml type %r" % tname)
        tid = TYPE_BY_NAME[tname]
        raw = np.fromfile(src, dtype=np.uint8)
        _, blk, size = GGML_TYPES[tid]
        if raw.size % size:
            raise SystemExit("dequant: %s: %d bytes is not a whole number of %d-byte %s blocks"
                             % (src, raw.size, size, tname))
        dequantize(tid, raw, raw.size // size * blk).astype("<f4").tofile(dst)


def _cmd_dump(path, dst):
    with GGUFFile(path) as g, open(dst, "wb") as f:
        for name in g.tensors:
            f.write(g.tensor(name).astype("<f4").tobytes())


def main(argv):
    if len(argv) == 2 and argv[0] == "info":
        _cmd_info(argv[1])
    elif len(argv) == 3 and argv[0] == "dump":
        _cmd_dump(argv[1], argv[2])
    elif argv and argv[0] == "dequant":
        _cmd_dequant(argv[1:])
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    try:
        main(sys.argv[1:])
    except GGUFError as e:
        sys.stderr.write("gguf_reader: %s\n" % e)
        sys.exit(1)
