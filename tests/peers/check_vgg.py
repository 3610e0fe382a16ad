"""VGG19_BN and VGG16_BN: torchvision 0.29's vgg19_bn and vgg16_bn against sonata's, three
ways each (vgg16_bn's files: vgg16_bn_16.state_dict.txt, made with torchvision 0.29, and the
narrow fixture tests/fixtures/vgg16_bn/, made with PyTorch 2.15 by make_vgg.py --depth 16).

1. Names, shapes and dtypes: torchvision.models.vgg19_bn(num_classes=16).state_dict() against
   tests/fixtures/vgg19_bn_16.state_dict.txt (made with torchvision 0.14, which
   tests/models/test_vgg.cpp holds sonata's module tree to).
2. Values at full width: that model, seeded, with its BatchNorm affine parameters and running
   statistics moved away from 1 and 0, written by safetensors.torch.save_file as it stands
   (num_batches_tracked included), loaded by sonata's probe (tools/probe) and run forward in
   eval mode in float64 on a seeded 2 x 3 x 64 x 64 batch: sonata's logits against
   torchvision's, within 1e-9 of their largest magnitude.
3. The narrow fixture (tests/fixtures/vgg/, made with PyTorch 1.13, which tests/models holds
   sonata to): its weights read by safetensors.torch.load_file into make_vgg.py's model, run
   by PyTorch 2.x in eval and train mode, against the committed logits and loss.
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch
import torchvision
from safetensors.torch import load_file, save_file

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURES = os.path.join(ROOT, "tests", "fixtures")
DTYPE_NAMES = {torch.float32: "float32", torch.int64: "int64"}


def committed_names(name):
    entries = []
    with open(os.path.join(FIXTURES, name + "_16.state_dict.txt")) as f:
        for line in f:
            if line.strip():
                name, shape, dtype = line.split()
                entries.append((name, shape, dtype))
    return entries


def names_of(state):
    return [(name, "x".join(str(d) for d in t.shape) or "scalar", DTYPE_NAMES.get(t.dtype, "?"))
            for name, t in state.items()]


def relative(a, b):
    return float((a - b).abs().max() / b.abs().max().clamp_min(1e-300))


# Each registered VGG: its torchvision builder, its depth for make_vgg.py and its narrow
# fixture's folder.
MODELS = [("vgg19_bn", 19, "vgg"), ("vgg16_bn", 16, "vgg16_bn")]


def run(build_dir):
    print("torch", torch.__version__, "torchvision", torchvision.__version__)
    failures = []
    for name, depth, folder in MODELS:
        print("--", name)
        failures += [name + ": " + f for f in run_model(build_dir, name, depth, folder)]
    return failures


def run_model(build_dir, name, depth, folder):
    failures = []
    torch.manual_seed(0)
    model = getattr(torchvision.models, name)(num_classes=16)
    state = model.state_dict()
    theirs, ours = names_of(state), committed_names(name)
    print("state_dict: %d entries now, %d committed" % (len(theirs), len(ours)))
    if theirs != ours:
        first = next((i for i, (a, b) in enumerate(zip(theirs, ours)) if a != b),
                     min(len(theirs), len(ours)))
        failures.append("state_dict names differ from entry %d: now %s, committed %s" % (
            first, theirs[first:first + 1], ours[first:first + 1]))

    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.2, 0.2)
                m.running_mean.uniform_(-0.5, 0.5)
                m.running_var.uniform_(0.5, 2.0)
    model = model.double().eval()
    x = torch.randn(2, 3, 64, 64, dtype=torch.float64)
    with torch.no_grad():
        expected = model(x)
    with tempfile.TemporaryDirectory() as tmp:
        weights = os.path.join(tmp, name + "_16.safetensors")
        save_file({k: v.contiguous() for k, v in model.state_dict().items()}, weights)
        np.save(os.path.join(tmp, "x.npy"), x.numpy())
        out = os.path.join(tmp, "out.safetensors")
        command = [os.path.join(build_dir, "probe"), "--model", name, "--num-classes", "16",
                   "--in-channels", "3", "--width", "1", "--dropout", "0", "--weights", weights,
                   "--input", os.path.join(tmp, "x.npy"), "--precision", "fp64", "--out", out]
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != 0:
            failures.append("probe refused torchvision's save_file output: %s" % (
                done.stderr.strip().splitlines() or ["exit %d" % done.returncode])[-1])
        else:
            got = load_file(out)["logits"].to(torch.float64)
            error = relative(got, expected)
            print("full-width forward (eval, f64): sonata vs torchvision logits %.3g of the "
                  "largest" % error)
            if error > 1e-9:
                failures.append("full-width logits differ by %.3g" % error)

    sys.path.insert(0, FIXTURES)
    sys.path.insert(0, os.path.join(ROOT, "tools"))
    import make_vgg

    narrow = make_vgg.NarrowVgg(in_channels=1, num_classes=16, width=1 / 32, dropout=0.0,
                                depth=depth).double()
    narrow.load_state_dict(load_file(os.path.join(FIXTURES, folder, "weights.safetensors")))
    x = torch.from_numpy(np.load(os.path.join(FIXTURES, folder, "input.npy")))
    y = torch.from_numpy(np.load(os.path.join(FIXTURES, folder, "labels.npy")))
    for mode in ("eval", "train"):
        narrow.train(mode == "train")
        with torch.no_grad():
            logits = narrow(x)
        committed = load_file(os.path.join(FIXTURES, folder, mode + ".safetensors"))
        error = relative(logits, committed["logits"])
        loss = torch.nn.functional.cross_entropy(logits, y)
        loss_error = abs(float(loss) - float(committed["loss"]))
        print("narrow fixture, %s: PyTorch now vs committed logits %.3g of the largest, loss "
              "%.3g" % (mode, error, loss_error))
        if error > 1e-12 or loss_error > 1e-12:
            failures.append("narrow fixture %s differs: logits %.3g, loss %.3g" % (
                mode, error, loss_error))
    return failures
