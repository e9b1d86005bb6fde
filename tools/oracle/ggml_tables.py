"""The constant tables of ggml's lattice and non-linear weight types, read out of libggml-base.so.

The IQ types' grids (iq2xxs_grid, iq2xs_grid, iq2s_grid, iq3xxs_grid, iq3s_grid, iq1s_grid) and
IQ4_NL's levels (kvalues_iq4nl) have no closed form: they are points chosen when the formats
were designed. Rather than carrying a copy, the oracle reads them at run time out of the pinned
libggml-base.so. They are static (file-local) arrays there, so they are not in the dynamic
symbol table: this module finds each one's address and size in the library's ELF symbol table
(.symtab), loads the library with ctypes, and copies the bytes out of the loaded image (the load
address is that of an exported function, dequantize_row_q4_0, less its own symbol value). Every
size is checked against the table's shape.

The tables that do have a definition are computed from it by gguf_reader (ksigns_iq2xs: seven
sign bits and an eighth for even parity; the E2M1 levels of MXFP4 and NVFP4); ggml_check.py
--tables compares those with the library's copies (ksigns_iq2xs, kvalues_fp4), read here too.

Which library: use_library(path), else $TROCHILUS_LIBGGML_BASE, else the npm package
tools/deps.sh installs under $TROCHILUS_DEPS (default: the repository's .deps). Nothing here is
imported or loaded until a table is asked for, so gguf_reader works for every other type without
the library.
"""

import ctypes
import os
import struct

import numpy as np

LIBRARY_ENV = "TROCHILUS_LIBGGML_BASE"
NPM_PATH = ("npm", "node_modules", "@node-llama-cpp", "linux-x64", "bins", "linux-x64", "libggml-base.so")

# name -> (element dtype, shape): the C declarations in ggml-common.h.
TABLES = {
    "iq2xxs_grid": ("<u8", (256,)),
    "iq2xs_grid": ("<u8", (512,)),
    "iq2s_grid": ("<u8", (1024,)),
    "iq3xxs_grid": ("<u4", (256,)),
    "iq3s_grid": ("<u4", (512,)),
    "iq1s_grid": ("<u8", (2048,)),
    "kvalues_iq4nl": ("i1", (16,)),
    "ksigns_iq2xs": ("u1", (128,)),
    "kvalues_fp4": ("i1", (16,)),  # ggml's kvalues_mxfp4: the doubled E2M1 levels
}

_ANCHOR = "dequantize_row_q4_0"  # an exported function, to find where the library was loaded


class TablesError(RuntimeError):
    """libggml-base.so is missing, or does not hold a table as expected."""


_path = None
_cache = {}


def use_library(path):
    """Read the tables from this libggml-base.so (ggml_check passes the one it compares with)."""
    global _path
    if path != _path:
        _path = path
        _cache.clear()


def library_path():
    if _path:
        return _path
    if os.environ.get(LIBRARY_ENV):
        return os.environ[LIBRARY_ENV]
    deps = os.environ.get("TROCHILUS_DEPS") or os.path.join(
        os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, ".deps")
    return os.path.normpath(os.path.join(deps, *NPM_PATH))


def _elf_symbols(path, wanted):
    """{name: [(value, size, type)]} of the symbols named in wanted, from the ELF64 .symtab."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise TablesError("%s is not a little-endian 64-bit ELF file" % path)
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    if shentsize != 64 or shoff + 64 * shnum > len(data):
        raise TablesError("%s: damaged section header table" % path)
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + 64 * i) for i in range(shnum)]
    symtabs = [s for s in sections if s[1] == 2]  # SHT_SYMTAB
    if not symtabs:
        raise TablesError("%s has no .symtab (stripped?): the IQ grids cannot be found in it" % path)
    _, _, _, _, off, size, link, _, _, entsize = symtabs[0]
    if entsize != 24 or link >= shnum or off + size > len(data):
        raise TablesError("%s: damaged .symtab" % path)
    stroff, strsize = sections[link][4], sections[link][5]
    strtab = data[stroff:stroff + strsize]
    syms = np.frombuffer(data, dtype=np.dtype([("name", "<u4"), ("info", "u1"), ("other", "u1"),
                                                ("shndx", "<u2"), ("value", "<u8"), ("size", "<u8")]),
                         count=size // 24, offset=off)
    found = {}
    for s in syms:
        end = strtab.find(b"\0", s["name"])
        name = strtab[s["name"]:end].decode("ascii", "replace")
        if name in wanted and s["shndx"] != 0:
            found.setdefault(name, []).append((int(s["value"]), int(s["size"]), int(s["info"]) & 0xF))
    return found


def _load():
    path = library_path()
    if not os.path.exists(path):
        raise TablesError("libggml-base.so not found at %s: the IQ grids and IQ4_NL's levels are "
                          "read out of it (run tools/deps.sh test, or set %s)" % (path, LIBRARY_ENV))
    syms = _elf_symbols(path, set(TABLES) | {_ANCHOR})
    lib = ctypes.CDLL(path)
    if _ANCHOR not in syms:
        raise TablesError("%s: no symbol %s" % (path, _ANCHOR))
    base = ctypes.cast(getattr(lib, _ANCHOR), ctypes.c_void_p).value - syms[_ANCHOR][0][0]
    out = {}
    for name, (dtype, shape) in TABLES.items():
        want = int(np.prod(shape)) * np.dtype(dtype).itemsize
        entries = syms.get(name)
        if not entries:
            raise TablesError("%s: no symbol %s" % (path, name))
        copies = set()
        for value, size, kind in entries:
            if kind != 1 or size != want:  # STT_OBJECT of the table's size
                raise TablesError("%s: %s is %d bytes of kind %d, want a %d-byte object"
                                  % (path, name, size, kind, want))
            copies.add(ctypes.string_at(base + value, size))
        if len(copies) != 1:
            raise TablesError("%s: the %d copies of %s differ" % (path, len(entries), name))
        arr = np.frombuffer(copies.pop(), dtype=dtype).reshape(shape).copy()
        arr.setflags(write=False)
        out[name] = arr
    return out


def table(name):
    """One of TABLES as a read-only numpy array of its C element type."""
    if not _cache:
        _cache.update(_load())
    return _cache[name]
