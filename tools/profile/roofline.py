"""The roofline model that turns an emulated profile into a predicted step time on a card.

A MODEL, not a measurement: every figure it prints says so. Its constants are fixed here,
in one place, from the cards' data sheets and the issue that introduced the model (#47),
so that no change to sonata can make itself look faster by retuning them; the first card
lent calibrates them (tools/gpu_check.sh prints the model beside each measured time).

Per piece of device work (Williams, Waterman, Patterson, "Roofline", CACM 2009):
  kernel:   time = sectors moved * 32 B / HBM bandwidth, i.e. the bytes its lanes asked
            for divided by the bandwidth scaled by its sector efficiency (the emulator sees
            no arithmetic of hand-written kernels, and no caches: every request reaches HBM);
  library:  time = max(bytes / bandwidth, FLOPs / (efficiency * peak of its math));
  copy:     device-to-device at HBM bandwidth (read + write), host copies at PCIe's;
  memset:   bytes / bandwidth.
A step's device time is the sum over the compute streams' work (no overlap between
kernels; host copies are counted apart: they run on the copy engines, overlapped); the
host's cost per launch or library call times their number is a floor under the step:
predicted step = max(device time, host floor).
"""

CARDS = {
    "h100": {
        "name": "H100 SXM (model)",
        "hbm_bytes_per_s": 3.35e12,
        "pcie_bytes_per_s": 50e9,  # PCIe Gen5 x16, achieved host<->device copies
    },
    "h200": {
        "name": "H200 SXM (model)",
        "hbm_bytes_per_s": 4.8e12,
        "pcie_bytes_per_s": 50e9,
    },
}

# Dense peaks, FLOP/s, the same on both cards (H200 is an H100 with more, faster HBM).
PEAK_FLOPS = {
    "tensor16": 990e12,  # bf16 / fp16 tensor cores
    "tf32": 495e12,  # TF32 tensor cores
    "fp32": 67e12,  # SIMT fp32
    "fp64": 67e12,  # fp64 tensor cores
}

# The share of the math's peak each library reaches; "memory" work runs at HBM bandwidth.
LIBRARY_EFFICIENCY = {
    "cudnn.conv": 0.50,
    "cublas": 0.70,
    "cudnn.rnn": 0.25,
}

# Host time per kernel launch or library call: without CUDA graphs, and replayed in one.
HOST_SECONDS_PER_LAUNCH = 4e-6
HOST_SECONDS_PER_LAUNCH_GRAPH = 1e-6

SECTOR_BYTES = 32


def kernel_seconds(work, card):
    sectors = work.get("ld_sectors", 0) + work.get("st_sectors", 0)
    return sectors * SECTOR_BYTES / CARDS[card]["hbm_bytes_per_s"]


def library_seconds(work, card):
    bandwidth = CARDS[card]["hbm_bytes_per_s"]
    memory = work.get("bytes", 0.0) / bandwidth
    math = work.get("math", "memory")
    if math not in PEAK_FLOPS or work.get("flops", 0.0) <= 0:
        return memory
    efficiency = LIBRARY_EFFICIENCY.get(work.get("library", ""), 0.5)
    return max(memory, work["flops"] / (efficiency * PEAK_FLOPS[math]))


def copy_seconds(work, card):
    """(seconds, on a copy engine) for a copy."""
    name = work.get("name", "")
    count = work.get("bytes", 0.0)
    if "DeviceToDevice" in name or "device " in name:
        return 2 * count / CARDS[card]["hbm_bytes_per_s"], False
    return count / CARDS[card]["pcie_bytes_per_s"], True


def work_seconds(work, card):
    """(seconds, overlapped) of one piece of device work under the model."""
    kind = work.get("kind")
    if kind == "kernel":
        return kernel_seconds(work, card), False
    if kind == "library":
        return library_seconds(work, card), False
    if kind == "copy":
        return copy_seconds(work, card)
    if kind == "memset":
        return work.get("bytes", 0.0) / CARDS[card]["hbm_bytes_per_s"], False
    return 0.0, False


def host_floor_seconds(launches, graphs=False):
    per = HOST_SECONDS_PER_LAUNCH_GRAPH if graphs else HOST_SECONDS_PER_LAUNCH
    return launches * per
