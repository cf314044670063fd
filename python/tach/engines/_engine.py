"""What every engine does the same way: the requests' order, the timing loop, the memory reply.
An engine supplies load, the inference call, the training step and its outputs."""
import importlib.util
import time

from . import _memory
from ._errors import bad_request, unsupported


class Engine:
    name = None
    # (import name, pip name) of the packages the engine cannot run without.
    packages = ()

    def __init__(self):
        self.load_request = None  # _requests.Load once loaded
        self.inputs = None        # _requests.Inputs
        self.prepared = False     # the first call on the current inputs has run

    @classmethod
    def missing(cls):
        """The pip names of the required packages this Python lacks (found without importing them)."""
        return [pip for module, pip in cls.packages if importlib.util.find_spec(module) is None]

    # --- what an engine supplies -------------------------------------------------------------------
    def versions(self):
        raise NotImplementedError

    def devices(self):
        return ["cpu"]

    def load(self, load):
        """Builds the model for a checked _requests.Load: {"parameters", "trainable_parameters", "setup"}."""
        raise NotImplementedError

    def convert_inputs(self, inputs):
        """The engine's own copy of the inputs (tensors, arrays), made outside any timed region."""

    def infer(self):
        """One inference call on the current inputs; returns the engine's raw outputs."""
        raise NotImplementedError

    def train_step(self):
        """One training step: (data_ns, forward_ns, backward_ns, optimizer_ns, loss) with each phase
        complete (data: the step's batch made ready for the model)."""
        raise unsupported(f"{self.name} does not train")

    def named_outputs(self, raw):
        """{name: (shape, flat f32 list)} of infer()'s outputs."""
        raise NotImplementedError

    def sync(self):
        """Waits for the device (a GPU engine); the CPU engines' calls return when done."""

    def device_peaks(self, reset):
        """(allocated peak, reserved peak) of the device allocator in bytes, or (None, None)."""
        return None, None

    # --- the protocol's requests ------------------------------------------------------------------
    def op_load(self, load):
        if self.load_request is not None:
            raise bad_request("this worker has loaded a model already: start a new worker for another")
        t0 = time.perf_counter()
        info = self.load(load)
        self.load_request = load
        return {"parameters": int(info["parameters"]), "trainable_parameters": int(info["trainable_parameters"]),
                "load_s": time.perf_counter() - t0, "setup": info["setup"]}

    def _need(self, what):
        if self.load_request is None:
            raise bad_request(f"{what} needs a model: send load first")
        if what != "inputs" and self.inputs is None:
            raise bad_request(f"{what} needs inputs: send inputs first")

    def op_inputs(self, inputs):
        self._need("inputs")
        self.convert_inputs(inputs)
        self.inputs = inputs
        self.prepared = False
        return {"batch": inputs.batch, "length": inputs.length}

    def _one_call(self):
        """The loss of a training step; None for an inference call."""
        loss = None
        if self.load_request.train is not None:
            loss = self.train_step()[-1]
        else:
            self.infer()
        self.sync()
        return loss

    def op_prepare(self):
        self._need("prepare")
        t0 = time.perf_counter()
        loss = self._one_call()
        self.prepared = True
        reply = {"first_call_s": time.perf_counter() - t0}
        if loss is not None:  # the first step's: where another engine's losses are compared from
            reply["loss"] = float(loss)
        return reply

    def op_outputs(self):
        self._need("outputs")
        if self.load_request.train is not None:
            raise unsupported("outputs is for inference: this worker was loaded to train")
        raw = self.infer()
        self.sync()
        return {"outputs": {name: {"shape": list(shape), "data": data}
                            for name, (shape, data) in self.named_outputs(raw).items()}}

    def op_time(self, calls):
        self._need("time")
        if not self.prepared:  # a first call (compilation, lazy allocation) is never a timed one
            self._one_call()
            self.prepared = True
        clock = time.perf_counter_ns
        ns = []
        if self.load_request.train is None:
            for _ in range(calls):
                t0 = clock()
                self.infer()
                self.sync()
                ns.append(clock() - t0)
            return {"ns": ns}
        phases = {"data": [], "forward": [], "backward": [], "optimizer": []}
        losses = []
        for _ in range(calls):
            t0 = clock()
            data, forward, backward, optimizer, loss = self.train_step()
            ns.append(clock() - t0)
            phases["data"].append(data)
            phases["forward"].append(forward)
            phases["backward"].append(backward)
            phases["optimizer"].append(optimizer)
            losses.append(loss)
        return {"ns": ns, "phases_ns": phases, "loss": [float(x) for x in losses]}

    def op_memory(self, reset):
        allocated, reserved = self.device_peaks(reset)
        rss = _memory.rss_bytes()
        return {"rss_bytes": rss, "peak_rss_bytes": max(rss, _memory.peak_rss_bytes()),
                "device_allocated_peak_bytes": allocated, "device_reserved_peak_bytes": reserved}
