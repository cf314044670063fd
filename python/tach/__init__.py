"""tach: measure how transformer models run, from Python.

    import tach
    model = tach.load_model("preset:bert-tiny")
    logits = model.classify([[101, 2023, 102]])          # numpy float32 [1, num_labels]
    run = tach.bench(model="preset:bert-tiny", batch_sizes=[1, 8], runs=5)
    df = run.to_pandas()                                  # one row per point

Models run on tach's engine (the same library as the `tach` executable); bench, profile, train,
run, estimate, analyze, compare, report and fill_mask take the CLI's options as keyword arguments and write the same
run directories. The metrics library (MetricTracker, TrainingLogger, ComprehensiveProfiler, ...)
works inside any training loop. docs/python.md shows the common flows.
"""
import sys as _sys


def _imported_for_engines():
    """Whether this import is on the way to tach.engines (`python -m tach.engines`, `import
    tach.engines...`): the engine workers run in a user's virtualenv, which may lack numpy and this
    package's compiled module, so the rest of the package then loads on first use instead."""
    frame = _sys._getframe(1)
    while frame is not None:
        # importlib's _find_and_load(name) and runpy's _get_module_details(mod_name) import the parent first.
        wanted = frame.f_locals.get("name") or frame.f_locals.get("mod_name")
        if isinstance(wanted, str) and (wanted == "tach.engines" or wanted.startswith("tach.engines.")):
            return True
        frame = frame.f_back
    return False


def _load_everything():
    try:
        import numpy  # noqa: F401  (the compiled module hands arrays in and out as numpy arrays)
    except ModuleNotFoundError as e:
        if e.name != "numpy":
            raise
        raise ModuleNotFoundError(
            "tach's Python module needs numpy (token ids and outputs are numpy arrays), and this Python has none: "
            "install it (python3 -m pip install numpy, or the system package python3-numpy)", name="numpy") from e

    from . import _tach
    from ._commands import (Error, InternalError, UsageError, analyze, bench, cli, command_args, compare, estimate,
                            fill_mask, info, profile, prune, report, run, shrink, train)
    from ._records import Run
    from ._tach import Model, Tokenizer, load_model, preset_names
    from .metrics import (ComprehensiveProfiler, GPUMemoryProfiler, GRPOMetricsTracker, MetricTracker,
                          ScoreDistributionTracker, ThroughputTracker, TrainingLogger, TrainingTimer)
    globals().update({k: v for k, v in locals().items() if k != "e"})


if _imported_for_engines():
    def __getattr__(name):  # PEP 562: the rest of the package (numpy, _tach) on the first use of a public name
        if name not in __all__:
            raise AttributeError(f"module 'tach' has no attribute {name!r}")
        _load_everything()
        del globals()["__getattr__"]
        return globals()[name]
else:
    _load_everything()

__version__ = "0.1.0"
__all__ = ["load_model", "Model", "Tokenizer", "preset_names", "bench", "profile", "train", "run", "estimate",
           "analyze", "compare", "report", "info", "fill_mask", "prune", "shrink", "cli", "command_args", "Run", "Error", "UsageError", "InternalError",
           "MetricTracker", "GRPOMetricsTracker", "ScoreDistributionTracker", "TrainingLogger", "TrainingTimer",
           "ThroughputTracker", "GPUMemoryProfiler", "ComprehensiveProfiler"]
