"""Failures a worker reports as {"ok": false, "error": ..., "kind": ...}; anything else is "runtime"
(or "oom" where the allocator says so)."""


class EngineError(Exception):
    """A refused or failed request with its protocol kind: "bad_request" (the request is wrong),
    "unsupported" (this engine cannot do it here, and says why), "oom", "runtime"."""

    def __init__(self, kind, message):
        super().__init__(message)
        self.kind = kind


def bad_request(message):
    return EngineError("bad_request", message)


def unsupported(message):
    return EngineError("unsupported", message)


def is_out_of_memory(exc):
    """MemoryError, torch's OutOfMemoryError (CUDA and CPU allocators), ONNX Runtime's allocation failures."""
    if isinstance(exc, MemoryError):
        return True
    name = type(exc).__name__
    text = str(exc)
    return name == "OutOfMemoryError" or "CUDA out of memory" in text or "Failed to allocate memory" in text
