#!/usr/bin/env python3
"""Writes tests/fixtures/ctc/*.txt: small CTC cases computed by PyTorch's
torch.nn.functional.ctc_loss (the reference behaviour sonata's ctc_loss matches), read by
tests/ops/test_ctc_fixtures.cpp.

Format: one `key value value ...` line per field, numbers in decimal ("inf", "nan" allowed;
floats written with enough digits to round-trip their dtype):
  dtype f64|f32            reduction none|sum|mean     zero_infinity 0|1     blank b
  shape T N C              layout padded|concatenated  targets_shape d0 [d1]
  log_probs ...            (T*N*C, row-major [T, N, C])
  targets ... input_lengths ... target_lengths ...
  grad_weights ...         the gradient fed to backward: [N] for none, one value otherwise
  loss ...                 ([N] for none, one value otherwise)
  grad ...                 d(loss . grad_weights) / d log_probs, row-major [T, N, C]
f32 cases hold f32 log_probs and PyTorch's f64 results on them, rounded to f32 (see below).

Run with /usr/bin/python3 tools/make_ctc_fixtures.py from the repository root.
"""
import os

import torch
import torch.nn.functional as F

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures", "ctc")


def numbers(values, dtype):
    digits = 17 if dtype == torch.float64 else 9
    out = []
    for v in values:
        v = float(v)
        out.append(repr(v) if v != v or v in (float("inf"), float("-inf")) else f"{v:.{digits}g}")
    return " ".join(out)


def write_case(name, T, C, blank, input_lengths, targets, dtype=torch.float64, reduction="none",
               zero_infinity=False, layout="padded", seed=0):
    g = torch.Generator().manual_seed(seed)
    N = len(input_lengths)
    log_probs = torch.randn(T, N, C, generator=g, dtype=torch.float64).mul(1.5)
    log_probs = log_probs.to(dtype).log_softmax(2).detach()
    # f32 cases: the reference is PyTorch in f64 on the same f32 values, rounded to f32.
    # PyTorch's f32 CPU kernel accumulates in float and drifts (2.5e-4 on the gradient of the
    # 580-frame case); sonata's f32 CPU path accumulates in double, as its f64 one does.
    reference_input = log_probs.double().requires_grad_(True)
    target_lengths = [len(t) for t in targets]
    if layout == "padded":
        width = max(target_lengths + [1]) + 1
        padded = torch.full((N, width), blank, dtype=torch.int64)
        for n, t in enumerate(targets):
            padded[n, : len(t)] = torch.tensor(t, dtype=torch.int64)
        target_tensor = padded
    else:
        target_tensor = torch.tensor([x for t in targets for x in t], dtype=torch.int64)
    loss = F.ctc_loss(reference_input, target_tensor, torch.tensor(input_lengths), torch.tensor(target_lengths),
                      blank=blank, reduction=reduction, zero_infinity=zero_infinity)
    if reduction == "none":
        weights = torch.arange(1, N + 1, dtype=dtype) / N
    else:
        weights = torch.tensor(0.75, dtype=dtype)
    loss.backward(weights.double())
    loss, grad = loss.detach().to(dtype), reference_input.grad.to(dtype)
    lines = [
        f"dtype {'f64' if dtype == torch.float64 else 'f32'}",
        f"reduction {reduction}",
        f"zero_infinity {int(zero_infinity)}",
        f"blank {blank}",
        f"shape {T} {N} {C}",
        f"layout {layout}",
        "targets_shape " + " ".join(str(d) for d in target_tensor.shape),
        "log_probs " + numbers(log_probs.flatten().tolist(), dtype),
        "targets " + " ".join(str(int(x)) for x in target_tensor.flatten().tolist()),
        "input_lengths " + " ".join(str(x) for x in input_lengths),
        "target_lengths " + " ".join(str(x) for x in target_lengths),
        "grad_weights " + numbers(weights.flatten().tolist(), dtype),
        "loss " + numbers(loss.flatten().tolist(), dtype),
        "grad " + numbers(grad.flatten().tolist(), dtype),
    ]
    with open(os.path.join(OUT, name + ".txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print(name, loss.flatten().tolist()[:4])


def random_target(g, length, C, blank):
    labels = [c for c in range(C) if c != blank]
    return [labels[int(i)] for i in torch.randint(len(labels), (length,), generator=g)]


def main():
    os.makedirs(OUT, exist_ok=True)
    # Ragged lengths, a repeat ("aa"), an empty target, T_n = 1.
    write_case("ragged_f64_none", 8, 5, 0, [8, 6, 4, 1], [[1, 2, 3], [2, 2], [], [4]], seed=1)
    write_case("concatenated_blank_last_f64_mean", 10, 6, 5, [10, 7, 9], [[0, 1, 1, 4], [3], [2, 0, 2]],
               reduction="mean", layout="concatenated", seed=2)
    write_case("ragged_f32_sum", 9, 5, 0, [9, 5, 7], [[1, 1, 2], [3, 4], []], dtype=torch.float32,
               reduction="sum", seed=3)
    write_case("single_frame_f64_mean", 1, 4, 0, [1, 1], [[2], []], reduction="mean", seed=4)
    # Sample 1 needs 3 + 2 repeats = 5 frames and has 4: +inf, NaN gradient (PyTorch's formula).
    write_case("infeasible_f64_none", 6, 4, 0, [6, 4], [[1, 2], [3, 3, 3]], seed=5)
    write_case("infeasible_zero_infinity_f64_mean", 6, 4, 0, [6, 4, 5], [[1, 2], [3, 3, 3], [1, 1]],
               reduction="mean", zero_infinity=True, seed=6)
    write_case("infeasible_zero_infinity_f32_none", 6, 4, 0, [6, 4], [[1, 2], [3, 3, 3]],
               dtype=torch.float32, zero_infinity=True, layout="concatenated", seed=7)
    # More than 256 labels (cuDNN's limit), C small to keep the file small.
    g = torch.Generator().manual_seed(8)
    write_case("long_260_labels_f64_mean", 600, 5, 0, [600], [random_target(g, 260, 5, 0)],
               reduction="mean", seed=9)
    write_case("long_260_labels_f32_none", 600, 4, 3, [580], [random_target(g, 260, 4, 3)],
               dtype=torch.float32, layout="concatenated", seed=10)


if __name__ == "__main__":
    main()
