#!/usr/bin/env python3
"""Parity fixtures for sonata's VGG19_BN from PyTorch (run with /usr/bin/python3):
a narrow VGG19_BN (configuration "E" with every width scaled, same module names as
torchvision's) with random weights and BatchNorm statistics away from 0/1, an input batch
shaped like a mel spectrogram, and PyTorch's results in float64:
  weights.safetensors  the model's state_dict
  input.npy, labels.npy
  train.safetensors    logits, loss, grad.<param>, buffers after one train-mode forward
  eval.safetensors     logits and loss in eval mode
At width 1 the model is exactly torchvision.models.vgg19_bn.

  /usr/bin/python3 tools/make_vgg_fixtures.py tests/fixtures/vgg
"""
import math
import os
import sys

import numpy as np
import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(__file__))
from convert_torch_weights import save_safetensors  # noqa: E402

CFG_E = [64, 64, "M", 128, 128, "M", 256, 256, 256, 256, "M", 512, 512, 512, 512, "M",
         512, 512, 512, 512, "M"]


def scaled(c, width):
    return max(1, int(math.floor(c * width + 0.5)))  # std::lround, as sonata


class NarrowVgg(nn.Module):
    def __init__(self, in_channels, num_classes, width, dropout):
        super().__init__()
        layers, c = [], in_channels
        for v in CFG_E:
            if v == "M":
                layers.append(nn.MaxPool2d(2, 2))
            else:
                out = scaled(v, width)
                layers += [nn.Conv2d(c, out, 3, padding=1), nn.BatchNorm2d(out), nn.ReLU(True)]
                c = out
        self.features = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d((7, 7))
        hidden = scaled(4096, width)
        self.classifier = nn.Sequential(
            nn.Linear(c * 49, hidden), nn.ReLU(True), nn.Dropout(dropout),
            nn.Linear(hidden, hidden), nn.ReLU(True), nn.Dropout(dropout),
            nn.Linear(hidden, num_classes))

    def forward(self, x):
        return self.classifier(torch.flatten(self.avgpool(self.features(x)), 1))


def main():
    folder = sys.argv[1] if len(sys.argv) > 1 else "tests/fixtures/vgg"
    os.makedirs(folder, exist_ok=True)
    torch.manual_seed(0)
    model = NarrowVgg(in_channels=1, num_classes=16, width=1 / 32, dropout=0.0).double()
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.2, 0.2)
                m.running_mean.uniform_(-0.5, 0.5)
                m.running_var.uniform_(0.5, 2.0)
            if isinstance(m, nn.Linear):
                m.weight.normal_(0, 0.05)
                m.bias.uniform_(-0.1, 0.1)
    save_safetensors(f"{folder}/weights.safetensors", model.state_dict())
    x = torch.randn(2, 1, 64, 64, dtype=torch.float64)
    y = torch.tensor([3, 11])
    np.save(f"{folder}/input.npy", x.numpy())
    np.save(f"{folder}/labels.npy", y.numpy())

    lossf = nn.CrossEntropyLoss()
    model.eval()
    with torch.no_grad():
        logits = model(x)
        save_safetensors(f"{folder}/eval.safetensors",
                         {"logits": logits, "loss": lossf(logits, y)})
    model.train()
    logits = model(x)
    loss = lossf(logits, y)
    loss.backward()
    out = {"logits": logits, "loss": loss}
    for name, p in model.named_parameters():
        out["grad." + name] = p.grad
    for name, b in model.named_buffers():
        out[name] = b
    save_safetensors(f"{folder}/train.safetensors", out)


if __name__ == "__main__":
    main()
