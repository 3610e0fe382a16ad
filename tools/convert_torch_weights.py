#!/usr/bin/env python3
"""PyTorch state_dict (.pth / .pt) <-> safetensors, with PyTorch's names kept, using Debian's
python3-torch (run with /usr/bin/python3). No safetensors package is needed: the format is
written and read here directly (8-byte little-endian header length, JSON header, raw data).

  convert_torch_weights.py to-safetensors vgg19_bn.pth vgg19_bn.safetensors
  convert_torch_weights.py to-safetensors --torchvision vgg19_bn out.safetensors  (needs the
      torchvision weights in the local torch cache; nothing is downloaded here)
  convert_torch_weights.py to-torch model.safetensors model.pth
"""
import argparse
import json
import struct
import sys

import numpy as np
import torch

DTYPES = {torch.float16: "F16", torch.bfloat16: "BF16", torch.float32: "F32",
          torch.float64: "F64", torch.int32: "I32", torch.int64: "I64",
          torch.uint8: "U8", torch.bool: "BOOL"}
BACK = {v: k for k, v in DTYPES.items()}


def save_safetensors(path, tensors, metadata=None):
    header, chunks, offset = {}, [], 0
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    for name, t in tensors.items():
        t = t.detach().cpu().contiguous()
        if t.dtype not in DTYPES:
            raise SystemExit(f"{name}: dtype {t.dtype} has no safetensors name here")
        raw = t.view(torch.uint8).numpy().tobytes() if t.dtype == torch.bfloat16 \
            else t.numpy().tobytes()
        header[name] = {"dtype": DTYPES[t.dtype], "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        chunks.append(raw)
        offset += len(raw)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as out:
        out.write(struct.pack("<Q", len(text)))
        out.write(text)
        for raw in chunks:
            out.write(raw)


def load_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    base = 8 + n
    out = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        begin, end = entry["data_offsets"]
        dtype = BACK[entry["dtype"]]
        buf = bytearray(data[base + begin:base + end])
        t = torch.frombuffer(buf, dtype=dtype) if len(buf) else torch.empty(0, dtype=dtype)
        out[name] = t.reshape(entry["shape"]).clone()
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("direction", choices=["to-safetensors", "to-torch"])
    ap.add_argument("source")
    ap.add_argument("target")
    ap.add_argument("--torchvision", action="store_true",
                    help="source names a torchvision model whose pretrained weights are cached")
    a = ap.parse_args()
    if a.direction == "to-safetensors":
        if a.torchvision:
            import torchvision
            state = getattr(torchvision.models, a.source)(weights="DEFAULT").state_dict()
        else:
            state = torch.load(a.source, map_location="cpu")
            if isinstance(state, dict) and "state_dict" in state:
                state = state["state_dict"]
        save_safetensors(a.target, state, {"format": "pt"})
    else:
        torch.save(load_safetensors(a.source), a.target)


if __name__ == "__main__":
    sys.exit(main())
