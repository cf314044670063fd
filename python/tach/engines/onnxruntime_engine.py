"""onnxruntime: transformers' model exported to ONNX once per (model directory content, task, dtype,
exporter) and run by an InferenceSession (the CPU execution provider, or CUDA's on cuda:N).
Inference only. _onnx_export.py makes and checks the export, or refuses the model by name.

The export goes to cache_dir/<key>/ through a temporary directory renamed into place, so two
workers exporting the same model at once never read half a file; a later load reuses it and says
how old it is."""
import hashlib
import json
import os
import platform
import shutil
import tempfile
import time

from ._engine import Engine
from ._errors import EngineError, bad_request, unsupported
from ._onnx_export import OPSET, RECIPE, export


def model_key(load):
    """A digest of the model directory's files (names, sizes, contents), the task, the dtype and
    how the export is made (the recipe, the opset and the exporting packages' versions): another
    torch or transformers may trace another graph, and a refused export may then succeed."""
    how = [load.task, load.dtype, f"recipe {RECIPE}", f"opset {OPSET}"]
    how += [f"{package} {_version(package)}" for package in ("torch", "transformers")]
    h = hashlib.sha256(("\n".join(how) + "\n").encode())
    for name in sorted(os.listdir(load.model)):
        path = os.path.join(load.model, name)
        if not os.path.isfile(path) or name.endswith(".onnx"):
            continue
        h.update(f"{name}\n{os.path.getsize(path)}\n".encode())
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
    return h.hexdigest()[:24]


def _version(package):
    """The installed version of package, or "unknown" where it has no metadata (a source build)."""
    import importlib.metadata as md
    try:
        return md.version(package)
    except md.PackageNotFoundError:
        return "unknown"


def _write_atomically(path, text, directory):
    """path holding text, or not at all: written beside it, then renamed into place."""
    fd, scratch = tempfile.mkstemp(prefix=".refused-", dir=directory)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text + "\n")
    os.replace(scratch, path)


class OnnxRuntimeEngine(Engine):
    name = "onnxruntime"
    packages = (("onnxruntime", "onnxruntime"), ("onnx", "onnx"), ("numpy", "numpy"), ("torch", "torch"),
                ("transformers", "transformers"))

    def __init__(self):
        super().__init__()
        import numpy
        import onnxruntime
        self.np, self.ort = numpy, onnxruntime

    def versions(self):
        import importlib.metadata as md
        out = {"python": platform.python_version(), "onnxruntime": self.ort.__version__}
        for package in ("onnx", "numpy", "torch", "transformers"):
            try:
                out[package] = md.version(package)
            except md.PackageNotFoundError:
                pass
        return out

    def devices(self):
        return ["cpu"] + (["cuda:0"] if "CUDAExecutionProvider" in self.ort.get_available_providers() else [])

    def _cached_export(self, load):
        """(directory, setup) of the export for `load`: made now or found in cache_dir. A refused
        export is remembered beside it (<key>.refused, its reason): the sweep's later points of the
        model are refused at once instead of exporting it again."""
        cache = load.cache_dir or os.path.join(os.path.expanduser("~"), ".cache", "tach", "onnx")
        os.makedirs(cache, exist_ok=True)
        final = os.path.join(cache, f"{os.path.basename(load.model.rstrip('/'))}-{model_key(load)}")
        if os.path.isfile(os.path.join(final, "meta.json")):
            age = time.time() - os.path.getmtime(os.path.join(final, "meta.json"))
            return final, {"kind": "onnx export", "seconds": 0.0, "cached": True, "cache_age_s": age}
        refused = final + ".refused"
        if os.path.isfile(refused):
            with open(refused, encoding="utf-8") as f:
                raise unsupported(f.read().strip())
        t0 = time.perf_counter()
        scratch = tempfile.mkdtemp(prefix=".export-", dir=cache)
        try:
            try:
                parameters, inputs, outputs = export(load, scratch)
            except EngineError as e:
                if e.kind == "unsupported":
                    _write_atomically(refused, str(e), cache)
                raise
            with open(os.path.join(scratch, "meta.json"), "w") as f:
                json.dump({"parameters": parameters, "inputs": inputs, "outputs": outputs, "model": load.model,
                           "task": load.task, "dtype": load.dtype}, f)
            try:
                os.rename(scratch, final)  # atomic; another worker's finished export wins if it got there first
            except OSError:
                if not os.path.isfile(os.path.join(final, "meta.json")):
                    raise
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        return final, {"kind": "onnx export", "seconds": time.perf_counter() - t0, "cached": False,
                       "cache_age_s": None}

    def load(self, load):
        if load.train is not None:
            raise unsupported("onnxruntime runs inference only: train with torch or torch-compile")
        if load.dtype == "bf16":
            raise unsupported("onnxruntime has no bf16 kernels for these models: use f32 or f16")
        ort = self.ort
        if load.on_gpu:
            if "CUDAExecutionProvider" not in ort.get_available_providers():
                raise unsupported(f"this onnxruntime has no CUDA execution provider for {load.device} "
                                  "(python3 -m pip install onnxruntime-gpu)")
            providers = [("CUDAExecutionProvider", {"device_id": int(load.device[5:])})]
        else:
            providers = ["CPUExecutionProvider"]
        directory, setup = self._cached_export(load)
        with open(os.path.join(directory, "meta.json")) as f:
            meta = json.load(f)
        options = ort.SessionOptions()
        if load.threads:
            options.intra_op_num_threads = load.threads
        options.inter_op_num_threads = 1
        self.session = ort.InferenceSession(os.path.join(directory, "model.onnx"), options, providers=providers)
        self.input_names, self.output_names = meta["inputs"], meta["outputs"]
        self.task = load.task
        return {"parameters": meta["parameters"], "trainable_parameters": 0, "setup": setup}

    def convert_inputs(self, inputs):
        np = self.np
        feed = {"input_ids": np.array(inputs.input_ids, dtype=np.int64),
                "attention_mask": np.array(inputs.attention_mask, dtype=np.int64)}
        if "token_type_ids" in self.input_names:
            feed["token_type_ids"] = (np.array(inputs.token_type_ids, dtype=np.int64) if inputs.token_type_ids
                                      is not None else np.zeros_like(feed["input_ids"]))
        elif inputs.token_type_ids is not None and any(any(r) for r in inputs.token_type_ids):
            raise bad_request("this model takes no token_type_ids")
        self.feed = feed

    def infer(self):
        # run() returns when the outputs are in host memory: on CUDA the call is complete.
        return self.session.run(self.output_names, self.feed)

    def named_outputs(self, raw):
        return {name: (tuple(a.shape), a.astype(self.np.float32).reshape(-1).tolist())
                for name, a in zip(self.output_names, raw)}
