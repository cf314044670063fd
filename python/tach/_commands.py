"""The CLI's commands as functions: keyword arguments become the command's flags.

Each function builds the argument list `tach COMMAND ...` would get and runs it in this process
through the same code as the executable (_tach.run_cli), so options, defaults, run directories and
error messages are the CLI's. Option names are the long flags with '_' for '-': batch=[1, 8]
is --batch 1,8; True sets a flag; False sets its --no- form where it has one.
"""
import difflib
import json
import os
import sys

from . import _tach
from ._records import Run

Error = _tach.Error


class UsageError(Error, TypeError):
    """An option the command does not have, or a value it does not accept (the CLI's exit status 2)."""


class InternalError(Error):
    """A bug in tach (the CLI's exit status 70)."""


_option_tables = {}


def _options(command):
    table = _option_tables.get(command)
    if table is None:
        table = {}
        for o in _tach.command_options(command):
            for name in o["names"]:
                table[name.replace("-", "_")] = (name, o)
        _option_tables[command] = table
    return table


def _text(value):
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def command_args(command, positionals=(), options=None):
    """The argument list (after `tach`) for `command` with these positionals and keyword options."""
    table = _options(command)
    args = [command]
    for key, value in (options or {}).items():
        if value is None:
            continue
        if key not in table:
            names = sorted(k for k, (_, o) in table.items() if not o["positional"])
            near = difflib.get_close_matches(key, names, n=1)
            # The option's main name (batch), not the alias the slip happened to be nearest (batch_size).
            main = next((n for n in table[near[0]][1]["names"] if len(n) > 1), None) if near else None
            hint = f"; did you mean {(main or near[0]).replace('-', '_')}?" if near else ""
            raise UsageError(f"tach.{command}() has no option '{key}' (tach {command} has no "
                             f"--{key.replace('_', '-')}){hint} Its options: {', '.join(names)}")
        name, o = table[key]
        if o["positional"]:
            positionals = list(positionals) + (list(value) if isinstance(value, (list, tuple)) else [value])
            continue
        if o["flag"]:
            if not isinstance(value, bool):
                raise UsageError(f"tach.{command}(): {key} is a switch: give True or False, not {value!r}")
            negation = next((n for n in o["names"] if n == "no-" + name), None)
            if value:
                args.append("--" + name)
            elif negation:
                args.append("--" + negation)
            continue
        if isinstance(value, (list, tuple)):
            if o["delimiter"]:
                args += ["--" + name, o["delimiter"].join(_text(v) for v in value)]
            else:
                for v in value:
                    args += ["--" + name, _text(v)]
        else:
            args += ["--" + name, _text(value)]
    return args + [_text(p) for p in positionals]


def run_command(command, positionals=(), options=None, capture_stdout=False, ok_statuses=(0,)):
    """Runs the command; returns (status, captured stdout, run directories). Errors raise tach.Error."""
    args = command_args(command, positionals, options)
    status, error, out, run_dirs = _tach.run_cli(args, capture_stdout)
    if status in ok_statuses:
        return status, out, run_dirs
    if status == 2:
        raise UsageError(error or f"tach {command}: usage error")
    if status == 130:
        raise KeyboardInterrupt(error)
    if status == 70:
        raise InternalError(error)
    raise Error(error or f"tach {command} failed with exit status {status}")


def _stdout_is_terminal():
    try:
        return sys.stdout.isatty()
    except (AttributeError, ValueError):  # sys.stdout is None, closed, or has no isatty()
        return False


def _run_result(command, options, positionals=()):
    # Off a terminal (a notebook, a file, a pipe) the table, the findings and the list of files
    # written stay out of stdout: the returned Run holds them, and run.log keeps every line.
    _, _, run_dirs = run_command(command, positionals, options, capture_stdout=not _stdout_is_terminal())
    if not run_dirs:
        raise Error(f"tach {command} wrote no run directory")
    return Run(run_dirs[0])


def bench(**options):
    return _run_result("bench", options)


def profile(**options):
    return _run_result("profile", options)


def train(**options):
    return _run_result("train", options)


def run(**options):
    return _run_result("run", options)


def estimate(**options):
    options = dict(options, json=True)
    _, out, _ = run_command("estimate", (), options, capture_stdout=True, ok_statuses=(0, 3))
    return json.loads(out)  # exit status 3 (does not fit) is an answer, not an error


def prune(**options):
    """`tach prune`: the smaller checkpoint written to output=DIR (model=, and heads=, ffn=, layers=,
    by=...). Returns its prune_summary.json (parameters, FLOPs per token, weight bytes, layers,
    heads and FFN width, before and after) with `dir` set to DIR."""
    if not options.get("output"):
        raise UsageError("prune: give output=DIR, the directory the pruned checkpoint is written to")
    run_command("prune", (), options, capture_stdout=not _stdout_is_terminal())
    out = os.fspath(options["output"])
    with open(os.path.join(out, "prune_summary.json")) as f:
        summary = json.load(f)
    summary["dir"] = out
    return summary


def shrink(**options):
    """`tach shrink`: the variants (dtype=, prune=, student=) measured side by side in one run
    directory; returns its Run (`records`: each row with its `variant` and `accuracy`)."""
    return _run_result("shrink", options)


def compare(baseline, *runs, **options):
    options = dict(options, format="json")
    status, out, _ = run_command("compare", (baseline,) + runs, options, capture_stdout=True, ok_statuses=(0, 4))
    result = json.loads(out)
    result["regressed_beyond_limit"] = status == 4
    return result


def analyze(*paths, frames=None, **options):
    """torch.profiler traces (files or directories) analysed as `tach analyze --json` does: a dict
    (schema tach.analysis/1) with `ops`, `steps` and `ranks` (docs/cli.md lists the fields). With
    frames=True (the default where pandas is installed) `ops`, `steps` and `ranks` are pandas
    DataFrames; frames=False keeps them lists of dicts."""
    if not paths:
        raise UsageError("analyze: give at least one trace file or directory")
    options = dict(options, json=True)
    _, out, _ = run_command("analyze", tuple(os.fspath(p) for p in paths), options, capture_stdout=True)
    result = json.loads(out)
    if frames is None:
        try:
            import pandas  # noqa: F401
            frames = True
        except ModuleNotFoundError:
            frames = False
    if frames:
        import pandas
        for key in ("ops", "steps", "ranks"):
            result[key] = pandas.DataFrame(result[key])
    return result


def report(run_dir, **options):
    run_command("report", (run_dir,), options)
    return os.path.join(os.fspath(run_dir), "report.html")


def info(**options):
    options = dict(options, json=True)
    _, out, _ = run_command("info", (), options, capture_stdout=True)
    return json.loads(out)


def fill_mask(**options):
    """A masked LM's top tokens at each mask of each text (text="..." or a list): the
    `tach fill-mask --json` document (schema tach.fill_mask/1); its `results` hold, per text and
    mask, the fill-mask pipeline's score, token, token_str and sequence."""
    options = dict(options, json=True)
    _, out, _ = run_command("fill-mask", (), options, capture_stdout=True)
    return json.loads(out)


def cli(*args):
    """Runs `tach ARGS...` as the executable would (output to sys.stdout); returns the exit status."""
    status, error, _, _ = _tach.run_cli([_text(a) for a in args], False)
    if error and status not in (0, 2):
        print(f"tach: error: {error}", file=sys.stderr)
    return status


COMMANDS = {"bench": bench, "profile": profile, "train": train, "run": run, "estimate": estimate,
            "compare": compare, "report": report, "info": info, "fill-mask": fill_mask, "prune": prune,
            "shrink": shrink}

for _name, _function in COMMANDS.items():
    _function.__doc__ = (_function.__doc__ or "") + _tach.command_help(_name)
