#!/usr/bin/env python3
"""Reads an emulated profile (SONATA_EMU_PROFILE=FILE, docs/emulator.md) and prints what
Nsight Systems and Nsight Compute would show of it, with the roofline model's predicted
time on a card (tools/profile/roofline.py: a model, labelled as one everywhere).

  emu_profile.py table FILE [--card h100|h200] [--warmup N] [--top N]
      per-kernel and per-library-call table of the steady-state steps, and a step summary
  emu_profile.py steps FILE            one line per step: launches, waits, allocations, model
  emu_profile.py json FILE             the same as JSON lines (one object per row)
  emu_profile.py plot FILE --out X.svg where the modelled step time goes, as a bar chart
  emu_profile.py check FILE --budget bench/gpu_budgets.json --model NAME
      exits 1, one line per broken budget, when a steady-state step breaks one
  emu_profile.py extrapolate FILE_A FILE_B --batches A B --to N
      the step at batch N from two profiles of the same program at batches A and B, each
      row's figures fitted as a + b * batch (exact for work per sample or per parameter;
      the emulator is too slow for a benchmark's full batch); labelled as such

A step is an NVTX range (--step-range, default the trainer's "sonata::step"); the first
--warmup steps (default 2: cudnnFind, pool growth) are left out, and the last
--exclude-last (a trainer's last step logs: host reads of the loss). Work is attributed to the
step in which the host enqueued it, whichever thread did.
"""
import argparse
import json
import os
import re
import subprocess
import sys
from collections import OrderedDict, defaultdict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import roofline  # noqa: E402

LAUNCH_KINDS = ("kernel", "library")
# Pinned host allocations are shown but not budgeted: a pinned pool reuses a block once the
# copy that used it is done, and the emulated device does its work only when the host
# waits, so a step without a wait finds every earlier copy pending and pins more memory,
# where on a card the copies of the batch before have long finished.
PINNED_NOTE = ("cudaHostAlloc (pinned, not budgeted: the emulated device runs copies only "
               "when the host waits)")
EMULATOR_SOURCE = re.compile(r"/emu/(runtime|exec|libs|include)/")
ISSUED_KINDS = ("kernel", "library", "copy", "memset")


class Profile:
    def __init__(self, path, step_range):
        self.modules = {}
        self.sites = {}
        self.enqueues = {}
        self.works = []
        self.waits = []
        self.allocs = []
        self.frees = []
        self.pinned = []
        self.step_count = 0
        self._read(path, step_range)

    def _read(self, path, step_range):
        stacks = defaultdict(list)  # thread -> open NVTX range names
        open_step = None  # (thread, depth) of the open step range
        current = None  # index of the open step
        with open(path) as lines:
            for number, line in enumerate(lines, 1):
                line = line.strip()
                if not line:
                    continue
                try:
                    e = json.loads(line)
                except json.JSONDecodeError:
                    # A process killed mid-write leaves a partial last line.
                    print(f"{path}:{number}: not JSON, ignored", file=sys.stderr)
                    continue
                ev = e.get("ev")
                th = e.get("th")
                if ev == "module":
                    self.modules[e["id"]] = e["path"]
                elif ev == "site":
                    self.sites[e["id"]] = [(m, int(o, 16)) for m, o in e["frames"]]
                elif ev == "push":
                    stacks[th].append(e["name"])
                    if e["name"] == step_range and open_step is None:
                        open_step = (th, len(stacks[th]))
                        current = self.step_count
                        self.step_count += 1
                elif ev == "pop":
                    if stacks[th]:
                        if open_step == (th, len(stacks[th])):
                            open_step, current = None, None
                        stacks[th].pop()
                elif ev == "enqueue":
                    e["step"] = current
                    e["range"] = stacks[th][-1] if stacks[th] else ""
                    self.enqueues[e["seq"]] = e
                elif ev == "work":
                    queued = self.enqueues.get(e["seq"], {})
                    e["step"] = queued.get("step")
                    e["range"] = queued.get("range", "")
                    self.works.append(e)
                elif ev in ("wait", "alloc", "free"):
                    e["step"] = current
                    if ev == "alloc" and e["call"] == "cudaHostAlloc":
                        self.pinned.append(e)  # host memory: counted apart (see PINNED_NOTE)
                    else:
                        {"wait": self.waits, "alloc": self.allocs, "free": self.frees}[ev].append(e)

    def steady_steps(self, warmup, exclude_last=0):
        return list(range(min(warmup, self.step_count), max(self.step_count - exclude_last, 0)))

    # Host call sites: the first frames outside the emulator, resolved with addr2line.
    def resolve(self, site_ids):
        wanted = defaultdict(set)
        for site in site_ids:
            for module, offset in self.sites.get(site, []):
                wanted[module].add(offset)
        self._names = getattr(self, "_names", {})
        for module, offsets in wanted.items():
            offsets = sorted(o for o in offsets if (module, o) not in self._names)
            path = self.modules.get(module)
            if not offsets or not path:
                continue
            try:
                out = subprocess.run(
                    ["addr2line", "-f", "-C", "-e", path] + [hex(o) for o in offsets],
                    capture_output=True, text=True, timeout=120).stdout.splitlines()
            except (OSError, subprocess.TimeoutExpired):
                out = []
            for i, offset in enumerate(offsets):
                if 2 * i + 1 < len(out):
                    self._names[(module, offset)] = (out[2 * i], out[2 * i + 1])

    def site_text(self, site, frames=2):
        names = getattr(self, "_names", {})
        shown = []
        for module, offset in self.sites.get(site, []):
            function, where = names.get((module, offset), ("??", "??"))
            if EMULATOR_SOURCE.search(where) or not where.startswith("/") or "/usr/" in where:
                continue  # the emulator's own frames, the C library's, unresolved ones
            shown.append(f"{function.split('(')[0]} ({short_path(where)})")
            if len(shown) == frames:
                break
        return " <- ".join(shown) if shown else f"site {site} (unresolved)"


def short_path(where):
    for root in ("/kernels/", "/engine/", "/train/", "/models/", "/data/", "/comm/", "/base/",
                 "/tests/", "/tools/", "/bench/"):
        at = where.find(root)
        if at >= 0:
            return where[at + 1:].split(" (discriminator")[0]
    return where


def kernel_name(work):
    name = work["name"]
    return name[len("kernel "):] if name.startswith("kernel ") else name


def efficiency(ideal, actual):
    return ideal / actual if actual else 1.0


def step_rows(profile, card, graphs=False):
    rows = []
    for step in range(profile.step_count):
        works = [w for w in profile.works if w["step"] == step]
        issued = [q for q in profile.enqueues.values() if q["step"] == step]
        device = overlapped = 0.0
        for w in works:
            seconds, on_copy_engine = roofline.work_seconds(w, card)
            if on_copy_engine:
                overlapped += seconds
            else:
                device += seconds
        launches = sum(q["kind"] in LAUNCH_KINDS for q in issued)
        host = roofline.host_floor_seconds(sum(q["kind"] in ISSUED_KINDS for q in issued), graphs)
        rows.append(OrderedDict(
            step=step,
            kernels=sum(q["kind"] == "kernel" for q in issued),
            library_calls=sum(q["kind"] == "library" for q in issued),
            launches=launches,
            copies=sum(q["kind"] == "copy" for q in issued),
            memsets=sum(q["kind"] == "memset" for q in issued),
            host_waits=sum(w["step"] == step for w in profile.waits),
            driver_allocs=sum(a["step"] == step for a in profile.allocs),
            pinned_allocs=sum(a["step"] == step for a in profile.pinned),
            driver_frees=sum(f["step"] == step for f in profile.frees),
            model_device_ms=device * 1e3,
            model_copy_engine_ms=overlapped * 1e3,
            model_host_floor_ms=host * 1e3,
            model_step_ms=max(device, host) * 1e3,
            model=roofline.CARDS[card]["name"],
        ))
    return rows


def kernel_rows(profile, steps, card):
    """Per kernel or library call over `steps`, averaged per step."""
    groups = OrderedDict()
    chosen = set(steps)
    for w in profile.works:
        if w["step"] not in chosen or w["kind"] not in ("kernel", "library", "copy", "memset"):
            continue
        key = (w["kind"], kernel_name(w) if w["kind"] == "kernel" else w["name"].split(" (")[0])
        g = groups.setdefault(key, defaultdict(float))
        g["count"] += 1
        for field in ("ld_req", "ld_bytes", "ld_sectors", "ld_ideal", "st_req", "st_bytes",
                      "st_sectors", "st_ideal", "sh_req", "sh_wavefronts", "sh_ideal",
                      "lane_acc", "narrow_acc", "flops", "bytes"):
            g[field] += w.get(field, 0)
        g["seconds"] += roofline.work_seconds(w, card)[0]
        g.setdefault("ranges", set()).add(w["range"])
    per = max(len(chosen), 1)
    total = sum(g["seconds"] for g in groups.values()) or 1.0
    rows = []
    for (kind, name), g in groups.items():
        row = OrderedDict(kind=kind, name=name, per_step=g["count"] / per)
        if kind == "kernel":
            row.update(
                load_bytes=g["ld_bytes"] / per, store_bytes=g["st_bytes"] / per,
                load_efficiency=efficiency(g["ld_ideal"], g["ld_sectors"]),
                store_efficiency=efficiency(g["st_ideal"], g["st_sectors"]),
                narrow_share=g["narrow_acc"] / g["lane_acc"] if g["lane_acc"] else 0.0,
                bank_conflicts=(g["sh_wavefronts"] - g["sh_ideal"]) / per)
        else:
            row.update(flops=g["flops"] / per, bytes=g["bytes"] / per)
        row.update(model_ms=g["seconds"] / per * 1e3, share=g["seconds"] / total,
                   ranges=sorted(r for r in g["ranges"] if r)[:3])
        rows.append(row)
    rows.sort(key=lambda r: -r["model_ms"])
    return rows


def human(n):
    for unit in ("", "K", "M", "G", "T"):
        if abs(n) < 1000:
            return f"{n:.3g}{unit}"
        n /= 1000
    return f"{n:.3g}P"


def print_table(profile, args):
    steps = profile.steady_steps(args.warmup, args.exclude_last)
    card = args.card
    print(f"# emulated profile: {profile.step_count} steps, steady state = steps "
          f"{steps[0] if steps else '-'}..{steps[-1] if steps else '-'}; times are the roofline "
          f"MODEL of an {roofline.CARDS[card]['name']}, not measurements")
    rows = kernel_rows(profile, steps, card)
    print(f"{'kind':8} {'per step':>8} {'model ms':>9} {'share':>6} {'ld eff':>6} {'st eff':>6} "
          f"{'narrow':>6} {'bank':>6} {'bytes':>7} {'FLOPs':>7}  name")
    for r in rows[: args.top]:
        if r["kind"] == "kernel":
            data = (f"{r['load_efficiency']:6.0%} {r['store_efficiency']:6.0%} "
                    f"{r['narrow_share']:6.0%} {human(r['bank_conflicts']):>6} "
                    f"{human(r['load_bytes'] + r['store_bytes']):>7} {'':>7}")
        else:
            data = f"{'':6} {'':6} {'':6} {'':6} {human(r['bytes']):>7} {human(r['flops']):>7}"
        print(f"{r['kind']:8} {r['per_step']:8.1f} {r['model_ms']:9.4f} {r['share']:6.1%} "
              f"{data}  {r['name'][:90]}")
    print_steps(profile, args, steps)


def print_steps(profile, args, only=None):
    rows = step_rows(profile, args.card, args.graphs)
    print(f"{'step':>4} {'kernels':>7} {'lib':>5} {'copies':>6} {'waits':>5} {'allocs':>6} "
          f"{'pinned':>6} {'device ms':>9} {'host ms':>8} {'MODEL step ms':>13}")
    for r in rows:
        if only is not None and r["step"] not in only:
            continue
        print(f"{r['step']:4d} {r['kernels']:7d} {r['library_calls']:5d} {r['copies']:6d} "
              f"{r['host_waits']:5d} {r['driver_allocs']:6d} {r['pinned_allocs']:6d} "
              f"{r['model_device_ms']:9.3f} "
              f"{r['model_host_floor_ms']:8.3f} {r['model_step_ms']:13.3f}")
    sites = {e["site"] for e in profile.waits + profile.allocs
             if only is None or e["step"] in only}
    profile.resolve(sites)
    if any(only is None or e["step"] in only for e in profile.pinned):
        print(f"  pinned: {PINNED_NOTE}")
    for kind, events in (("host wait", profile.waits), ("driver alloc", profile.allocs)):
        for e in events:
            if only is not None and e["step"] not in only:
                continue
            print(f"  step {e['step']}: {kind} {e['call']} at {profile.site_text(e['site'])}")


def print_json(profile, args):
    steps = profile.steady_steps(args.warmup, args.exclude_last)
    for row in kernel_rows(profile, steps, args.card):
        print(json.dumps({"type": "kernel", "model": True, **row}))
    for row in step_rows(profile, args.card, args.graphs):
        print(json.dumps({"type": "step", "steady": row["step"] in steps, **row}))


def plot(profile, args):
    steps = profile.steady_steps(args.warmup, args.exclude_last)
    rows = kernel_rows(profile, steps, args.card)[: args.top]
    width, bar_h, left = 1000, 18, 420
    height = 40 + bar_h * len(rows) + 20
    biggest = max((r["model_ms"] for r in rows), default=1.0) or 1.0
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'font-family="monospace" font-size="11">',
           f'<text x="8" y="18" font-size="13">Where a steady-state step goes: roofline MODEL of '
           f'an {roofline.CARDS[args.card]["name"]} from the emulated profile (not measured)'
           f'</text>']
    for i, r in enumerate(rows):
        y = 32 + i * bar_h
        w = (width - left - 120) * r["model_ms"] / biggest
        color = "#4a7ebb" if r["kind"] == "kernel" else "#d08a2c"
        if r["kind"] == "kernel" and min(r["load_efficiency"], r["store_efficiency"]) < 0.8:
            color = "#c0392b"
        label = r["name"].replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")[:60]
        out.append(f'<text x="8" y="{y + 12}">{label}</text>')
        out.append(f'<rect x="{left}" y="{y + 2}" width="{w:.1f}" height="{bar_h - 4}" '
                   f'fill="{color}"/>')
        out.append(f'<text x="{left + w + 4:.1f}" y="{y + 12}">{r["model_ms"]:.4f} ms '
                   f'x{r["per_step"]:.0f}</text>')
    out.append(f'<text x="8" y="{height - 6}">blue: kernel, orange: library call, red: a kernel '
               f'under 80 % sector efficiency</text></svg>')
    with open(args.out, "w") as f:
        f.write("\n".join(out) + "\n")


def check(profile, args):
    with open(args.budget) as f:
        budgets = json.load(f)
    if args.model not in budgets:
        sys.exit(f"emu_profile: {args.budget} has no budget for '{args.model}' "
                 f"(it has: {', '.join(sorted(k for k in budgets if not k.startswith('_')))})")
    budget = budgets[args.model]
    warmup = budget.get("warmup_steps", args.warmup)
    # A run's last step logs (a host read of the loss, as a --log-every step does).
    steps = profile.steady_steps(warmup, budget.get("exclude_last_steps", 0))
    broken = []
    if not steps:
        broken.append(f"no steady-state step in the profile ({profile.step_count} steps, "
                      f"{warmup} of warm-up): nothing to check")
    rows = step_rows(profile, args.card)
    for step in steps:
        r = rows[step]
        if r["launches"] > budget["max_launches_per_step"]:
            broken.append(f"step {step}: {r['launches']} kernel launches + library calls, above "
                          f"the ceiling {budget['max_launches_per_step']}")
    chosen = set(steps)
    profile.resolve({e["site"] for e in profile.waits + profile.allocs if e["step"] in chosen})
    for kind, events, limit in (("host wait", profile.waits, "max_host_waits_per_step"),
                                ("driver allocation", profile.allocs,
                                 "max_driver_allocs_per_step")):
        per_step = defaultdict(list)
        for e in events:
            if e["step"] in chosen:
                per_step[e["step"]].append(e)
        for step, found in sorted(per_step.items()):
            if len(found) > budget[limit]:
                for e in found:
                    broken.append(f"step {step}: {kind} {e['call']} at "
                                  f"{profile.site_text(e['site'], 3)} ({limit} "
                                  f"{budget[limit]})")
    floor = budget.get("min_sector_efficiency", 0.8)
    allowed = budget.get("allow", {})
    for r in kernel_rows(profile, steps, args.card):
        if r["kind"] != "kernel":
            continue
        worst = min(r["load_efficiency"], r["store_efficiency"])
        if worst >= floor or any(prefix in r["name"] for prefix in allowed):
            continue
        broken.append(f"kernel {r['name']}: sector efficiency loads {r['load_efficiency']:.0%}, "
                      f"stores {r['store_efficiency']:.0%}, under {floor:.0%} and not in the "
                      f"allow-list of '{args.model}'")
    for line in broken:
        print(f"budget broken: {line}")
    if broken:
        sys.exit(1)
    worst_launches = max((rows[s]["launches"] for s in steps), default=0)
    print(f"budgets of '{args.model}' hold over steps {steps[0]}..{steps[-1]}: at most "
          f"{worst_launches} launches + library calls a step (ceiling "
          f"{budget['max_launches_per_step']}), no host wait, no driver allocation, every "
          f"kernel at {floor:.0%} sector efficiency or allow-listed")


def extrapolate(args):
    a_batch, b_batch = args.batches
    card = args.card
    profiles = [Profile(path, args.step_range) for path in args.files]
    tables = []
    for profile in profiles:
        steps = profile.steady_steps(args.warmup, args.exclude_last)
        tables.append({(r["kind"], r["name"]): r for r in kernel_rows(profile, steps, card)})
        launches = {step_rows(profile, card)[s]["launches"] for s in steps}
        issued = {sum(step_rows(profile, card)[s][k] for k in ("kernels", "library_calls",
                                                               "copies", "memsets"))
                  for s in steps}
        tables[-1]["_launches"] = max(launches)
        tables[-1]["_issued"] = max(issued)
    if tables[0]["_launches"] != tables[1]["_launches"]:
        print(f"note: launches per step differ between the batches ({tables[0]['_launches']} "
              f"and {tables[1]['_launches']}): the larger is used", file=sys.stderr)
    rows = []
    for key in set(tables[0]) | set(tables[1]):
        if isinstance(key, str):
            continue
        ra, rb = tables[0].get(key), tables[1].get(key)
        ma = ra["model_ms"] if ra else 0.0
        mb = rb["model_ms"] if rb else 0.0
        slope = (mb - ma) / (b_batch - a_batch)
        at = max(ma + slope * (args.to - a_batch), 0.0)
        rows.append((at, key, (ra or rb)))
    rows.sort(key=lambda r: -r[0])
    device_ms = sum(r[0] for r in rows if r[1][0] != "copy")
    launches = max(tables[0]["_launches"], tables[1]["_launches"])
    issued = max(tables[0]["_issued"], tables[1]["_issued"])
    host_ms = roofline.host_floor_seconds(issued, args.graphs) * 1e3
    label = (f"MODEL of an {roofline.CARDS[card]['name']}, extrapolated linearly in the batch "
             f"to {args.to} from emulated batches {a_batch} and {b_batch}: not a measurement")
    if args.json:
        for at, key, r in rows:
            print(json.dumps({"type": "kernel", "model": True, "extrapolated_to": args.to,
                              "kind": key[0], "name": key[1], "model_ms": at}))
        print(json.dumps({"type": "step", "model": True, "extrapolated_to": args.to,
                          "launches": launches, "issued": issued, "model_device_ms": device_ms,
                          "model_host_floor_ms": host_ms,
                          "model_step_ms": max(device_ms, host_ms), "label": label}))
        return
    print(f"# {label}")
    print(f"{'kind':8} {'model ms':>9} {'share':>6} {'ld eff':>6} {'st eff':>6}  name")
    for at, key, r in rows[: args.top]:
        eff = (f"{r['load_efficiency']:6.0%} {r['store_efficiency']:6.0%}"
               if key[0] == "kernel" else f"{'':6} {'':6}")
        print(f"{key[0]:8} {at:9.4f} {at / (device_ms or 1):6.1%} {eff}  {key[1][:90]}")
    print(f"step at batch {args.to}: {launches} launches + library calls ({issued} with copies), "
          f"device {device_ms:.3f} ms, host floor {host_ms:.3f} ms, MODEL step "
          f"{max(device_ms, host_ms):.3f} ms")


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command",
                        choices=["table", "steps", "json", "plot", "check", "extrapolate"])
    parser.add_argument("files", nargs="+", metavar="file")
    parser.add_argument("--card", choices=sorted(roofline.CARDS), default="h100")
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--exclude-last", type=int, default=0,
                        help="leave out the last N steps too (a run's last step logs)")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--step-range", default="sonata::step")
    parser.add_argument("--graphs", action="store_true",
                        help="model the host cost of a replayed CUDA graph")
    parser.add_argument("--out", help="plot: the SVG file")
    parser.add_argument("--budget", help="check: the budgets file")
    parser.add_argument("--model", help="check: the budget's name")
    parser.add_argument("--batches", type=int, nargs=2, help="extrapolate: the two batches")
    parser.add_argument("--to", type=int, help="extrapolate: the batch to predict")
    parser.add_argument("--json", action="store_true", help="extrapolate: JSON lines")
    args = parser.parse_args()
    if args.command == "extrapolate":
        if len(args.files) != 2 or not args.batches or not args.to:
            sys.exit("emu_profile: extrapolate needs two files, --batches A B and --to N")
        extrapolate(args)
        return
    if len(args.files) != 1:
        sys.exit(f"emu_profile: {args.command} reads one profile")
    args.file = args.files[0]
    if not os.path.exists(args.file):
        sys.exit(f"emu_profile: no profile at '{args.file}' (run under SONATA_EMU_PROFILE=FILE "
                 f"on a -DSONATA_CUDA=EMU build)")
    profile = Profile(args.file, args.step_range)
    if args.command == "table":
        print_table(profile, args)
    elif args.command == "steps":
        print_steps(profile, args)
    elif args.command == "json":
        print_json(profile, args)
    elif args.command == "plot":
        if not args.out:
            sys.exit("emu_profile: plot needs --out FILE.svg")
        plot(profile, args)
    else:
        if not args.budget or not args.model:
            sys.exit("emu_profile: check needs --budget FILE and --model NAME")
        check(profile, args)


if __name__ == "__main__":
    main()
