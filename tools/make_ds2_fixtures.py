#!/usr/bin/env python3
"""Parity fixtures for sonata's DeepSpeech2 (models/ds2) from PyTorch (run with
/usr/bin/python3), read by tests/models/test_ds2_parity.cpp:

  ds2_small.state_dict.txt  names, shapes and dtypes of bench/peer_torch.py's
                            DS2-small (the class below is a verbatim copy of it)
  input.npy [B, 1, T, F] (padded frames are 0), input_lengths.npy, targets.npy (padded
  [B, S]), target_lengths.npy: one short ragged batch shared by every case
  <case>.weights.safetensors  the case's state_dict, float32 values (exactly representable,
                              so the float64 runs start from the very same numbers)
  <case>.train_f64.safetensors, <case>.train_f32.safetensors  one train-mode step in that
      precision: log_probs, output_lengths, loss (CTC, mean, blank 0), grad.<param>, and
      the buffers after the step (the f32 file leaves out the two big conv weights'
      gradients, ~1 MB; tests check sonata's f32 run against the f64 file as well)
  <case>.eval_f64.safetensors  log_probs, output_lengths, loss in eval mode

Cases: "lstm" (the default architecture narrowed: 16 mels, hidden 32, 2 layers) and
"gru_sum_bn" (GRU, directions summed, sequence-wise BatchNorm before RNN layers 1 and 2).
The second case shares the first one's two big conv weights and leaves their gradients out
of its files (they are ~1 MB each and exercise the same code as the first case's).

The reference is independent of sonata's ragged RNN: it packs the conv features with
pack_padded_sequence(lengths, enforce_sorted=False) and unpacks them with
pad_packed_sequence, as deepspeech.pytorch does. The convs run over the padded batch.

  /usr/bin/python3 tools/make_ds2_fixtures.py tests/fixtures/ds2
"""
import os
import sys

import numpy as np
import torch
import torch.nn as nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

sys.path.insert(0, os.path.dirname(__file__))
from convert_torch_weights import save_safetensors  # noqa: E402

CONV = [  # (kernel, stride, padding) along (time, frequency), as models/ds2.cpp
    ((11, 41), (2, 2), (5, 20)),
    ((11, 21), (1, 2), (5, 10)),
]
CHANNELS = 32
BIG_CONV_WEIGHTS = ["conv.0.weight", "conv.3.weight"]

INPUT_LENGTHS = [40, 33, 27]
TARGETS = [[3, 3, 7, 12, 12, 5], [1, 2, 2, 2], [28, 4, 4, 9, 1]]

CASES = {
    "lstm": dict(num_mels=16, num_classes=29, hidden=32, layers=2, rnn="lstm", merge="concat",
                 seq_batch_norm=False),
    "gru_sum_bn": dict(num_mels=16, num_classes=29, hidden=24, layers=3, rnn="gru",
                       merge="sum", seq_batch_norm=True),
}


class PeerDS2(nn.Module):
    """bench/peer_torch.py's DS2-small, copied as written there."""

    def __init__(s):
        super().__init__()
        s.conv = nn.Sequential(
            nn.Conv2d(1, 32, (11, 41), stride=(2, 2), padding=(5, 20)), nn.BatchNorm2d(32), nn.Hardtanh(0, 20),
            nn.Conv2d(32, 32, (11, 21), stride=(1, 2), padding=(5, 10)), nn.BatchNorm2d(32), nn.Hardtanh(0, 20))
        s.rnn = nn.LSTM(32 * 20, 256, 3, bidirectional=True)
        s.fc = nn.Linear(512, 29)


def conv_out(size, kernel, stride, padding):
    return (size + 2 * padding - (kernel - 1) - 1) // stride + 1  # floor, as torch


class RnnLayer(nn.Module):
    """One layer when layers are separate (deepspeech.pytorch's BatchRNN): optional
    sequence-wise BatchNorm1d over the input features, the RNN, directions summed or
    concatenated."""

    def __init__(self, kind, inputs, hidden, batch_norm):
        super().__init__()
        if batch_norm:
            self.bn = nn.BatchNorm1d(inputs)
        self.rnn = kind(inputs, hidden, 1, bidirectional=True)


class DS2(nn.Module):
    def __init__(self, num_mels, num_classes, hidden, layers, rnn, merge, seq_batch_norm):
        super().__init__()
        self.merge = merge
        self.conv = nn.Sequential(
            nn.Conv2d(1, CHANNELS, CONV[0][0], stride=CONV[0][1], padding=CONV[0][2]),
            nn.BatchNorm2d(CHANNELS), nn.Hardtanh(0, 20),
            nn.Conv2d(CHANNELS, CHANNELS, CONV[1][0], stride=CONV[1][1], padding=CONV[1][2]),
            nn.BatchNorm2d(CHANNELS), nn.Hardtanh(0, 20))
        freq = num_mels
        for kernel, stride, padding in CONV:
            freq = conv_out(freq, kernel[1], stride[1], padding[1])
        kind = nn.LSTM if rnn == "lstm" else nn.GRU
        self.layered = seq_batch_norm or merge == "sum"
        if self.layered:
            directions = 1 if merge == "sum" else 2
            self.rnns = nn.ModuleList(
                RnnLayer(kind, CHANNELS * freq if k == 0 else hidden * directions, hidden,
                         seq_batch_norm and k > 0) for k in range(layers))
        else:
            self.rnn = kind(CHANNELS * freq, hidden, layers, bidirectional=True)
        self.fc = nn.Linear(hidden * (1 if merge == "sum" else 2), num_classes)

    def output_lengths(self, lengths):
        for kernel, stride, padding in CONV:
            lengths = conv_out(lengths, kernel[0], stride[0], padding[0])
        return lengths

    def forward(self, x, lengths):
        x = self.conv(x)
        b, c, t, f = x.shape
        x = x.permute(2, 0, 1, 3).reshape(t, b, c * f)
        out_lengths = self.output_lengths(lengths)
        assert int(out_lengths.max()) == t

        def run(rnn, x):
            packed = pack_padded_sequence(x, out_lengths, enforce_sorted=False)
            y, _ = rnn(packed)
            return pad_packed_sequence(y, total_length=t)[0]

        if not self.layered:
            x = run(self.rnn, x)
        else:
            for layer in self.rnns:
                if hasattr(layer, "bn"):  # SequenceWise: every (frame, sample) is one row
                    x = layer.bn(x.reshape(t * b, -1)).reshape(t, b, -1)
                x = run(layer.rnn, x)
                if self.merge == "sum":
                    x = x.view(t, b, 2, -1).sum(2)
        return self.fc(x).log_softmax(-1), out_lengths


def dump_names(model, path):
    with open(path, "w") as out:
        for name, tensor in model.state_dict().items():
            shape = "x".join(str(s) for s in tensor.shape) or "scalar"
            out.write(f"{name} {shape} {str(tensor.dtype).replace('torch.', '')}\n")


def randomise(model, shared):
    """Weights and BN statistics away from 0/1, rounded to float32 values."""
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, (nn.BatchNorm1d, nn.BatchNorm2d)):
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.2, 0.2)
                m.running_mean.uniform_(-0.5, 0.5)
                m.running_var.uniform_(0.5, 2.0)
            if isinstance(m, nn.Linear):
                m.bias.uniform_(-0.5, 0.5)
        for name, t in model.state_dict().items():
            if name in shared:
                t.copy_(shared[name])
            if t.is_floating_point():
                t.copy_(t.float().double())


def run_step(model, state, dtype, x, train):
    model.load_state_dict(state)
    model = model.to(dtype)
    model.train(train)
    model.zero_grad(set_to_none=True)
    log_probs, out_lengths = model(x.to(dtype), torch.tensor(INPUT_LENGTHS))
    targets = torch.tensor([t + [0] * (max(map(len, TARGETS)) - len(t)) for t in TARGETS])
    loss = nn.CTCLoss(blank=0, reduction="mean", zero_infinity=False)(
        log_probs, targets, out_lengths, torch.tensor([len(t) for t in TARGETS]))
    out = {"log_probs": log_probs, "output_lengths": out_lengths, "loss": loss}
    if train:
        loss.backward()
        for name, p in model.named_parameters():
            out["grad." + name] = p.grad
        for name, b in model.named_buffers():
            out[name] = b
    return {k: v.detach() for k, v in out.items()}


def main():
    folder = sys.argv[1] if len(sys.argv) > 1 else "tests/fixtures/ds2"
    os.makedirs(folder, exist_ok=True)
    dump_names(PeerDS2(), f"{folder}/ds2_small.state_dict.txt")

    g = torch.Generator().manual_seed(1)
    x = torch.randn(len(INPUT_LENGTHS), 1, max(INPUT_LENGTHS), CASES["lstm"]["num_mels"],
                    generator=g, dtype=torch.float64).float().double()
    for n, length in enumerate(INPUT_LENGTHS):
        x[n, :, length:] = 0  # a padded batch, as a loader gives it
    np.save(f"{folder}/input.npy", x.float().numpy())
    np.save(f"{folder}/input_lengths.npy", np.array(INPUT_LENGTHS, dtype=np.int64))
    width = max(map(len, TARGETS))
    np.save(f"{folder}/targets.npy",
            np.array([t + [0] * (width - len(t)) for t in TARGETS], dtype=np.int64))
    np.save(f"{folder}/target_lengths.npy", np.array([len(t) for t in TARGETS], dtype=np.int64))

    shared = {}
    for seed, (case, config) in enumerate(CASES.items()):
        torch.manual_seed(seed)
        model = DS2(**config).double()
        randomise(model, shared)
        state = {k: v.clone() for k, v in model.state_dict().items()}
        leave_out = set()
        if not shared:
            shared = {k: state[k] for k in BIG_CONV_WEIGHTS}
        else:
            leave_out = set(BIG_CONV_WEIGHTS) | {"grad." + k for k in BIG_CONV_WEIGHTS}
        weights = {k: (v.float() if v.is_floating_point() else v) for k, v in state.items()
                   if k not in leave_out}
        save_safetensors(f"{folder}/{case}.weights.safetensors", weights)
        for dtype, suffix in [(torch.float64, "f64"), (torch.float32, "f32")]:
            out = run_step(model, state, dtype, x, True)
            omit = leave_out | ({"grad." + k for k in BIG_CONV_WEIGHTS} if suffix == "f32" else set())
            save_safetensors(f"{folder}/{case}.train_{suffix}.safetensors",
                             {k: v for k, v in out.items() if k not in omit})
        save_safetensors(f"{folder}/{case}.eval_f64.safetensors",
                         run_step(model, state, torch.float64, x, False))


if __name__ == "__main__":
    main()
