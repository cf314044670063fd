"""The "profile" request: the loaded model's calls (inferences, or training steps) run under
torch.profiler on a schedule, each active window's trace written as a Chrome trace that `tach
analyze` reads (`tach profile --engine torch` sends it, then analyses the traces).

The profiler records shapes (the op table's FLOPs and roofline come from them) and no Python
stacks (with_stack costs more than the ops on a small model, and the table does not need it);
CPU activity always, CUDA's where the model is on a GPU; the allocator's events, for the table's
memory columns."""
import os
import time

from ._errors import bad_request, unsupported

# The schedule's fields as torch.profiler.schedule names them, with the least each may be.
SCHEDULE = (("skip_first", 0), ("wait", 0), ("warmup", 0), ("active", 1), ("repeat", 1))


def _schedule(req):
    spec = req.get("schedule")
    if not isinstance(spec, dict):
        raise bad_request("profile needs \"schedule\": {skip_first, wait, warmup, active, repeat}")
    out = {}
    for key, least in SCHEDULE:
        value = spec.get(key, least)
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            raise bad_request(f"schedule.{key} must be an integer of at least {least}, not {value!r}")
        out[key] = value
    return out


def _output_dir(req):
    out = req.get("output_dir")
    if not isinstance(out, str) or not out:
        raise bad_request("profile needs \"output_dir\": the directory the traces go to")
    if not os.path.isdir(out):
        raise bad_request(f"output_dir {out} is not a directory")
    return out


def profile(engine, req):
    """Runs skip_first + repeat * (wait + warmup + active) calls under torch.profiler; each cycle's
    trace is written to output_dir as ENGINE.N.pt.trace.json (.gz with "gzip": true). Reply:
    {"traces": [paths], "steps": calls run, "step_s": [each call's wall seconds, profiler on]}."""
    engine._need("profile")
    torch = getattr(engine, "torch", None)
    if torch is None:
        raise unsupported(f"{engine.name} has no torch.profiler to profile with: profile the torch or "
                          "torch-compile engine")
    schedule = _schedule(req)
    out = _output_dir(req)
    suffix = ".pt.trace.json.gz" if req.get("gzip", False) else ".pt.trace.json"
    if not engine.prepared:  # a first call (compilation, lazy allocation) is never a profiled one
        engine._one_call()
        engine.prepared = True
    from torch.profiler import ProfilerActivity, profile as torch_profile, schedule as torch_schedule
    activities = [ProfilerActivity.CPU]
    if engine.load_request.on_gpu:
        activities.append(ProfilerActivity.CUDA)
    traces = []

    def write_trace(prof):
        path = os.path.join(out, f"{engine.name}.{len(traces) + 1}{suffix}")
        prof.export_chrome_trace(path)
        traces.append(path)

    steps = schedule["skip_first"] + schedule["repeat"] * (schedule["wait"] + schedule["warmup"] + schedule["active"])
    step_s = []
    with torch_profile(activities=activities, schedule=torch_schedule(**schedule), on_trace_ready=write_trace,
                       record_shapes=True, profile_memory=True, with_stack=False) as prof:
        for _ in range(steps):
            t0 = time.perf_counter()
            engine._one_call()
            step_s.append(time.perf_counter() - t0)
            prof.step()
    return {"traces": traces, "steps": steps, "step_s": step_s}
