#!/usr/bin/env python3
"""Writes tests/fixtures/image/: two tiny images written by PIL and what torchvision's
pipeline makes of them, read by tests/data/test_image.cpp.

  tiny.png, tiny.jpg        a 7 x 5 RGB pattern (PNG lossless; JPEG quality 90, PIL's
                            default 4:2:0 chroma subsampling)
  tiny_<png|jpg>_<rgb|l>.npy          to_tensor(Image.open(f).convert(mode)): [C, 5, 7] f32
  tiny_<png|jpg>_<rgb|l>_4x9.npy      then resize([4, 9], BILINEAR, antialias=False) and
                                      normalize(mean, std): [C, 4, 9] f32

The JPEG case normalises with ImageNet's mean/std (three different values), the others with
CCMusic's 0.5 / 0.5. Decoding uses the system libjpeg-turbo through PIL, with libjpeg's
defaults, which sonata's reader uses too.

Run with /usr/bin/python3 tools/make_image_fixtures.py from the repository root
(Debian: python3-pil, python3-torchvision).
"""
import os

import numpy as np
import torch
import torchvision.transforms.functional as F
from PIL import Image
from torchvision.transforms import InterpolationMode

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures", "image")


def pattern():
    y, x = np.mgrid[0:5, 0:7]
    rgb = np.stack([(40 * x + 13 * y) % 256, (255 - 30 * y + 7 * x) % 256, (90 + 17 * x * y) % 256], axis=-1)
    return Image.fromarray(rgb.astype(np.uint8), "RGB")


def main():
    os.makedirs(OUT, exist_ok=True)
    image = pattern()
    image.save(os.path.join(OUT, "tiny.png"))
    image.save(os.path.join(OUT, "tiny.jpg"), quality=90)
    imagenet = ([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])
    for kind in ("png", "jpg"):
        for mode in ("RGB", "L"):
            name = f"tiny_{kind}_{mode.lower()}"
            with Image.open(os.path.join(OUT, f"tiny.{kind}")) as opened:
                tensor = F.to_tensor(opened.convert(mode))
            np.save(os.path.join(OUT, name + ".npy"), tensor.numpy().astype(np.float32))
            resized = F.resize(tensor, [4, 9], interpolation=InterpolationMode.BILINEAR, antialias=False)
            mean, std = imagenet if (kind, mode) == ("jpg", "RGB") else ([0.5], [0.5])
            out = F.normalize(resized, mean, std)
            np.save(os.path.join(OUT, name + "_4x9.npy"), out.numpy().astype(np.float32))
            print(name, tuple(out.shape), float(out.min()), float(out.max()))


if __name__ == "__main__":
    torch.set_grad_enabled(False)
    main()
