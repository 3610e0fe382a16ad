#!/usr/bin/env python3
"""Peer measurement for build/bench_kernels: the same kernels, shapes and timing in PyTorch.

Prints one JSON line per kernel and pass with bench_kernels' keys (work "kernel:gemm", pass,
device, precision, shape, sets, calls, step_ms, gbps, tflops, bytes, flops, floor_ms,
floor_ratio, ceilings), against ceilings measured here the same way: a large uint8 copy_
(read + written bytes) and a large square matmul in the precision.

  peer_kernels.py --device cpu
  peer_kernels.py --device cuda --precision bf16 --kernel conv
  peer_kernels.py --kernel gemm --shape 1024,1024,1024 --quick

Kernels as PyTorch users call them: matmul; conv2d without bias; relu(batch_norm(training));
cross_entropy; torch.lstm_cell (nn.LSTMCell's step); ctc_loss on f32 log-probabilities
(zero_infinity, mean); torch.optim.AdamW (lr 1e-3, weight decay 1e-2) on f32 parameters.
fp32 runs without TF32, as sonata's cuBLAS and cuDNN calls do. The bytes and flops restate
bench/kernel_cost.cpp; keep the two in step. Stdlib and torch only;
bench/peers_env.py picks the interpreter: .venv-peers/ (bench/setup_peers.sh: PyTorch 2.x from
PyPI), else Debian's /usr/bin/python3 (PyTorch 1.13) with a line that says so.
"""
import argparse
import json
import math
import os
import subprocess
import sys
import time

MIB = 1 << 20

# name: (sizes' names, CPU default, CUDA default, quick), as bench/kernel_*.cpp.
SIZES = {
    "gemm": (["M", "N", "K"], [2048, 1024, 640], [8192, 4096, 4096], [64, 64, 64]),
    "conv": (["N", "C", "H", "W", "K", "R", "stride", "pad"], [8, 64, 32, 32, 64, 3, 1, 1],
             [64, 128, 56, 56, 128, 3, 1, 1], [2, 4, 8, 8, 4, 3, 1, 1]),
    "bn_relu": (["N", "C", "H", "W"], [8, 64, 64, 64], [64, 128, 56, 56], [2, 4, 8, 8]),
    "softmax_ce": (["N", "C"], [1024, 1000], [16384, 4096], [4, 10]),
    "lstm_step": (["N", "I", "H"], [8, 640, 256], [64, 1024, 1024], [2, 8, 8]),
    "ctc": (["T", "N", "C", "L"], [400, 32, 29, 40], [400, 64, 29, 40], [20, 2, 5, 4]),
    "optimizer": (["params", "tensors"], [1 << 22, 8], [1 << 26, 16], [4096, 2]),
}
F32_ONLY = {"ctc", "optimizer"}


# --- bytes and flops: bench/kernel_cost.cpp restated -------------------------------

def gemm_cost(m, n, k, e, backward):
    if not backward:
        return e * (m * k + k * n + m * n), 2.0 * m * n * k
    return e * (m * n + 2 * m * k + 2 * k * n), 4.0 * m * n * k


def conv_out(size, r, stride, pad):
    return (size + 2 * pad - r) // stride + 1


def conv_cost(n, c, h, w, k, r, stride, pad, e, backward):
    p, q = conv_out(h, r, stride, pad), conv_out(w, r, stride, pad)
    x, wt, y = n * c * h * w, k * c * r * r, n * k * p * q
    macs = y * c * r * r
    if not backward:
        return e * (x + wt + y), 2.0 * macs
    return e * (y + 2 * x + 2 * wt), 4.0 * macs


def bn_relu_cost(elements, channels, e, backward):
    if not backward:
        return e * 2 * elements + 4 * 6 * channels, 6.0 * elements
    return e * 3 * elements + 4 * 3 * channels, 10.0 * elements


def softmax_ce_cost(rows, classes, e, backward):
    logits = rows * classes
    if not backward:
        return e * logits + 8 * rows + 4, 4.0 * logits
    return e * 2 * logits + 8 * rows, 3.0 * logits


def lstm_step_cost(nb, i, h, e, backward):
    weights, biases = 4 * h * (i + h), 2 * 4 * h
    if not backward:
        return (e * (weights + biases + nb * i + 4 * nb * h),
                2.0 * nb * weights + 2 * nb * 4 * h + 9 * nb * h)
    return (e * (2 * weights + biases + 2 * nb * i + 5 * nb * h),
            4.0 * nb * weights + 20 * nb * h + 2 * nb * 4 * h)


def ctc_cost(t, n, c, l, backward):
    probs, cells, targets = t * n * c, t * n * (2 * l + 1), 8 * n * l
    if not backward:
        return 4 * probs + targets + 4 * n, 8.0 * cells
    return 4 * 2 * probs + targets, 11.0 * cells + 3 * probs


def adamw_cost(elements):
    return 4 * 7 * elements, 14.0 * elements


def floor_ms(cost, ceilings):
    nbytes, flops = cost
    return max(nbytes / (ceilings["copy_gbps"] * 1e9), flops / (ceilings["gemm_tflops"] * 1e12)) * 1e3


def rotation_sets(set_bytes, rotate_bytes, min_sets):
    needed = math.ceil(rotate_bytes / set_bytes)
    return int(min(max(needed, min_sets), max(64, min_sets)))


# --- timing ----------------------------------------------------------------------------

class Bench:
    def __init__(self, a, torch):
        self.a, self.torch = a, torch
        self.dev = torch.device(a.device)
        self.cuda = self.dev.type == "cuda"

    def time_calls(self, sets, first, count, call):
        """Seconds for calls first .. first + count - 1: events on CUDA, wall time on the CPU."""
        torch = self.torch
        if self.cuda:
            start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for i in range(first, first + count):
                call(i % sets)
            stop.record()
            stop.synchronize()
            return start.elapsed_time(stop) / 1e3
        begin = time.perf_counter()
        for i in range(first, first + count):
            call(i % sets)
        return time.perf_counter() - begin

    def time_rotated(self, sets, call, min_calls, min_seconds):
        """As bench_kernels' time_rotated: one untimed call per set (two at least, so each
        set's backward has made the gradients it keeps), two to size the timed run, then the
        timed run, continuing the rotation (each call's set the least recent)."""
        warm_up = max(sets, 2)
        self.time_calls(sets, 0, warm_up, call)
        first, calls = warm_up, max(min_calls, 1)
        if min_seconds > 0:
            estimate = self.time_calls(sets, first, 2, call) / 2
            first += 2
            calls = max(calls, int(min(math.ceil(min_seconds / max(estimate, 1e-7)), 1e5)))
        return self.time_calls(sets, first, calls, call) / calls, calls


def last_level_cache_bytes(torch, dev):
    if dev.type == "cuda":
        return float(getattr(torch.cuda.get_device_properties(dev), "L2_cache_size", 0) or 0)
    try:
        out = subprocess.run(["getconf", "LEVEL3_CACHE_SIZE"], capture_output=True, text=True)
        return float(max(int(out.stdout.strip() or 0), 0))
    except (OSError, ValueError):
        return 0.0


def measure_ceilings(bench, dtype):
    """The whole machine's ceilings, whatever --threads gives the kernels."""
    threads = bench.torch.get_num_threads()
    bench.torch.set_num_threads(os.cpu_count())
    try:
        return measure_ceilings_now(bench, dtype)
    finally:
        bench.torch.set_num_threads(threads)


def measure_ceilings_now(bench, dtype):
    torch, a = bench.torch, bench.a
    min_calls, min_seconds = (1, 0) if a.quick else (3, 0.1 if bench.cuda else 0)

    def best(call):
        return min(bench.time_rotated(1, call, min_calls, min_seconds)[0] for _ in range(2))

    wanted = max(2 * last_level_cache_bytes(torch, bench.dev), float(1 << 30 if bench.cuda else 256 * MIB))
    nbytes = 16 * MIB if a.quick else int(min(wanted, 1 << 30))
    src = torch.ones(nbytes, dtype=torch.uint8, device=bench.dev)
    dst = torch.zeros(nbytes, dtype=torch.uint8, device=bench.dev)
    copy_gbps = 2.0 * nbytes / best(lambda i: dst.copy_(src)) / 1e9
    del src, dst
    n = 256 if a.quick else (8192 if bench.cuda else 2048)
    x = torch.randn(n, n, device=bench.dev, dtype=dtype)
    y = torch.randn(n, n, device=bench.dev, dtype=dtype)
    with torch.no_grad():
        gemm_tflops = 2.0 * n ** 3 / best(lambda i: torch.matmul(x, y)) / 1e12
    return {"copy_gbps": copy_gbps, "gemm_tflops": gemm_tflops}


# --- the kernels -------------------------------------------------------------------------

def kernel_setup(name, size, bench, dtype):
    """(shape names, fwd cost, bwd cost, make_set(i) -> set, forward(set), graph(set) or None)."""
    torch, dev = bench.torch, bench.dev
    e = torch.tensor([], dtype=dtype).element_size()
    F = torch.nn.functional

    def rnd(*shape, grad=False, scale=1.0):
        t = torch.randn(*shape, device=dev, dtype=dtype) * scale
        return t.requires_grad_(grad)

    if name == "gemm":
        m, n, k = size
        return ([], gemm_cost(m, n, k, e, False), gemm_cost(m, n, k, e, True),
                lambda i: (rnd(m, k, grad=True), rnd(k, n, grad=True)),
                lambda s: torch.matmul(s[0], s[1]),
                lambda s: ([s[0], s[1]], torch.matmul(s[0], s[1]), rnd(m, n)))
    if name == "conv":
        n, c, h, w, k, r, stride, pad = size
        p, q = conv_out(h, r, stride, pad), conv_out(w, r, stride, pad)
        if p <= 0 or q <= 0:
            sys.exit("peer_kernels.py: conv --shape %s leaves no output" % size)
        conv = lambda s: F.conv2d(s[0], s[1], None, stride, pad)
        return (["N", "C", "H", "W", "K", "R", "S", "stride", "pad"],
                conv_cost(n, c, h, w, k, r, stride, pad, e, False),
                conv_cost(n, c, h, w, k, r, stride, pad, e, True),
                lambda i: (rnd(n, c, h, w, grad=True), rnd(k, c, r, r, grad=True)),
                conv, lambda s: ([s[0], s[1]], conv(s), rnd(n, k, p, q)))
    if name == "bn_relu":
        n, c, h, w = size
        f32 = dict(device=dev, dtype=torch.float32)
        bn = lambda s: F.relu(F.batch_norm(s[0], s[3], s[4], s[1], s[2], training=True,
                                           momentum=0.1, eps=1e-5))
        return ([], bn_relu_cost(n * c * h * w, c, e, False), bn_relu_cost(n * c * h * w, c, e, True),
                lambda i: (rnd(n, c, h, w, grad=True), torch.ones(c, requires_grad=True, **f32),
                           torch.zeros(c, requires_grad=True, **f32), torch.zeros(c, **f32),
                           torch.ones(c, **f32)),
                bn, lambda s: ([s[0], s[1], s[2]], bn(s), rnd(n, c, h, w)))
    if name == "softmax_ce":
        rows, classes = size
        ce = lambda s: F.cross_entropy(s[0], s[1])
        return ([], softmax_ce_cost(rows, classes, e, False), softmax_ce_cost(rows, classes, e, True),
                lambda i: (rnd(rows, classes, grad=True), torch.randint(0, classes, (rows,), device=dev)),
                ce, lambda s: ([s[0]], ce(s), None))
    if name == "lstm_step":
        nb, i_size, h = size
        scale = 1.0 / math.sqrt(h)
        step = lambda s: torch.lstm_cell(s[0], (s[1], s[2]), s[3], s[4], s[5], s[6])[0]
        return ([], lstm_step_cost(nb, i_size, h, e, False), lstm_step_cost(nb, i_size, h, e, True),
                lambda i: (rnd(nb, i_size, grad=True), rnd(nb, h, grad=True), rnd(nb, h, grad=True),
                           rnd(4 * h, i_size, grad=True, scale=scale), rnd(4 * h, h, grad=True, scale=scale),
                           rnd(4 * h, grad=True, scale=scale), rnd(4 * h, grad=True, scale=scale)),
                step, lambda s: (list(s), step(s), rnd(nb, h)))
    if name == "ctc":
        t, n, c, l = size
        if c < 2 or t < 2 * l + 1:
            sys.exit("peer_kernels.py: ctc --shape needs 2 classes or more and T >= 2L + 1")
        il = torch.full((n,), t, dtype=torch.long)
        tl = torch.full((n,), l, dtype=torch.long)

        def make(i):
            lp = torch.randn(t, n, c, device=dev).log_softmax(2).requires_grad_(True)
            return lp, torch.randint(1, c, (n, l), device=dev)
        ctc = lambda s: F.ctc_loss(s[0], s[1], il, tl, blank=0, reduction="mean", zero_infinity=True)
        return ([], ctc_cost(t, n, c, l, False), ctc_cost(t, n, c, l, True),
                make, ctc, lambda s: ([s[0]], ctc(s), None))
    if name == "optimizer":
        elements, tensors = size
        if elements < tensors:
            sys.exit("peer_kernels.py: optimizer --shape needs at least one parameter per tensor")

        def make(i):
            params = []
            for t in range(tensors):
                count = elements // tensors + (elements % tensors if t == tensors - 1 else 0)
                p = torch.randn(count, device=dev, requires_grad=True)
                p.grad = torch.randn(count, device=dev)
                params.append(p)
            opt = torch.optim.AdamW(params, lr=1e-3, weight_decay=1e-2)
            opt.step()  # makes the moments, outside the timing, as bench_kernels does
            return opt
        return ([], adamw_cost(elements), None, make, lambda opt: opt.step(), None)
    raise ValueError(name)


def run_kernel(name, bench, base_dtype, precision, ceilings, args):
    torch, a = bench.torch, bench.a
    names, cpu, cuda, quick = SIZES[name]
    if a.shape:
        size = [int(v) for v in a.shape.split(",")]
        if len(size) != len(names) or min(size) <= 0:
            sys.exit("peer_kernels.py: --shape for %s needs %d positive sizes" % (name, len(names)))
    else:
        size = quick if a.quick else (cuda if bench.cuda else cpu)
    dtype = torch.float32 if name in F32_ONLY else base_dtype
    spelled, fwd_cost, bwd_cost, make_set, forward, graph = kernel_setup(name, size, bench, dtype)
    if name == "conv":
        size = size[:6] + [size[5]] + size[6:]  # R = S
    shape = ",".join("%s=%d" % (k, v) for k, v in zip(spelled or names, size))
    sets = rotation_sets(fwd_cost[0], args["rotate_bytes"], a.sets)
    data = [make_set(i) for i in range(sets)]
    lines = []
    with torch.no_grad():
        seconds, calls = bench.time_rotated(sets, lambda i: forward(data[i]), args["min_calls"],
                                            args["min_seconds"])
    lines.append(("forward", fwd_cost, seconds, calls))
    if graph is not None:
        graphs = [graph(s) for s in data]

        def backward(i):
            leaves, out, seed = graphs[i]
            for leaf in leaves:
                leaf.grad = None
            out.backward(seed, retain_graph=True)
        seconds, calls = bench.time_rotated(sets, backward, args["min_calls"], args["min_seconds"])
        lines.append(("backward", bwd_cost, seconds, calls))
    for pass_name, cost, seconds, calls in lines:
        floor = floor_ms(cost, ceilings)
        out = {"work": "kernel:" + name, "pass": pass_name, "device": a.device,
               "precision": "fp32" if name in F32_ONLY else precision, "shape": shape,
               "sets": sets, "calls": calls, "step_ms": seconds * 1e3,
               "gbps": cost[0] / seconds / 1e9, "tflops": cost[1] / seconds / 1e12,
               "bytes": cost[0], "flops": cost[1], "floor_ms": floor,
               "floor_ratio": floor / (seconds * 1e3), "ceilings": ceilings}
        if not bench.cuda:
            out["threads"] = torch.get_num_threads()
        out["peer"] = "torch " + torch.__version__
        print(json.dumps(out), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernel", default="all", choices=list(SIZES) + ["all"])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--precision", choices=["fp32", "fp16", "bf16"], default="fp32")
    ap.add_argument("--shape", help="one kernel's sizes, comma-separated")
    ap.add_argument("--sets", type=int, default=3, help="input sets rotated at least")
    ap.add_argument("--rotate-mib", type=float, help="the sets together exceed this "
                    "(default: twice the last-level cache, 256 at least)")
    ap.add_argument("--min-calls", type=int, default=5)
    ap.add_argument("--min-time", type=float, help="timed seconds at least (0.25 CPU, 0.1 CUDA)")
    ap.add_argument("--quick", action="store_true", help="tiny sizes, one timed call")
    ap.add_argument("--threads", type=int, default=0, help="CPU threads (0: all cores)")
    a = ap.parse_args()
    if a.shape and a.kernel == "all":
        sys.exit("peer_kernels.py: --shape needs one --kernel, not all")
    if a.sets < 1 or a.min_calls < 1:
        sys.exit("peer_kernels.py: --sets and --min-calls must be positive")

    import torch
    if a.device == "cpu" or a.threads:
        torch.set_num_threads(a.threads or os.cpu_count())
    torch.manual_seed(0)
    bench = Bench(a, torch)
    if bench.cuda:
        if not torch.cuda.is_available():
            print("peer_kernels.py: skipped --device %s: no CUDA device" % a.device, file=sys.stderr)
            return 77
        torch.cuda.set_device(bench.dev)
        torch.backends.cudnn.benchmark = True
        # sonata's fp32 GEMMs and convolutions use full fp32, never TF32.
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    elif a.precision != "fp32":
        sys.exit("peer_kernels.py: --precision %s needs --device cuda (the CPU kernels run f32)"
                 % a.precision)
    dtype = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[a.precision]
    if a.quick:
        args = {"min_calls": 1, "min_seconds": 0, "rotate_bytes": 0}
    else:
        rotate = (a.rotate_mib * MIB if a.rotate_mib is not None
                  else max(256 * MIB, 2 * last_level_cache_bytes(torch, bench.dev)))
        min_seconds = a.min_time if a.min_time is not None else (0.1 if bench.cuda else 0.25)
        args = {"min_calls": a.min_calls, "min_seconds": min_seconds, "rotate_bytes": rotate}

    kernels = list(SIZES) if a.kernel == "all" else [a.kernel]
    ceilings = measure_ceilings(bench, dtype)
    f32_ceilings = ceilings
    if dtype != torch.float32 and any(k in F32_ONLY for k in kernels):
        f32_ceilings = measure_ceilings(bench, torch.float32)
    for name in kernels:
        run_kernel(name, bench, dtype, a.precision,
                   f32_ceilings if name in F32_ONLY else ceilings, args)
    return 0


if __name__ == "__main__":
    from peers_env import use_peer_python  # the venv's PyTorch 2.x unless told otherwise

    use_peer_python()
    sys.exit(main())
