#!/usr/bin/env python3
"""Writes the fuzzers' seed corpora (tests/fuzz/corpus/): a few tiny valid files of each
format and a few broken ones, each broken in one way the readers must refuse. Standard
library only, so the bytes are exactly what is written here.

  python3 tests/fuzz/make_corpus.py [tests/fuzz/corpus]
"""
import json
import os
import struct
import sys


def safetensors(entries, metadata=None, pad=True):
    """entries: (name, dtype, shape, raw bytes); offsets follow the order given."""
    header, offset = {}, 0
    if metadata:
        header["__metadata__"] = metadata
    for name, dtype, shape, raw in entries:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(raw)]}
        offset += len(raw)
    text = json.dumps(header, separators=(",", ":")).encode()
    if pad:
        text += b" " * ((8 - len(text) % 8) % 8)
    return struct.pack("<Q", len(text)) + text + b"".join(e[3] for e in entries)


def raw_header(text, payload=b""):
    return struct.pack("<Q", len(text)) + text + payload


def npy(descr, shape, raw, fortran=False, major=1):
    dims = ", ".join(str(s) for s in shape) + ("," if len(shape) == 1 else "")
    header = "{'descr': '%s', 'fortran_order': %s, 'shape': (%s), }" % (descr, fortran, dims)
    prefix = 10 if major == 1 else 12
    header += " " * ((64 - (prefix + len(header) + 1) % 64) % 64) + "\n"
    length = struct.pack("<H" if major == 1 else "<I", len(header))
    return b"\x93NUMPY" + bytes([major, 0]) + length + header.encode() + raw


def f32(*values):
    return struct.pack("<%df" % len(values), *values)


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "corpus")
    st = {
        "valid_f32.safetensors": safetensors([("w", "F32", [2, 3], f32(1, 2, 3, 4, 5, 6))],
                                             {"format": "pt"}),
        "valid_mixed.safetensors": safetensors([
            ("a.bias", "F16", [2], b"\x00\x3c\x00\xc0"),
            ("b.num_batches_tracked", "I64", [], struct.pack("<q", 7)),
            ("c.empty", "F32", [0, 4], b""),
            ("d.mask", "BOOL", [3], b"\x01\x00\x01"),
            ("e.half", "BF16", [1, 1], b"\x80\x3f")]),
        "valid_empty.safetensors": safetensors([]),
        "bad_length.safetensors": struct.pack("<Q", 1 << 40) + b"{}",
        "bad_json.safetensors": raw_header(b'{"w":{"dtype":"F32",', b"\0" * 8),
        "bad_dtype.safetensors": safetensors([("w", "F128", [1], b"\0" * 16)]),
        "bad_overlap.safetensors": raw_header(
            b'{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},'
            b'"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}}', b"\0" * 12),
        "bad_size.safetensors": raw_header(
            b'{"w":{"dtype":"F64","shape":[2,2],"data_offsets":[0,16]}}', b"\0" * 16),
    }
    np_ = {
        "valid_f4.npy": npy("<f4", [2, 3], f32(1, 2, 3, 4, 5, 6)),
        "valid_i8_v2.npy": npy("<i8", [2], struct.pack("<2q", -1, 5), major=2),
        "valid_scalar_u1.npy": npy("|u1", [], b"\x2a"),
        "valid_empty_b1.npy": npy("|b1", [0, 3], b""),
        "bad_magic.npy": b"\x93NUMPZ\x01\x00" + npy("<f4", [1], f32(1))[8:],
        "bad_fortran.npy": npy("<f4", [2, 2], f32(1, 2, 3, 4), fortran=True),
        "bad_descr.npy": npy(">f4", [1], b"\0\0\0\1"),
        "bad_truncated.npy": npy("<f8", [4], struct.pack("<3d", 1, 2, 3)),
        "bad_header_length.npy": b"\x93NUMPY\x01\x00\xff\x7f{'descr': '<f4'",
    }
    for folder, files in (("safetensors", st), ("npy", np_)):
        os.makedirs(os.path.join(root, folder), exist_ok=True)
        for name, data in files.items():
            with open(os.path.join(root, folder, name), "wb") as out:
                out.write(data)


if __name__ == "__main__":
    main()
