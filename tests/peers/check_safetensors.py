"""safetensors both ways: the real package reads what sonata writes, and sonata reads what the
package writes.

On a tiny corpus of tone clips written here, build/trainer makes three checkpoints: a DS2
(speech), a narrow VGG19_BN (classification of 1 s slices) and the same DS2 as a two-stage
pipeline (mpiexec -np 2 --pipeline-stages 2, whose files rank 0 writes from both stages'
tensors; left out, with a line, where mpiexec is absent).

1. Every .safetensors file of each checkpoint opens with safetensors.safe_open (framework
   "pt" and "numpy"), every tensor reads, torch and numpy agree bit for bit, and the
   metadata is a str -> str map. The pipelined checkpoint's model holds the same names,
   shapes and dtypes as the single process's.
2. Each checkpoint's model.safetensors, read by safetensors.torch.load_file and written again
   by safetensors.torch.save_file (its own header layout and alignment), replaces the
   original in a copy of the checkpoint: transcribe (beam 4) and classify print exactly what
   they print from the original.
3. The same rewritten file through the trainer's --init-from with --eval-only: the line
   saying what was loaded names every tensor, and the evaluation's metrics equal those of
   --init-from on the original file.
"""
import json
import os
import shutil
import subprocess
import tempfile

import numpy as np
import soundfile
import torch
from safetensors import safe_open
from safetensors.torch import load_file, save_file

TEXTS = ["a b", "ab", "ba", "b a", "aa b", "b"]
MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
           "OMPI_MCA_rmaps_base_oversubscribe": "1", "OMPI_MCA_mpi_yield_when_idle": "1"}
DS2 = ["--model", "ds2", "--conv-channels", "4", "--hidden", "16", "--layers", "1",
       "--n-mels", "40"]
VGG = ["--model", "vgg19_bn", "--width", "0.0625", "--dropout", "0", "--in-channels", "1",
       "--slice-seconds", "1", "--image-height", "32", "--image-width", "32"]
COMMON = ["--batch-size", "2", "--device", "cpu", "--workers", "1", "--seed", "7"]
QUIET = ["--progress", "none"]


def write_corpus(folder):
    rng = np.random.default_rng(20261207)
    clips = []
    for i, text in enumerate(TEXTS):
        t = np.arange(20000 if i % 2 else 16000) / 16000
        y = 0.3 * np.sin(2 * np.pi * (300 + 150 * i) * t) + 0.01 * rng.standard_normal(len(t))
        path = os.path.join(folder, "clip%d.wav" % i)
        soundfile.write(path, y.astype(np.float32), 16000)
        clips.append(path)
    with open(os.path.join(folder, "speech.tsv"), "w") as f:
        f.writelines("%s\t%s\n" % (c, t) for c, t in zip(clips, TEXTS))
    with open(os.path.join(folder, "genre.tsv"), "w") as f:
        f.writelines("%s\t%s\n" % (c, "low" if i < 3 else "high") for i, c in enumerate(clips))
    return clips


def call(command, env=None):
    done = subprocess.run(command, capture_output=True, text=True,
                          env=dict(os.environ, **(env or {})))
    if done.returncode != 0:
        raise RuntimeError("%s failed (exit %d): %s" % (
            " ".join(command), done.returncode, done.stderr.strip()[-2000:]))
    return done.stdout, done.stderr


def step_folder(checkpoint_dir):
    return os.path.realpath(os.path.join(checkpoint_dir, "latest"))


def read_all(path):
    """name -> (torch tensor, numpy array) through both frameworks; checks they agree."""
    problems, tensors = [], {}
    with safe_open(path, framework="pt") as pt, safe_open(path, framework="numpy") as np_file:
        metadata = pt.metadata() or {}
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()):
            problems.append("%s: metadata is not str -> str" % path)
        if sorted(pt.keys()) != sorted(np_file.keys()):
            problems.append("%s: torch and numpy list other names" % path)
        for name in pt.keys():
            a, b = pt.get_tensor(name), np_file.get_tensor(name)
            same = a.dtype != torch.bfloat16 and a.numpy().tobytes() == b.tobytes()
            if not same and a.dtype != torch.bfloat16:
                problems.append("%s: %s differs between torch and numpy" % (path, name))
            tensors[name] = a
    return tensors, metadata, problems


def rewritten(folder, into):
    """A copy of a step folder whose model.safetensors save_file wrote."""
    shutil.copytree(folder, into)
    state = load_file(os.path.join(folder, "model.safetensors"))
    os.remove(os.path.join(into, "model.safetensors"))
    save_file(state, os.path.join(into, "model.safetensors"))
    return into, len(state)


def run(build_dir):
    failures = []
    trainer = os.path.join(build_dir, "trainer")
    with tempfile.TemporaryDirectory() as tmp:
        clips = write_corpus(tmp)
        speech, genre = os.path.join(tmp, "speech.tsv"), os.path.join(tmp, "genre.tsv")
        runs = {"ds2": DS2 + ["--train", speech, "--val", speech],
                "vgg": VGG + ["--train", genre, "--val", genre]}
        checkpoints = {}
        for name, options in runs.items():
            checkpoints[name] = os.path.join(tmp, name)
            call([trainer] + options + COMMON + QUIET + ["--epochs", "1",
                                                 "--checkpoint-dir", checkpoints[name]])
        mpiexec = shutil.which("mpiexec")
        if mpiexec:
            checkpoints["ds2_pipeline"] = os.path.join(tmp, "ds2_pipeline")
            call([mpiexec, "-np", "2", trainer] + runs["ds2"] + COMMON + QUIET + [
                "--epochs", "1", "--pipeline-stages", "2", "--accum-steps", "2",
                "--checkpoint-dir", checkpoints["ds2_pipeline"]], env=MPI_ENV)
        else:
            print("no mpiexec: the pipelined checkpoint is left out")

        # 1. The package reads every file sonata wrote.
        models = {}
        for name, directory in checkpoints.items():
            folder = step_folder(directory)
            for file in sorted(os.listdir(folder)):
                if not file.endswith(".safetensors"):
                    continue
                tensors, metadata, problems = read_all(os.path.join(folder, file))
                failures += problems
                print("%s/%s: %d tensors, %d metadata keys read by safetensors %s" % (
                    name, file, len(tensors), len(metadata), "(pt, numpy)"))
                if file == "model.safetensors":
                    models[name] = {k: (tuple(v.shape), v.dtype) for k, v in tensors.items()}
        if "ds2_pipeline" in models and models["ds2_pipeline"] != models["ds2"]:
            failures.append("the pipelined DS2 model's names, shapes or dtypes differ from one "
                            "process's")

        # 2. sonata reads what save_file wrote: transcribe and classify print the same.
        tools = {"ds2": [os.path.join(build_dir, "transcribe"), "--beam-width", "4"],
                 "vgg": [os.path.join(build_dir, "classify")]}
        for name, tool in tools.items():
            original = step_folder(checkpoints[name])
            copy, count = rewritten(original, os.path.join(tmp, name + "_save_file"))
            outputs = [call(tool + ["--checkpoint", c, "--device", "cpu"] + clips)[0]
                       for c in (original, copy)]
            print("%s: %s on the save_file copy (%d tensors): %s" % (
                name, os.path.basename(tool[0]),
                count, "same output" if outputs[0] == outputs[1] else "DIFFERENT output"))
            if outputs[0] != outputs[1] or not outputs[0].strip():
                failures.append("%s: %s printed %r from the original, %r from the save_file "
                                "copy" % (name, os.path.basename(tool[0]), outputs[0][:200],
                                          outputs[1][:200]))

            # 3. --init-from the rewritten file: every tensor loaded, the same evaluation.
            metrics = []
            for source in (original, copy):
                out_dir = os.path.join(tmp, "%s_eval_%d" % (name, len(metrics)))
                # --progress lines: the line saying what was loaded goes through it.
                stdout, stderr = call([trainer] + runs[name] + COMMON + [
                    "--progress", "lines", "--eval-only", "--init-from", os.path.join(source, "model.safetensors"),
                    "--checkpoint-dir", out_dir])
                loaded = [l for l in (stdout + stderr).splitlines() if l.startswith("initialised ")]
                with open(os.path.join(out_dir, "metrics.jsonl")) as f:
                    lines = [json.loads(l) for l in f if l.strip()]
                metrics.append([{k: v for k, v in l.items() if "time" not in k and
                                 not k.endswith("_s")} for l in lines])
                if source == copy:
                    print("%s --init-from the save_file copy: %s" % (
                        name, loaded[0] if loaded else "(no line about loading)"))
                    if not loaded or not loaded[0].startswith("initialised %d of %d " % (count, count)):
                        failures.append("%s: --init-from did not say it loaded all %d tensors: "
                                        "%s" % (name, count, loaded[:1]))
            if metrics[0] != metrics[1]:
                failures.append("%s: --eval-only metrics differ: %s vs %s" % (
                    name, metrics[0], metrics[1]))
    return failures
