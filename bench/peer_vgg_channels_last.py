#!/usr/bin/env python3
"""PyTorch's side of the channels-last VGG19_BN comparison in tools/gpu_check.sh.

The workload of bench/peer_torch.py --work vgg19_bn (torchvision VGG19_BN,
num_classes 16, SGD momentum 0.9, lr 0.01, cross-entropy, 3x224x224, batch 64 on CUDA) as
PyTorch users run it fast: model and input in torch.channels_last, autocast to bf16 or fp16
(GradScaler for fp16), cudnn.benchmark on. Prints one JSON line in peer_torch.py's schema.

  peer_vgg_channels_last.py --precision bf16 [--batch 64] [--steps 10] [--warmup 3]
  peer_vgg_channels_last.py --device cpu --batch 2 --size 3x32x32 --steps 1   (a dry run)
"""
import argparse
import json
import sys
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--precision", choices=["fp32", "fp16", "bf16"], default="bf16")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--size", default="3x224x224", help="CxHxW")
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--device", default="cuda", help="cuda (the comparison) or cpu (a dry run)")
    a = ap.parse_args()

    import torch
    import torch.nn as nn
    import torchvision

    dev = torch.device(a.device)
    cuda = dev.type == "cuda"
    if cuda and not torch.cuda.is_available():
        sys.exit("peer_vgg_channels_last.py: torch " + torch.__version__ + " sees no CUDA device")
    torch.manual_seed(0)
    torch.backends.cudnn.benchmark = True
    c, h, w = map(int, a.size.split("x"))
    model = torchvision.models.vgg19_bn(num_classes=16)
    if c != 3:
        model.features[0] = nn.Conv2d(c, 64, 3, padding=1)
    model = model.to(dev, memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = torch.randn(a.batch, c, h, w, device=dev).contiguous(memory_format=torch.channels_last)
    y = torch.randint(0, 16, (a.batch,), device=dev)
    loss_fn = nn.CrossEntropyLoss()
    amp = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(a.precision)
    scaler = torch.cuda.amp.GradScaler(enabled=cuda and a.precision == "fp16")

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast(device_type=dev.type, dtype=amp or torch.bfloat16, enabled=amp is not None):
            loss = loss_fn(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()

    def sync():
        if cuda:
            torch.cuda.synchronize()

    for _ in range(a.warmup):
        step()
    sync()
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    start = time.perf_counter()
    for _ in range(a.steps):
        step()
    sync()
    dt = (time.perf_counter() - start) / a.steps
    out = {"work": "vgg19_bn", "device": a.device, "precision": a.precision,
           "channels_last": True, "batch": a.batch, "step_ms": dt * 1e3,
           "images_per_s": a.batch / dt, "peer": "torch " + torch.__version__}
    if cuda:
        out["peak_mem_mib"] = torch.cuda.max_memory_allocated() / 2**20
    print(json.dumps(out))


if __name__ == "__main__":
    from peers_env import use_peer_python  # the venv's PyTorch 2.x unless told otherwise

    use_peer_python()
    sys.exit(main())
