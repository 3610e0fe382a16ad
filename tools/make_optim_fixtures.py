#!/usr/bin/env python3
"""Writes tests/fixtures/optim/*.txt: a few steps of torch.optim.SGD / Adam / AdamW, torch's
clip_grad_norm_ and a chain of torch LR schedulers (PyTorch 1.13, the reference behaviour
sonata's engine/optim matches), read by tests/optim/test_optim.cpp and test_lr_schedule.cpp.

Optimizer cases, one `key value value ...` line per field:
  optimizer sgd|adam|adamw     dtype f64|f32     steps S     params P     groups G
  group.<g>.params i ...       the parameter indices of group g
  group.<g>.<option> v         every hyper-parameter of the group (switches 0 or 1)
  param.<i>.shape d ...        param.<i>.initial ...  (row-major)
  grad.<s>.<i> ...             the gradient of parameter i at step s (absent: no gradient)
  param.<i>.after.<s> ...      the parameter after step s (s = 1..S)
  state.<i>.<buffer> ...       the final state (momentum_buffer, exp_avg, ...); state.<i>.step n
Clip cases:  dtype, max_norm, params P, grad.<i>.shape, grad.<i> (before), clipped.<i>, norm.
Schedule cases: positions p ... and lr v ... (torch's lr after stepping to each position).

Numbers are written with enough digits to round-trip their dtype. f32 cases are torch's f32
computation, so they differ from sonata's by rounding only.

Run with /usr/bin/python3 tools/make_optim_fixtures.py from the repository root.
"""
import math
import os
import warnings

import torch

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures", "optim")
DTYPES = {"f64": torch.float64, "f32": torch.float32}


def numbers(values, dtype_name):
    digits = 17 if dtype_name == "f64" else 9
    return " ".join(f"{float(v):.{digits}g}" for v in values)


def write(name, lines):
    with open(os.path.join(OUT, name + ".txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print(name)


def optimizer_case(name, kind, dtype_name, groups, shapes, steps=5, skip=(), seed=0):
    """groups: [(param indices, options)]; skip: (step, param) pairs without a gradient."""
    dtype = DTYPES[dtype_name]
    g = torch.Generator().manual_seed(seed)
    params = [torch.randn(shape, generator=g, dtype=torch.float64).to(dtype).requires_grad_(True)
              for shape in shapes]
    lines = [f"optimizer {kind}", f"dtype {dtype_name}", f"steps {steps}", f"params {len(params)}",
             f"groups {len(groups)}"]
    torch_groups = []
    for gi, (indices, options) in enumerate(groups):
        lines.append(f"group.{gi}.params " + " ".join(str(i) for i in indices))
        for key, value in options.items():
            lines.append(f"group.{gi}.{key} {float(value)!r}")
        torch_options = {k: v for k, v in options.items() if k not in ("beta1", "beta2")}
        if kind != "sgd":
            torch_options["betas"] = (options["beta1"], options["beta2"])
        for key in ("nesterov", "amsgrad"):
            if key in torch_options:
                torch_options[key] = bool(torch_options[key])
        torch_groups.append({"params": [params[i] for i in indices], **torch_options})
    for i, p in enumerate(params):
        lines.append(f"param.{i}.shape " + " ".join(str(d) for d in p.shape))
        lines.append(f"param.{i}.initial " + numbers(p.detach().flatten().tolist(), dtype_name))
    cls = {"sgd": torch.optim.SGD, "adam": torch.optim.Adam, "adamw": torch.optim.AdamW}[kind]
    # foreach=False: the single-tensor path, the one torch's docs define the update by.
    opt = cls(torch_groups, lr=torch_groups[0]["lr"], foreach=False)
    for s in range(1, steps + 1):
        opt.zero_grad(set_to_none=True)
        for i, p in enumerate(params):
            if (s, i) in skip:
                continue
            grad = torch.randn(p.shape, generator=g, dtype=torch.float64).to(dtype)
            p.grad = grad
            lines.append(f"grad.{s}.{i} " + numbers(grad.flatten().tolist(), dtype_name))
        opt.step()
        for i, p in enumerate(params):
            lines.append(f"param.{i}.after.{s} " + numbers(p.detach().flatten().tolist(), dtype_name))
    for i, p in enumerate(params):
        for key, value in opt.state[p].items():
            if value is None:
                continue
            if key == "step":
                lines.append(f"state.{i}.step {int(value.item())}")
            else:
                lines.append(f"state.{i}.{key} " + numbers(value.flatten().tolist(), dtype_name))
    write(name, lines)


def clip_case(name, dtype_name, shapes, max_norm, scale=1.0, seed=0):
    dtype = DTYPES[dtype_name]
    g = torch.Generator().manual_seed(seed)
    params = [torch.zeros(shape, dtype=dtype, requires_grad=True) for shape in shapes]
    lines = [f"dtype {dtype_name}", f"max_norm {max_norm!r}", f"params {len(params)}"]
    for i, p in enumerate(params):
        p.grad = (torch.randn(p.shape, generator=g, dtype=torch.float64) * scale).to(dtype)
        lines.append(f"grad.{i}.shape " + " ".join(str(d) for d in p.shape))
        lines.append(f"grad.{i} " + numbers(p.grad.flatten().tolist(), dtype_name))
    norm = torch.nn.utils.clip_grad_norm_(params, max_norm)
    for i, p in enumerate(params):
        lines.append(f"clipped.{i} " + numbers(p.grad.flatten().tolist(), dtype_name))
    lines.append("norm " + numbers([norm.item()], dtype_name))
    write(name, lines)


def schedule_case(name, peak, make_scheduler, count):
    """torch's lr at epochs 0 .. count-1, stepping the scheduler once per epoch."""
    p = torch.zeros(1, requires_grad=True)
    opt = torch.optim.SGD([p], lr=peak)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        scheduler = make_scheduler(opt)
        lrs = []
        for _ in range(count):
            lrs.append(opt.param_groups[0]["lr"])
            opt.step()
            scheduler.step()
    write(name, [f"peak {peak!r}", "positions " + " ".join(str(e) for e in range(count)),
                 "lr " + numbers(lrs, "f64")])


def main():
    os.makedirs(OUT, exist_ok=True)
    shapes = [(3, 4), (5,), (2, 1, 3)]
    for dtype in ("f64", "f32"):
        optimizer_case(f"sgd_nesterov_{dtype}", "sgd", dtype,
                       [([0, 1, 2], dict(lr=0.1, momentum=0.9, dampening=0.0, weight_decay=0.01,
                                         nesterov=1))], shapes, seed=1)
        optimizer_case(f"adamw_{dtype}", "adamw", dtype,
                       [([0, 1, 2], dict(lr=0.01, beta1=0.9, beta2=0.99, eps=1e-8, weight_decay=0.1,
                                         amsgrad=0))], shapes, seed=4)
    optimizer_case("sgd_dampening_f64", "sgd", "f64",
                   [([0, 1, 2], dict(lr=0.05, momentum=0.8, dampening=0.3, weight_decay=0.0,
                                     nesterov=0))], shapes, seed=2)
    # Two groups (different lr, decay only on the matrix), no momentum, and a parameter that
    # misses its gradient on step 2 (left alone by that step).
    optimizer_case("sgd_groups_f64", "sgd", "f64",
                   [([0, 2], dict(lr=0.1, momentum=0.0, dampening=0.0, weight_decay=0.1, nesterov=0)),
                    ([1], dict(lr=0.02, momentum=0.5, dampening=0.0, weight_decay=0.0, nesterov=0))],
                   shapes, skip={(2, 1), (3, 0)}, seed=3)
    optimizer_case("adam_l2_f64", "adam", "f64",
                   [([0, 1, 2], dict(lr=0.02, beta1=0.8, beta2=0.95, eps=1e-6, weight_decay=0.05,
                                     amsgrad=0))], shapes, seed=5)
    # amsgrad, two groups, and a parameter whose step count falls behind (bias corrections).
    optimizer_case("adamw_amsgrad_groups_f64", "adamw", "f64",
                   [([0, 1], dict(lr=0.01, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.01,
                                  amsgrad=1)),
                    ([2], dict(lr=0.003, beta1=0.5, beta2=0.9, eps=1e-7, weight_decay=0.0, amsgrad=1))],
                   shapes, skip={(2, 2), (4, 2)}, seed=6)

    clip_case("clip_f64", "f64", [(4, 5), (7,), (3, 3)], max_norm=1.5, seed=7)
    clip_case("clip_f32", "f32", [(4, 5), (7,), (3, 3)], max_norm=0.75, scale=3.0, seed=8)
    clip_case("clip_unclipped_f64", "f64", [(6,), (2, 2)], max_norm=100.0, seed=9)

    # 5 warmup epochs from 0.01 * peak, 25 cosine epochs down to 1e-4, 10 flat at 1e-4.
    peak, floor = 0.1, 1e-4
    schedule_case("warmup_cosine_flat", peak, lambda opt: torch.optim.lr_scheduler.SequentialLR(
        opt, [torch.optim.lr_scheduler.LinearLR(opt, start_factor=0.01, end_factor=1.0, total_iters=5),
              torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=25, eta_min=floor),
              torch.optim.lr_scheduler.LambdaLR(opt, lambda e: floor / peak)],
        milestones=[5, 30]), 45)
    schedule_case("step_decay", 0.5, lambda opt: torch.optim.lr_scheduler.StepLR(
        opt, step_size=3, gamma=0.5), 12)
    # The same warmup + cosine as a LambdaLR of the closed forms (what a trainer steps per
    # iteration), to check the chained schedulers above against it.
    def lam(e):
        if e < 5:
            return 0.01 + 0.99 * e / 5
        if e < 30:
            return (floor + (peak - floor) * (1 + math.cos(math.pi * (e - 5) / 25)) / 2) / peak
        return floor / peak
    schedule_case("warmup_cosine_flat_lambda", peak,
                  lambda opt: torch.optim.lr_scheduler.LambdaLR(opt, lam), 45)


if __name__ == "__main__":
    main()
