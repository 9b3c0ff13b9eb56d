"""Minimal safetensors reader and writer (numpy only, no third-party package).

Format, as publicly described:
  - 8 bytes: N, the header length, unsigned 64-bit little-endian;
  - N bytes: a UTF-8 JSON object. Each key is a tensor name mapping to
    {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}, the
    offsets counted in bytes from the start of the data section. An
    optional "__metadata__" key maps to an object of string -> string.
    Writers pad the JSON with spaces so that N is a multiple of 8;
  - the data section: every tensor's bytes, little-endian, row-major,
    laid end to end with no holes or overlaps.

Supported dtypes: F32, F64, I32, I64, U8 (a tiny_gpt checkpoint's tokenizer).

    tensors, meta = read(path)       # dict name -> np.ndarray, dict str -> str
    write(path, tensors, meta=None)  # tensors: dict name -> np.ndarray;
                                     # the dtype comes from the array
                                     # (float32/float64/int32/int64/uint8)
"""

import json
import os
import struct

import numpy as np

DTYPES = {
    "F32": np.dtype("<f4"),
    "F64": np.dtype("<f8"),
    "I32": np.dtype("<i4"),
    "I64": np.dtype("<i8"),
    "U8": np.dtype("u1"),
}
_NAME_OF = {np.dtype(v).newbyteorder("="): k for k, v in DTYPES.items()}


class SafetensorsError(ValueError):
    pass


def dtype_name(arr):
    """The format's dtype name for a numpy array ("F32", ...)."""
    key = arr.dtype.newbyteorder("=")
    if key not in _NAME_OF:
        raise SafetensorsError("unsupported numpy dtype %s (F32/F64/I32/I64/U8 only)" % arr.dtype)
    return _NAME_OF[key]


def read(path):
    """Returns (tensors, metadata). Validates the header against the file:
    dtype, shape/byte-range agreement, offsets in bounds and the tensors
    covering the data section exactly."""
    with open(path, "rb") as f:
        blob = f.read()
    if len(blob) < 8:
        raise SafetensorsError("%s: file shorter than the 8-byte header length" % path)
    (n,) = struct.unpack("<Q", blob[:8])
    if n > len(blob) - 8:
        raise SafetensorsError("%s: header length %d exceeds file size %d" % (path, n, len(blob)))
    try:
        header = json.loads(blob[8:8 + n].decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise SafetensorsError("%s: bad JSON header: %s" % (path, e))
    if not isinstance(header, dict):
        raise SafetensorsError("%s: header is not a JSON object" % path)
    data = memoryview(blob)[8 + n:]

    meta = header.pop("__metadata__", None) or {}
    if not isinstance(meta, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in meta.items()):
        raise SafetensorsError("%s: __metadata__ must map strings to strings" % path)

    tensors = {}
    ranges = []
    for name, info in header.items():
        if not isinstance(info, dict):
            raise SafetensorsError("%s: entry %r is not an object" % (path, name))
        dt = info.get("dtype")
        if dt not in DTYPES:
            raise SafetensorsError("%s: tensor %r has unsupported dtype %r" % (path, name, dt))
        shape = info.get("shape")
        offs = info.get("data_offsets")
        if (not isinstance(shape, list) or not all(isinstance(d, int) and d >= 0 for d in shape)):
            raise SafetensorsError("%s: tensor %r has a bad shape %r" % (path, name, shape))
        if (not isinstance(offs, list) or len(offs) != 2
                or not all(isinstance(o, int) for o in offs)):
            raise SafetensorsError("%s: tensor %r has bad data_offsets %r" % (path, name, offs))
        begin, end = offs
        numel = 1
        for d in shape:
            numel *= d
        nbytes = numel * DTYPES[dt].itemsize
        if not (0 <= begin <= end <= len(data)):
            raise SafetensorsError("%s: tensor %r offsets %r out of the data section (%d bytes)"
                                   % (path, name, offs, len(data)))
        if end - begin != nbytes:
            raise SafetensorsError("%s: tensor %r: shape %r of %s needs %d bytes, offsets give %d"
                                   % (path, name, shape, dt, nbytes, end - begin))
        arr = np.frombuffer(data[begin:end], dtype=DTYPES[dt]).reshape(shape).copy()
        tensors[name] = arr
        ranges.append((begin, end, name))

    pos = 0
    for begin, end, name in sorted(ranges):
        if begin != pos:
            raise SafetensorsError("%s: tensor %r starts at %d, expected %d (hole or overlap)"
                                   % (path, name, begin, pos))
        pos = end
    if pos != len(data):
        raise SafetensorsError("%s: data section has %d bytes, tensors cover %d"
                               % (path, len(data), pos))
    return tensors, dict(meta)


def write(path, tensors, meta=None):
    """Writes tensors (dict name -> numpy array, in the dict's order) and
    string metadata. Written to a temporary file then renamed over path."""
    header = {}
    if meta:
        for k, v in meta.items():
            if not isinstance(k, str) or not isinstance(v, str):
                raise SafetensorsError("metadata must map strings to strings (%r: %r)" % (k, v))
        header["__metadata__"] = dict(meta)
    chunks = []
    pos = 0
    for name, arr in tensors.items():
        if name == "__metadata__":
            raise SafetensorsError("a tensor may not be named __metadata__")
        arr = np.asarray(arr)
        dt = dtype_name(arr)
        raw = np.ascontiguousarray(arr, dtype=DTYPES[dt]).tobytes()
        header[name] = {"dtype": dt, "shape": [int(d) for d in arr.shape],
                        "data_offsets": [pos, pos + len(raw)]}
        chunks.append(raw)
        pos += len(raw)
    hjson = json.dumps(header, separators=(",", ":")).encode("utf-8")
    hjson += b" " * ((-len(hjson)) % 8)
    tmp = "%s.tmp.%d" % (path, os.getpid())
    try:
        with open(tmp, "wb") as f:
            f.write(struct.pack("<Q", len(hjson)))
            f.write(hjson)
            for c in chunks:
                f.write(c)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
