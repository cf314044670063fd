"""python3 -m tach.engines --engine NAME: one engine worker. It writes a ready (or unavailable) line,
then answers each JSON request on stdin with one JSON line on stdout until quit or end of input.
Only replies go to stdout: everything else the process prints (libraries included, from Python or
C) is sent to stderr, which tach keeps as the engine's log."""
import argparse
import json
import math
import os
import sys
import traceback

from . import ENGINES, PROTOCOL, engine_class
from ._errors import EngineError, bad_request, is_out_of_memory
from ._profile import profile
from ._requests import parse_inputs, parse_load

EXIT_UNAVAILABLE = 3


def protocol_stream():
    """The replies' stream: the original stdout, kept apart; file descriptor 1 and sys.stdout then
    point at stderr so no print from any library can corrupt the protocol."""
    sys.stdout.flush()
    replies = os.fdopen(os.dup(1), "w", encoding="utf-8", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return replies


def _finite(obj):
    """obj with every NaN or infinity as null: JSON has no such numbers (a diverged loss, an
    overflowed output), and a reply must stay one parseable line."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v) for v in obj]
    return obj


def send(stream, obj):
    try:
        line = json.dumps(obj, separators=(",", ":"), allow_nan=False)
    except ValueError:
        line = json.dumps(_finite(obj), separators=(",", ":"), allow_nan=False)
    stream.write(line + "\n")
    stream.flush()


def _calls(req):
    calls = req.get("calls", 1)
    if isinstance(calls, bool) or not isinstance(calls, int) or calls < 1:
        raise bad_request(f"calls must be a positive integer, not {calls!r}")
    return calls


def handle(engine, req):
    """The reply's fields for one request (without "ok"); raises EngineError for a refusal."""
    if not isinstance(req, dict):
        raise bad_request("a request is a JSON object with \"op\"")
    op = req.get("op")
    if op == "load":
        return engine.op_load(parse_load(req))
    if op == "inputs":
        return engine.op_inputs(parse_inputs(req, engine.load_request))
    if op == "prepare":
        return engine.op_prepare()
    if op == "outputs":
        return engine.op_outputs()
    if op == "time":
        return engine.op_time(_calls(req))
    if op == "memory":
        return engine.op_memory(bool(req.get("reset", False)))
    if op == "ping":
        return {}
    if op == "profile":
        return profile(engine, req)
    raise bad_request(f"unknown op {op!r}: load, inputs, prepare, outputs, time, memory, profile, ping or quit")


def serve(engine, requests, replies):
    """The request loop. A failed request is answered with its kind and the worker goes on."""
    for line in requests:
        if not line.strip():
            continue
        try:
            req = json.loads(line)
        except ValueError as e:
            send(replies, {"ok": False, "kind": "bad_request", "error": f"the request is not JSON ({e})"})
            continue
        if isinstance(req, dict) and req.get("op") == "quit":
            send(replies, {"ok": True})
            return
        try:
            reply = {"ok": True, **handle(engine, req)}
        except EngineError as e:
            reply = {"ok": False, "kind": e.kind, "error": str(e)}
        except Exception as e:  # the point fails, the worker serves on
            traceback.print_exc(file=sys.stderr)
            kind = "oom" if is_out_of_memory(e) else "runtime"
            first = (str(e).strip().splitlines() or [""])[0]
            reply = {"ok": False, "kind": kind, "error": f"{type(e).__name__}: {first}"[:2000]}
        send(replies, reply)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python3 -m tach.engines", description=__doc__)
    ap.add_argument("--engine", required=True, choices=sorted(ENGINES), help="the engine this worker runs")
    args = ap.parse_args(argv)
    replies = protocol_stream()
    cls = engine_class(args.engine)
    missing = cls.missing()
    if missing:
        send(replies, {"event": "unavailable", "engine": args.engine, "missing": missing,
                       "install": "python3 -m pip install " + " ".join(missing)})
        return EXIT_UNAVAILABLE
    try:
        engine = cls()
        ready = {"event": "ready", "protocol": PROTOCOL, "engine": args.engine, "versions": engine.versions(),
                 "devices": engine.devices()}
    except ImportError as e:  # present but broken (a compiled part missing): refused by the name it gave
        traceback.print_exc(file=sys.stderr)
        name = e.name or str(e)
        send(replies, {"event": "unavailable", "engine": args.engine, "missing": [name],
                       "install": f"python3 -m pip install --force-reinstall {name}", "error": str(e)})
        return EXIT_UNAVAILABLE
    send(replies, ready)
    sys.stdin.reconfigure(encoding="utf-8")
    serve(engine, sys.stdin, replies)
    return 0


if __name__ == "__main__":
    sys.exit(main())
