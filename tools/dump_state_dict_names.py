#!/usr/bin/env python3
"""Writes the state_dict names, shapes and dtypes of torchvision's models, so that tests can
check sonata's models against torch's naming without PyTorch at test time.

  /usr/bin/python3 tools/dump_state_dict_names.py tests/fixtures
"""
import sys

import torch
import torchvision


def dump(model, path):
    with open(path, "w") as out:
        for name, tensor in model.state_dict().items():
            shape = "x".join(str(s) for s in tensor.shape) or "scalar"
            out.write(f"{name} {shape} {str(tensor.dtype).replace('torch.', '')}\n")


def main():
    folder = sys.argv[1] if len(sys.argv) > 1 else "tests/fixtures"
    dump(torchvision.models.vgg19_bn(num_classes=16), f"{folder}/vgg19_bn_16.state_dict.txt")
    dump(torchvision.models.vgg16_bn(num_classes=16), f"{folder}/vgg16_bn_16.state_dict.txt")


if __name__ == "__main__":
    main()
