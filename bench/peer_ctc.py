#!/usr/bin/env python3
"""Peer measurement for the CTC loss alone, in the JSON schema of bench/peer_torch.py.

torch.nn.functional.ctc_loss forward + backward on log_softmax output, the same workload as
`bench_models --work ctc`:

  peer_ctc.py --device cpu --frames 400 --batch 32 --classes 29 --target-length 40
  peer_ctc.py --device cuda --cudnn      # PyTorch's cuDNN CTC path (L <= 256, int32 CPU targets)

bench/peers_env.py picks the interpreter: .venv-peers/ (bench/setup_peers.sh: PyTorch 2.x from
PyPI), else Debian's /usr/bin/python3 (PyTorch 1.13) with a line that says so.
"""
import argparse, json, time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--frames", type=int, default=400)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--classes", type=int, default=29)
    ap.add_argument("--target-length", type=int, default=40)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--cudnn", action="store_true", help="use cuDNN's CTC (GPU only)")
    ap.add_argument("--compile", action="store_true",
                    help="torch.compile (inductor) log_softmax + ctc_loss; the first warmup "
                    "step, which compiles, is reported apart as compile_s")
    a = ap.parse_args()
    if a.compile:
        a.warmup = max(a.warmup, 1)

    import os, torch
    torch.set_num_threads(a.threads or os.cpu_count())
    torch.manual_seed(0)
    dev = torch.device(a.device)
    cuda = dev.type == "cuda"
    T, N, C, L = a.frames, a.batch, a.classes, a.target_length
    logits = torch.randn(T, N, C, device=dev, requires_grad=True)
    targets = torch.randint(1, C, (N, L), dtype=torch.long)
    input_lengths = torch.full((N,), T, dtype=torch.long)
    target_lengths = torch.full((N,), L, dtype=torch.long)
    if a.cudnn:
        # cuDNN's path needs int32 concatenated targets on the CPU and full-length inputs.
        targets = targets.flatten().to(torch.int32)
        input_lengths = input_lengths.to(torch.int32)
        target_lengths = target_lengths.to(torch.int32)
        torch.backends.cudnn.enabled = True
    elif cuda:
        targets = targets.to(dev)

    def sync():
        if cuda:
            torch.cuda.synchronize()

    def loss_of(x):
        return torch.nn.functional.ctc_loss(x.log_softmax(2), targets, input_lengths,
                                            target_lengths, zero_infinity=True)

    if a.compile:
        # A cold compile every run: compile_s is not a hit in inductor's on-disk cache.
        torch.compiler.config.force_disable_caches = True
        loss_of = torch.compile(loss_of)

    def step():
        logits.grad = None
        loss_of(logits).backward()

    compile_s = None
    for i in range(a.warmup):
        t = time.perf_counter()
        step()
        sync()
        if i == 0 and a.compile:
            compile_s = time.perf_counter() - t
    t = time.perf_counter()
    for _ in range(a.steps):
        step()
    sync()
    dt = (time.perf_counter() - t) / a.steps
    out = {"work": "ctc", "device": a.device, "precision": "fp32", "batch": N, "frames": T,
           "classes": C, "target_length": L, "step_ms": dt * 1e3, "samples_per_s": N / dt,
           "peer": "torch " + torch.__version__ + (" cudnn" if a.cudnn else "")}
    if a.compile:
        out.update(compile_s=compile_s, peer=out["peer"] + " inductor")
    print(json.dumps(out))


if __name__ == "__main__":
    from peers_env import use_peer_python  # the venv's PyTorch 2.x unless told otherwise

    use_peer_python()
    main()
