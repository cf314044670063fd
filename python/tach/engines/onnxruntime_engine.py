"""onnxruntime: transformers' model exported to ONNX once per (model directory content, task, dtype)
and run by an InferenceSession (the CPU execution provider, or CUDA's on cuda:N). Inference only.

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
from ._errors import bad_request, unsupported
from .torch_engine import TASKS



def model_key(load):
    """A digest of the model directory's files (names, sizes, contents), the task and the dtype."""
    h = hashlib.sha256(f"{load.task}\n{load.dtype}\n".encode())
    for name in sorted(os.listdir(load.model)):
        path = os.path.join(load.model, name)
        if not os.path.isfile(path) or name.endswith(".onnx"):
            continue
        h.update(f"{name}\n{os.path.getsize(path)}\n".encode())
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
    return h.hexdigest()[:24]


def export(load, directory):
    """Exports the model to directory/model.onnx; returns (parameters, input names, output names)."""
    import inspect

    import torch

    from .torch_engine import build_model
    model = build_model(torch, load.__class__(**{**load.__dict__, "device": "cpu", "train": None}))
    _, outputs, _ = TASKS[load.task]
    accepted = inspect.signature(model.forward).parameters
    names = ["input_ids", "attention_mask"] + (["token_type_ids"] if "token_type_ids" in accepted else [])
    causal = load.task == "causal-lm"

    class ByName(torch.nn.Module):
        # Inputs and outputs by name: the models' positional parameters differ between families.
        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, *args):
            kwargs = dict(zip(names, args))
            if causal:
                kwargs["use_cache"] = False
            out = self.model(**kwargs)
            return tuple(out[name] for name in outputs)

    example = tuple(torch.ones(1, 8, dtype=torch.long) for _ in names)
    axes = {name: {0: "batch", 1: "length"} for name in names}
    axes.update({name: {0: "batch"} if load.task == "sequence-classification" else {0: "batch", 1: "length"}
                 for name in outputs})
    torch.onnx.export(ByName().eval(), example, os.path.join(directory, "model.onnx"), input_names=names,
                      output_names=list(outputs), dynamic_axes=axes, opset_version=17, dynamo=False)
    return sum(p.numel() for p in model.parameters()), names, list(outputs)


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
        """(directory, setup) of the export for `load`: made now or found in cache_dir."""
        cache = load.cache_dir or os.path.join(os.path.expanduser("~"), ".cache", "tach", "onnx")
        os.makedirs(cache, exist_ok=True)
        final = os.path.join(cache, f"{os.path.basename(load.model.rstrip('/'))}-{model_key(load)}")
        if os.path.isfile(os.path.join(final, "meta.json")):
            age = time.time() - os.path.getmtime(os.path.join(final, "meta.json"))
            return final, {"kind": "onnx export", "seconds": 0.0, "cached": True, "cache_age_s": age}
        t0 = time.perf_counter()
        scratch = tempfile.mkdtemp(prefix=".export-", dir=cache)
        try:
            parameters, inputs, outputs = export(load, scratch)
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
