#!/usr/bin/env python3
"""Live parity check of sonata against PyTorch through the probe (run with /usr/bin/python3):
builds the full-size model in PyTorch with seeded random weights, writes its weights, an
input batch and labels, runs `probe` and PyTorch on them in train mode (batch statistics,
dropout 0) and in eval mode, each with the loss and one backward, and compares logits, loss,
every parameter gradient and the BatchNorm buffers. Too large to commit as a fixture
(VGG19_BN is 140M parameters at 16 classes); tests/models/test_vgg_parity.cpp covers the
narrow model.

  /usr/bin/python3 tools/compare_torch.py --probe build/probe [--model vgg19_bn | ds2]
      [--batch 2] [--size 224] [--passes train,eval] [--precisions fp32,fp64] [--workdir DIR]

--model ds2 is the full DeepSpeech2-small of bench/peer_torch.py (80 mels, two
convs with BatchNorm, 3-layer BiLSTM of 256, Linear(512, 29), 5.3M parameters; the probe's
log_probs, output_lengths and CTC loss (mean, blank 0)) on a ragged batch of 4 utterances
(400, 361, 300 and 257 frames, unsorted, zero-padded; targets of 20-40 labels with repeats).
PyTorch packs the conv features with pack_padded_sequence(enforce_sorted=False), as
tests/fixtures/make_ds2.py does (its DS2 class is the model here); sonata runs its own
ragged RNN. --batch and --size apply to vgg19_bn only. (tests/models/test_ds2_parity.cpp
covers the narrow DS2 variants from fixtures.)

Relative error per tensor: max|sonata - torch| / max(max|torch|, tiny).

What is judged. fp64: everything (logits, loss, every gradient, BN buffers) against
--tolerance-fp64; this checks the whole forward and backward. fp32: logits, loss and BN
buffers against --tolerance. fp32 gradients are printed but not judged: at full width a few
pre-ReLU activations lie within fp32 rounding (about 1e-5 at the last stage, in PyTorch as
in sonata) of zero, one implementation's rounding puts one of them on the other side of the
kink, that unit's whole gradient switches on or off, and every gradient before it moves by
~1e-2 relative. Against the fp64 result PyTorch's own fp32 gradients miss by as much. So
with fp64 also run, each fp32 gradient is shown against the fp64 result for both sonata
and PyTorch, which tells a kink (either side, a few tensors) from a real precision loss
(sonata far worse throughout). Prints a table per pass and precision and one JSON line
with every figure; exits 1 when a judged figure exceeds its tolerance.
"""
import argparse
import copy
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from convert_torch_weights import load_safetensors, save_safetensors  # noqa: E402

TINY = 1e-30
TORCH_DTYPES = {"fp32": torch.float32, "fp64": torch.float64}


# ---- models: each is a class with the same five methods, registered in MODELS -------------

class Vgg19Bn:
    """torchvision's vgg19_bn at full width, 16 classes, 3-channel input."""
    num_classes = 16

    def build(self, seed):
        import torchvision
        torch.manual_seed(seed)
        model = torchvision.models.vgg19_bn(num_classes=self.num_classes)
        with torch.no_grad():
            for m in model.modules():
                if isinstance(m, nn.Dropout):
                    m.p = 0.0  # as the probe's --dropout 0: train mode is then deterministic
                if isinstance(m, nn.Conv2d):
                    m.bias.uniform_(-0.1, 0.1)  # torchvision zeroes them; eval mode uses them
                if isinstance(m, nn.BatchNorm2d):  # away from 0/1, as trained statistics are
                    m.weight.uniform_(0.5, 1.5)
                    m.bias.uniform_(-0.2, 0.2)
                    m.running_mean.uniform_(-0.5, 0.5)
                    m.running_var.uniform_(0.5, 2.0)
                if isinstance(m, nn.Linear):
                    m.bias.uniform_(-0.1, 0.1)
        return model

    output = "logits"   # the output compared, as the probe names it
    exact_outputs = ()  # integer outputs that must be equal

    def inputs(self, args, seed):
        """The input batch and the other inputs by probe flag (each goes as --flag FLAG.npy)."""
        g = torch.Generator().manual_seed(seed + 1)
        x = torch.randn(args.batch, 3, args.size, args.size, generator=g)
        y = torch.randint(0, self.num_classes, (args.batch,), generator=g)
        return x, {"labels": y}

    def probe_flags(self):
        return ["--model", "vgg19_bn", "--num-classes", str(self.num_classes),
                "--in-channels", "3", "--dropout", "0"]

    def forward(self, model, x, extra):
        """The outputs by the probe's names, and the loss."""
        logits = model(x)
        return {"logits": logits}, nn.functional.cross_entropy(logits, extra["labels"])

    def zero_by_construction(self, model, train):
        """Gradients that are exactly zero in exact arithmetic, so only noise is compared:
        in train mode a conv's bias is removed again by the BatchNorm's batch mean."""
        if not train:
            return set()
        return {f"grad.features.{i}.bias" for i, m in enumerate(model.features)
                if isinstance(m, nn.Conv2d)}


class Ds2:
    """bench/peer_torch.py's DeepSpeech2-small at full size, as
    tests/fixtures/make_ds2.py builds it for a ragged batch (pack_padded_sequence)."""
    config = dict(num_mels=80, num_classes=29, hidden=256, layers=3, rnn="lstm",
                  merge="concat", seq_batch_norm=False)
    # Unsorted, so that enforce_sorted=False reorders; output frames 181, 200, 129, 150.
    input_lengths = [361, 400, 257, 300]
    target_lengths = [33, 40, 20, 27]
    output = "log_probs"
    exact_outputs = ("output_lengths",)

    def build(self, seed):
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures"))
        import make_ds2 as fixtures
        torch.manual_seed(seed)
        model = fixtures.DS2(**self.config)
        # BN weights and statistics away from 0/1, fc bias in [-0.5, 0.5], values float32.
        fixtures.randomise(model, {})
        return model

    def inputs(self, args, seed):
        g = torch.Generator().manual_seed(seed + 1)
        lengths = self.input_lengths
        x = torch.randn(len(lengths), 1, max(lengths), self.config["num_mels"], generator=g)
        for n, length in enumerate(lengths):
            x[n, :, length:] = 0  # a padded batch, as a loader gives it
        width = max(self.target_lengths)
        targets = torch.zeros(len(lengths), width, dtype=torch.int64)
        for n, length in enumerate(self.target_lengths):
            labels = torch.randint(1, self.config["num_classes"], (length,), generator=g)
            # Repeated labels (CTC needs a blank between them): every fifth one doubles.
            labels[1::5] = labels[0::5][:len(labels[1::5])]
            targets[n, :length] = labels
        return x, {"input-lengths": torch.tensor(lengths, dtype=torch.int64),
                   "targets": targets,
                   "target-lengths": torch.tensor(self.target_lengths, dtype=torch.int64)}

    def probe_flags(self):
        c = self.config
        return ["--model", "ds2", "--num-mels", str(c["num_mels"]),
                "--num-classes", str(c["num_classes"]), "--hidden", str(c["hidden"]),
                "--layers", str(c["layers"]), "--rnn", c["rnn"], "--merge", c["merge"],
                "--reduction", "mean", "--blank", "0"]

    def forward(self, model, x, extra):
        log_probs, output_lengths = model(x, extra["input-lengths"])
        loss = nn.functional.ctc_loss(log_probs, extra["targets"], output_lengths,
                                      extra["target-lengths"], blank=0, reduction="mean",
                                      zero_infinity=False)
        return {"log_probs": log_probs, "output_lengths": output_lengths}, loss

    def zero_by_construction(self, model, train):
        """In train mode each conv's bias is removed again by the BatchNorm after it."""
        if not train:
            return set()
        return {f"grad.conv.{i}.bias" for i, m in enumerate(model.conv)
                if isinstance(m, nn.Conv2d)}


MODELS = {"vgg19_bn": Vgg19Bn, "ds2": Ds2}


# ---- running both sides -------------------------------------------------------------------

def run_torch(case, model, state, x, extra, train):
    """One forward, the loss and one backward, from `state`; named as the probe names them."""
    model.load_state_dict(state)
    model.zero_grad(set_to_none=True)
    model.train(train)
    outputs, loss = case.forward(model, x, extra)
    loss.backward()
    out = {**outputs, "loss": loss}
    for name, p in model.named_parameters():
        out["grad." + name] = p.grad
    for name, b in model.named_buffers():
        out[name] = b
    return {k: v.detach().clone() for k, v in out.items()}


def run_probe(args, case, folder, extra, train, precision):
    result = os.path.join(folder, f"probe_{'train' if train else 'eval'}_{precision}.safetensors")
    command = [args.probe, *case.probe_flags(),
               "--weights", os.path.join(folder, "weights.safetensors"),
               "--input", os.path.join(folder, "x.npy")]
    for flag in extra:
        command += [f"--{flag}", os.path.join(folder, f"{flag}.npy")]
    command += ["--backward", "--device", args.device, "--precision", precision, "--out", result]
    if train:
        command.append("--train")
    print("$ " + " ".join(command), flush=True)
    done = subprocess.run(command)
    if done.returncode != 0:
        raise SystemExit(f"compare_torch: the probe failed (exit {done.returncode})")
    return load_safetensors(result)


# ---- comparing ----------------------------------------------------------------------------

def relative_error(ours, theirs):
    a, b = ours.double(), theirs.double()
    return float((a - b).abs().max()) / max(float(b.abs().max()), TINY) if b.numel() else 0.0


def compare(case, model, ours, theirs, train):
    """Errors of `ours` against `theirs` for one pass: {case.output (logits | log_probs),
    "loss", "grad": {name: err}, "running_mean", "running_var": {name: err},
    "num_batches_tracked_equal", "<exact output>_equal", "zero_grads": {name: (ours, theirs,
    scale)}, "missing": [...]}."""
    missing = sorted(set(theirs) - set(ours))
    zero = case.zero_by_construction(model, train)
    out = case.output
    figures = {out: relative_error(ours[out], theirs[out]) if out not in missing else 0.0,
               "loss": relative_error(ours["loss"], theirs["loss"]),
               "grad": {}, "zero_grads": {}, "running_mean": {}, "running_var": {},
               "num_batches_tracked_equal": True, "missing": missing}
    for name in case.exact_outputs:
        figures[f"{name}_equal"] = name not in missing and bool(
            torch.equal(ours[name].long(), theirs[name].long()))
    for name, t in theirs.items():
        if name in missing or name in (out, "loss", *case.exact_outputs):
            continue
        if name in zero:
            # Noise on both sides; bounded against the gradient of the weight beside it.
            scale = float(theirs[name[:-len("bias")] + "weight"].abs().max())
            figures["zero_grads"][name] = (float(ours[name].abs().max()),
                                           float(t.abs().max()), scale)
        elif name.startswith("grad."):
            figures["grad"][name] = relative_error(ours[name], t)
        elif name.endswith("num_batches_tracked"):
            figures["num_batches_tracked_equal"] &= bool(torch.equal(ours[name].long(), t.long()))
        elif name.endswith("running_mean") or name.endswith("running_var"):
            figures[name.rsplit(".", 1)[1]][name] = relative_error(ours[name], t)
    return figures


def summary(case, figures):
    grads = sorted(figures["grad"].items(), key=lambda kv: -kv[1])
    zero = figures["zero_grads"]

    def worst(d):
        return max(d.values()) if d else 0.0

    return {
        case.output: figures[case.output], "loss": figures["loss"],
        **{f"{n}_equal": figures[f"{n}_equal"] for n in case.exact_outputs},
        "grad_worst5": [[n, e] for n, e in grads[:5]],
        "grad_median": statistics.median(figures["grad"].values()) if grads else 0.0,
        "grad_count": len(grads),
        "running_mean_worst": worst(figures["running_mean"]),
        "running_var_worst": worst(figures["running_var"]),
        "num_batches_tracked_equal": figures["num_batches_tracked_equal"],
        # max over the zero-by-construction gradients of max|g| / max|weight's gradient|
        "zero_grad_ours": max((o / max(s, TINY) for o, _, s in zero.values()), default=0.0),
        "zero_grad_torch": max((t / max(s, TINY) for _, t, s in zero.values()), default=0.0),
        "missing": figures["missing"],
    }


def against_fp64(case, figures):
    """The fp32 gradients' distance from the fp64 result, for one side."""
    grads = figures["grad"]
    name = max(grads, key=grads.get) if grads else ""
    return {case.output: figures[case.output], "grad_median": statistics.median(grads.values())
            if grads else 0.0, "grad_worst": [name, grads.get(name, 0.0)]}


def failures(case, s, tolerance, judge_grads):
    keys = [case.output, "loss", "running_mean_worst", "running_var_worst", "zero_grad_ours"]
    if judge_grads:
        keys.append("grad_median")
    bad = [f"{k} {s[k]:.3g}" for k in keys if s[k] > tolerance]
    if judge_grads:
        bad += [f"{n} {e:.3g}" for n, e in s["grad_worst5"] if e > tolerance]
    if not s["num_batches_tracked_equal"]:
        bad.append("num_batches_tracked differs")
    bad += [f"{n} differs" for n in case.exact_outputs if not s[f"{n}_equal"]]
    if s["missing"]:
        bad.append(f"missing from the probe's output: {', '.join(s['missing'][:5])}")
    return bad


def print_table(case, title, s, tolerance, judge_grads):
    print(f"\n{title} (relative error, tolerance {tolerance:g}"
          f"{'' if judge_grads else '; gradients shown, not judged'})")

    def row(label, value, judged=True, extra=""):
        flag = "  <-- over" if judged and value > tolerance else ""
        print(f"  {label:<50} {value:10.3e}{extra}{flag}")

    truth = s.get("vs_fp64")
    if truth:
        print(f"  {'':<50} {'vs torch':>10}   sonata / torch vs their fp64")
    vs = (lambda k: f"   {truth['sonata'][k]:9.2e} / {truth['torch'][k]:9.2e}") if truth \
        else (lambda k: "")
    row(case.output, s[case.output], extra=vs(case.output))
    row("loss", s["loss"])
    for n, e in s["grad_worst5"]:
        extra = ""
        if truth:
            extra = f"   {truth['grad_errors']['sonata'][n]:9.2e} / " \
                    f"{truth['grad_errors']['torch'][n]:9.2e}"
        row(f"worst grad: {n[5:]}", e, judge_grads, extra)
    row(f"median of {s['grad_count']} grads", s["grad_median"], judge_grads, vs("grad_median"))
    if truth:
        for side in ("sonata", "torch"):
            n, e = truth[side]["grad_worst"]
            print(f"  {f'worst grad of {side} vs its fp64: {n[5:]}':<50} {e:10.3e}")
    row("worst BN running_mean", s["running_mean_worst"])
    row("worst BN running_var", s["running_var_worst"])
    if s["zero_grad_torch"] or s["zero_grad_ours"]:
        row("conv bias grads (0 in exact arithmetic): sonata", s["zero_grad_ours"])
        row("  torch, for scale (max|g| / max|weight grad|)", s["zero_grad_torch"], False)
    for name in ("num_batches_tracked", *case.exact_outputs):
        print(f"  {name + ' equal':<50} {s[name + '_equal']!s:>10}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="vgg19_bn", choices=sorted(MODELS))
    ap.add_argument("--probe", default="build/probe", help="the probe binary")
    ap.add_argument("--device", default="cpu", help="the probe's device (cpu | cuda)")
    ap.add_argument("--batch", type=int, default=2, help="vgg19_bn only")
    ap.add_argument("--size", type=int, default=224, help="input height and width (vgg19_bn)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--passes", default="train,eval", help="train and/or eval, comma-separated")
    ap.add_argument("--precisions", default="fp32,fp64", help="fp32 and/or fp64")
    ap.add_argument("--tolerance", type=float, default=1e-3, help="fp32")
    ap.add_argument("--tolerance-fp64", type=float, default=1e-9)
    ap.add_argument("--workdir", help="keep the weights, input and results here (default: a "
                    "temporary folder, removed afterwards)")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    args = ap.parse_args()
    if not os.access(args.probe, os.X_OK):
        raise SystemExit(f"compare_torch: no probe at '{args.probe}' (build it, or pass --probe)")
    passes = [p.strip() for p in args.passes.split(",") if p.strip()]
    if not passes or any(p not in ("train", "eval") for p in passes):
        raise SystemExit(f"compare_torch: --passes '{args.passes}' is not train and/or eval")
    precisions = [p.strip() for p in args.precisions.split(",") if p.strip()]
    if not precisions or any(p not in TORCH_DTYPES for p in precisions):
        raise SystemExit(f"compare_torch: --precisions '{args.precisions}' is not fp32 and/or fp64")
    precisions.sort(key=lambda p: p != "fp64")  # fp64 first: fp32 is then shown against it
    torch.set_num_threads(args.threads)

    case = MODELS[args.model]()
    folder = args.workdir or tempfile.mkdtemp(prefix="sonata_compare_")
    os.makedirs(folder, exist_ok=True)
    times = {}
    try:
        start = time.time()
        model = case.build(args.seed)
        state = copy.deepcopy(model.state_dict())
        x, extra = case.inputs(args, args.seed)
        save_safetensors(os.path.join(folder, "weights.safetensors"), state)
        np.save(os.path.join(folder, "x.npy"), x.numpy())
        for flag, t in extra.items():
            np.save(os.path.join(folder, f"{flag}.npy"), t.numpy())
        params = sum(p.numel() for p in model.parameters())
        times["setup"] = time.time() - start
        print(f"{args.model}: {params / 1e6:.1f}M parameters, input {list(x.shape)}, "
              f"files in {folder}", flush=True)

        report = {"model": args.model, "parameters": params, "input": list(x.shape),
                  "tolerance": {"fp32": args.tolerance, "fp64": args.tolerance_fp64},
                  "device": args.device}
        bad = []
        for p in passes:
            train = p == "train"
            report[p] = {}
            truth = None  # torch's fp64 result of this pass
            for precision in precisions:
                dtype = TORCH_DTYPES[precision]
                # Same values in both precisions: the fp32 weights and input, widened.
                m = copy.deepcopy(model).to(dtype)
                s = {k: v.to(dtype) if v.is_floating_point() else v for k, v in state.items()}
                start = time.time()
                theirs = run_torch(case, m, s, x.to(dtype), extra, train)
                times[f"torch_{p}_{precision}"] = time.time() - start
                start = time.time()
                ours = run_probe(args, case, folder, extra, train, precision)
                times[f"probe_{p}_{precision}"] = time.time() - start
                figures = summary(case, compare(case, m, ours, theirs, train))
                fp64 = precision == "fp64"
                if fp64:
                    truth = theirs
                elif truth is not None:
                    mine, torch_side = (compare(case, m, r, truth, train) for r in (ours, theirs))
                    figures["vs_fp64"] = {"sonata": against_fp64(case, mine),
                                          "torch": against_fp64(case, torch_side),
                                          "grad_errors": {"sonata": mine["grad"],
                                                          "torch": torch_side["grad"]}}
                tolerance = args.tolerance_fp64 if fp64 else args.tolerance
                print_table(case, f"{p} mode, {precision}", figures, tolerance,
                            judge_grads=fp64)
                bad += [f"{p} {precision}: {b}" for b in failures(case, figures, tolerance, fp64)]
                if "vs_fp64" in figures:
                    del figures["vs_fp64"]["grad_errors"]  # every tensor: too long for the JSON
                report[p][precision] = figures
                del m, theirs, ours
    finally:
        if not args.workdir:
            shutil.rmtree(folder, ignore_errors=True)
    report["seconds"] = {k: round(v, 1) for k, v in times.items()}
    report["ok"] = not bad
    print()
    print(json.dumps(report))
    if bad:
        print("compare_torch: over the tolerance: " + "; ".join(bad), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
