#!/usr/bin/env python3
"""Writes tests/fixtures/rnn/{lstm,gru}.txt: a seeded torch.nn.LSTM / torch.nn.GRU
(input 3, hidden 4, 2 layers, bidirectional) run in float64 on a ragged batch packed with
pack_padded_sequence, read by tests/models/test_rnn_fixtures.cpp.

Format: one `key value value ...` line per field, float64 values in their shortest round-trip form,
tensors flattened row-major:
  config input_size hidden_size num_layers bidirectional     shape T N     lengths ...
  param.<name> ...        every parameter under its torch state_dict name
  input [T, N, in]   h0 [L*D, N, H]   c0 (LSTM)
  w [T, N, D*H]   wh [L*D, N, H]   wc (LSTM)      the loss weights
  output [T, N, D*H] (pad_packed_sequence, zeros at padded frames)   h_n   c_n (LSTM)
  grad.input  grad.h0  grad.c0 (LSTM)  grad.<name> ...
      gradients of L = sum(output * w) + sum(h_n * wh) [+ sum(c_n * wc)]

Run with /usr/bin/python3 tools/make_rnn_fixtures.py from the repository root.
"""
import os

import torch
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures", "rnn")
INPUT, HIDDEN, LAYERS, T = 3, 4, 2, 5
LENGTHS = [5, 3, 1]


def numbers(t):
    return " ".join(repr(float(v)) for v in t.detach().flatten().tolist())


def write_case(name, kind, seed):
    torch.manual_seed(seed)
    module = kind(INPUT, HIDDEN, LAYERS, bidirectional=True).double()
    is_lstm = kind is torch.nn.LSTM
    N, D = len(LENGTHS), 2
    g = torch.Generator().manual_seed(seed + 1)
    x = torch.randn(T, N, INPUT, generator=g, dtype=torch.float64).requires_grad_(True)
    h0 = torch.randn(LAYERS * D, N, HIDDEN, generator=g, dtype=torch.float64).requires_grad_(True)
    c0 = torch.randn(LAYERS * D, N, HIDDEN, generator=g, dtype=torch.float64).requires_grad_(True)
    w = torch.randn(T, N, D * HIDDEN, generator=g, dtype=torch.float64)
    wh = torch.randn(LAYERS * D, N, HIDDEN, generator=g, dtype=torch.float64)
    wc = torch.randn(LAYERS * D, N, HIDDEN, generator=g, dtype=torch.float64)

    packed = pack_padded_sequence(x, torch.tensor(LENGTHS), enforce_sorted=False)
    if is_lstm:
        out_packed, (h_n, c_n) = module(packed, (h0, c0))
    else:
        out_packed, h_n = module(packed, h0)
    output, _ = pad_packed_sequence(out_packed, total_length=T)
    loss = (output * w).sum() + (h_n * wh).sum()
    if is_lstm:
        loss = loss + (c_n * wc).sum()
    loss.backward()

    lines = [
        f"config {INPUT} {HIDDEN} {LAYERS} 1",
        f"shape {T} {N}",
        "lengths " + " ".join(str(v) for v in LENGTHS),
    ]
    for pname, p in module.named_parameters():
        lines.append(f"param.{pname} " + numbers(p))
    lines += ["input " + numbers(x), "h0 " + numbers(h0)]
    if is_lstm:
        lines.append("c0 " + numbers(c0))
    lines += ["w " + numbers(w), "wh " + numbers(wh)]
    if is_lstm:
        lines.append("wc " + numbers(wc))
    lines += ["output " + numbers(output), "h_n " + numbers(h_n)]
    if is_lstm:
        lines.append("c_n " + numbers(c_n))
    lines += ["grad.input " + numbers(x.grad), "grad.h0 " + numbers(h0.grad)]
    if is_lstm:
        lines.append("grad.c0 " + numbers(c0.grad))
    for pname, p in module.named_parameters():
        lines.append(f"grad.{pname} " + numbers(p.grad))
    with open(os.path.join(OUT, name + ".txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    write_case("lstm", torch.nn.LSTM, 7)
    write_case("gru", torch.nn.GRU, 11)
