"""tools/plot_metrics.py against a stand-in for matplotlib (which need not be installed):
error rates and accuracies are drawn in percent with a labelled axis, the log's fractions
are left as they are, other figures are drawn as logged."""
import importlib.util
import json
import os
import sys
import tempfile
import types
import unittest

TOOL = os.path.join(os.path.dirname(__file__), "..", "..", "tools", "plot_metrics.py")


class Axis:
    def __init__(self):
        self.lines, self.title, self.ylabel = [], None, None

    def plot(self, x, y, **kwargs):
        self.lines.append((list(x), list(y)))

    def set_title(self, text):
        self.title = text

    def set_ylabel(self, text):
        self.ylabel = text

    def __getattr__(self, name):  # legend, grid, set_xlabel, set_yscale, axis
        return lambda *args, **kwargs: None


class Axes:
    def __init__(self, count):
        self.flat = [Axis() for _ in range(count)]


def fake_matplotlib(drawn):
    pyplot = types.ModuleType("matplotlib.pyplot")

    def subplots(rows, columns, **kwargs):
        axes = Axes(rows * columns)
        drawn.extend(axes.flat)
        figure = types.SimpleNamespace(suptitle=lambda *a: None, tight_layout=lambda: None,
                                       savefig=lambda *a, **k: None)
        return figure, axes

    pyplot.subplots = subplots
    matplotlib = types.ModuleType("matplotlib")
    matplotlib.use = lambda name: None
    matplotlib.pyplot = pyplot
    return {"matplotlib": matplotlib, "matplotlib.pyplot": pyplot}


class PlotMetricsTest(unittest.TestCase):
    def test_rates_in_percent(self):
        records = [
            {"event": "train", "step": 1, "loss": 2.0, "lr": 0.01},
            {"event": "eval", "split": "val", "step": 1, "cer": 0.0027, "beam_wer": 0.5,
             "loss": 1.5},
        ]
        with tempfile.TemporaryDirectory() as folder:
            log = os.path.join(folder, "metrics.jsonl")
            with open(log, "w", encoding="utf-8") as out:
                out.write("\n".join(json.dumps(r) for r in records) + "\n")
            drawn = []
            saved_modules = {k: sys.modules.get(k) for k in ("matplotlib", "matplotlib.pyplot")}
            sys.modules.update(fake_matplotlib(drawn))
            saved_argv = sys.argv
            sys.argv = ["plot_metrics.py", log, "--out", os.path.join(folder, "c.png")]
            try:
                spec = importlib.util.spec_from_file_location("plot_metrics", TOOL)
                module = importlib.util.module_from_spec(spec)
                spec.loader.exec_module(module)
                module.main()
            finally:
                sys.argv = saved_argv
                for name, value in saved_modules.items():
                    if value is None:
                        sys.modules.pop(name, None)
                    else:
                        sys.modules[name] = value
        by_title = {axis.title: axis for axis in drawn if axis.title}
        self.assertEqual(by_title["eval CER"].lines, [([1], [0.27])])
        self.assertEqual(by_title["eval CER"].ylabel, "CER (%)")
        self.assertEqual(by_title["eval beam WER"].lines, [([1], [50.0])])
        self.assertEqual(by_title["eval beam WER"].ylabel, "beam WER (%)")
        self.assertEqual(by_title["eval loss"].lines, [([1], [1.5])])
        self.assertEqual(by_title["train loss"].lines, [([1], [2.0])])


if __name__ == "__main__":
    unittest.main()
