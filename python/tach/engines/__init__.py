"""Engine workers: the engines users deploy (PyTorch eager, torch.compile, ONNX Runtime), each run
by `tach bench --engine` in its own process that speaks a small line protocol over a pipe:

    python3 -m tach.engines --engine torch      # then one JSON request per line on stdin

docs/formats.md ("Engine worker protocol") has the protocol; docs/python.md how to run a worker by
hand. This package uses Python's standard library only until an engine is chosen, so it imports in
any virtualenv (without numpy or tach's compiled module); each engine module imports its own
packages when it loads.
"""
PROTOCOL = 1

# Engine name -> (module, class). Modules are imported only for the engine asked for.
ENGINES = {
    "torch": ("torch_engine", "TorchEngine"),
    "torch-compile": ("torch_engine", "TorchCompileEngine"),
    "onnxruntime": ("onnxruntime_engine", "OnnxRuntimeEngine"),
    "python-matmul": ("python_matmul", "PythonMatmulEngine"),
}


def engine_class(name):
    """The class that runs engine `name` (its module imported: standard library only until load)."""
    import importlib
    module, cls = ENGINES[name]
    return getattr(importlib.import_module(f"{__name__}.{module}"), cls)
