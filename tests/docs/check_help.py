#!/usr/bin/env python3
"""The --help texts and docs/cli.md say the same: every option a command's --help lists appears in
that command's section of docs/cli.md (## tach NAME), and every option the section's synopsis
(its first fenced block) names is one the command takes. `train --help` names every model_type
tach trains (the family table, as the error for an unknown model_type lists it).

usage: check_help.py TACH REPO_DIR   (exit 0: they agree; 1: each disagreement, by command and line)
"""
import os
import re
import subprocess
import sys

tach, repo = sys.argv[1], sys.argv[2]
cli_md = os.path.join(repo, "docs", "cli.md")
OPTION = re.compile(r"(?<![\w-])--[a-z0-9][a-z0-9-]*")


def run(*args):
    r = subprocess.run([tach, *args], capture_output=True, text=True, timeout=60)
    return r.returncode, r.stdout + r.stderr


def subcommands():
    _, out = run("--help")
    names, in_list = [], False
    for line in out.splitlines():
        if line.strip().lower() == "subcommands:":
            in_list = True
            continue
        if in_list:
            m = re.match(r"^  ([a-z][a-z-]*)\s", line + " ")
            if m:
                names.append(m.group(1))
            elif line.strip() and not line.startswith(" "):
                in_list = False
    return names


def help_options(command):
    """The long options of `tach COMMAND --help`, one group per option line (its aliases:
    "-b,--batch,--batch-size"), and the help text."""
    _, out = run(command, "--help")
    groups = []
    for line in out.splitlines():
        m = re.match(r"^\s+((?:-{1,2}[A-Za-z0-9][\w-]*,?)+)", line)
        if m:
            names = [o for o in OPTION.findall(m.group(1)) if o != "--help"]
            if names:  # with the short form ("-m"), which the docs may use instead
                groups.append(names + re.findall(r"(?<![\w-])-[A-Za-z](?![\w-])", m.group(1)))
    return groups, out


def sections():
    """{command: (first line number, section text, synopsis lines)} of docs/cli.md's ## tach sections."""
    lines = open(cli_md, encoding="utf-8").read().splitlines()
    out, current, start = {}, None, 0
    for i, line in enumerate(lines + ["## end"]):
        if line.startswith("## "):
            if current:
                body = lines[start:i]
                synopsis, fence = [], 0
                for j, b in enumerate(body):
                    if b.startswith("```"):
                        fence += 1
                        if fence == 2:
                            break
                        continue
                    if fence == 1:
                        synopsis.append((start + j + 1, b))
                for name in current:
                    out[name] = (start + 1, "\n".join(body), synopsis)
            current = re.findall(r"tach ([a-z-]+)", line) if line.startswith("## tach ") else None
            start = i
    return out


problems = []
docs = sections()
commands = subcommands()
if not commands:
    sys.exit("could not read the subcommands from tach --help")
for command in commands:
    if command not in docs:
        problems.append(f"docs/cli.md: no '## tach {command}' section for a command tach --help lists")
        continue
    line, text, synopsis = docs[command]
    groups, _ = help_options(command)
    opts = {o for g in groups for o in g}
    if "every tach bench option" in text and "bench" in docs:
        text += docs["bench"][1]  # tach run takes bench's options, documented there
    for g in groups:
        if not any(re.search(r"(?<![\w-])" + re.escape(o) + r"(?![\w-])", text) for o in g):
            problems.append(f"docs/cli.md:{line}: tach {command} --help lists {'/'.join(g)}, its section does not")
    for n, s in synopsis:
        if not re.match(r"^\s*(tach " + re.escape(command) + r"\b|\s)", s):
            continue  # another command's synopsis in the same block (tach manifest, tach verify)
        if re.match(r"^\s*tach ", s) and not s.strip().startswith("tach " + command):
            continue
        for o in OPTION.findall(s.split("#")[0]):
            if o not in opts:
                problems.append(f"docs/cli.md:{n}: the synopsis names {o}, which tach {command} does not take")

# train --help: every model_type tach builds (each family trains).
code, out = run("classify", "--model", os.path.join(repo, "tests", "docs", "no-such-model-type"))
m = re.search(r"tach builds \(([^)]*)\)", out)
if not m:
    problems.append("could not read the model_types tach builds from an unknown model_type's error: " + out[-300:])
else:
    _, train_help = help_options("train")
    flat = " ".join(train_help.split())
    for t in [t.strip() for t in m.group(1).split(",") if t.strip()]:
        if t not in flat:
            problems.append(f"tach train --help does not name the model_type '{t}' (tach trains every family)")

for p in problems:
    print(p)
print(f"{len(commands)} commands compared with docs/cli.md: {len(problems)} disagreements")
sys.exit(1 if problems else 0)
