#!/usr/bin/env python3
"""No AVX outside the CPU capability namespaces (kernels/cpu/capability_region.h).

  check_cpu_isa.py [--expect-wide] FILE...   (objects, static libraries or executables)

Disassembles each FILE (objdump -d -C) and fails when a function outside
sonata::kernels::cpu::cap_avx2 / cap_avx512 uses an AVX instruction (VEX or EVEX encoded: a
mnemonic starting with "v", a ymm, zmm or mask register), or a cap_avx2 function uses an
AVX-512 one. Such a function is what an AVX2 (or pre-AVX) machine dies on with "illegal
instruction": typically an inline function or template of a header that a kernel file
compiled for AVX-512 emitted out of line, and that the linker kept for the whole program.
--expect-wide: also fail unless some cap_avx2 function uses ymm registers and some
cap_avx512 function zmm registers (the wide copies were compiled wide at all).
"""
import re
import subprocess
import sys

FUNCTION = re.compile(r"^[0-9a-f]+ <(.*)>:$")
INSTRUCTION = re.compile(r"^\s+[0-9a-f]+:\s+(\S+)\s*(.*)$")
AVX512_REGISTER = re.compile(r"%zmm|%k[1-7]\b|%[xy]mm(1[6-9]|2[0-9]|3[01])\b|\{%k|\{evex\}")
AVX512_ONLY = ("vpternlog", "vpermt2", "vpermi2", "vrndscale", "vscalef", "vgetexp", "vgetmant",
               "vfixupimm", "vcvtusi2", "vcvtudq2", "vcvtuqq2", "vcvtqq2", "vcvtps2udq",
               "vcvttps2udq", "vcvtps2qq", "vcvttps2qq", "vrcp14", "vrsqrt14", "vpcompress",
               "vcompress", "vpexpand", "vexpand", "vpmovq", "vpmovd", "vpmovwb", "vpmovsdb", "vpmovsdw", "vpmovsqb",
               "vpmovsqw", "vpmovsqd", "vpmovswb", "vpmovus",
               "vpabsq", "vpmaxsq", "vpmaxuq", "vpminsq", "vpminuq", "vpsraq", "vprol", "vpror",
               "vpconflict", "vplzcnt", "valign", "vblendm", "vpblendm", "vshuff", "vshufi",
               "vextractf32x", "vextractf64x", "vextracti32x", "vextracti64x", "vinsertf32x",
               "vinsertf64x", "vinserti32x", "vinserti64x", "vbroadcastf32x", "vbroadcasti32x",
               "vbroadcastf64x", "vbroadcasti64x", "vreduce", "vrange", "vfpclass", "kmov",
               "kand", "kor", "kxor", "knot", "kshift", "kortest", "ktest", "kadd", "kunpck")
LEVELS = ["baseline", "avx2", "avx512"]


def needed_level(mnemonic, operands):
    if AVX512_REGISTER.search(operands) or mnemonic.startswith(AVX512_ONLY):
        return 2
    if mnemonic.startswith("v") and mnemonic not in ("verr", "verw") or "%ymm" in operands:
        return 1
    return 0


def allowed_level(function):
    if "cap_avx512::" in function:
        return 2
    if "cap_avx2::" in function:
        return 1
    return 0


def check(path, wide_seen):
    listing = subprocess.run(["objdump", "-d", "-C", "--no-show-raw-insn", path],
                             capture_output=True, text=True, check=True).stdout
    problems = []
    function = "?"
    reported = set()
    for line in listing.splitlines():
        header = FUNCTION.match(line)
        if header:
            function = header.group(1)
            continue
        match = INSTRUCTION.match(line)
        if not match:
            continue
        mnemonic, operands = match.group(1), match.group(2)
        # objdump prints prefixes ("lock", "rep", "notrack", "bnd") before the mnemonic.
        if mnemonic in ("lock", "rep", "repz", "repnz", "notrack", "bnd", "data16") and operands:
            mnemonic, _, operands = operands.partition(" ")
        level = needed_level(mnemonic, operands)
        allowed = allowed_level(function)
        if allowed == 1 and "%ymm" in operands:
            wide_seen.add(1)
        if allowed == 2 and "%zmm" in operands:
            wide_seen.add(2)
        if level > allowed and function not in reported:
            reported.add(function)
            problems.append(f"{path}: {function}: {mnemonic} {operands} needs {LEVELS[level]}, "
                            f"but the function is {LEVELS[allowed]} code")
    return problems


def main():
    args = sys.argv[1:]
    expect_wide = "--expect-wide" in args
    files = [a for a in args if a != "--expect-wide"]
    if not files:
        print(__doc__)
        return 2
    problems, wide_seen = [], set()
    for path in files:
        problems += check(path, wide_seen)
    for problem in problems[:40]:
        print(problem)
    if len(problems) > 40:
        print(f"... and {len(problems) - 40} more")
    if expect_wide:
        for level in (1, 2):
            if level not in wide_seen:
                problems.append(level)
                print(f"no cap_{LEVELS[level]} function uses {'ymm' if level == 1 else 'zmm'} "
                      "registers: the wide copies were not compiled wide")
    if problems:
        return 1
    print(f"check_cpu_isa: {len(files)} file(s): no AVX outside the capability namespaces")
    return 0


if __name__ == "__main__":
    sys.exit(main())
