#!/usr/bin/env python3
"""Every example command of README.md, docs/cli.md and docs/python.md, run as written (from a
scratch directory laid out as the repository: build/, tests/, scripts/, and ../shared), each with
a timeout, its exit status and the fields its comment names checked. A failure is reported by
file and line.

What is changed, and why, is in RULES below, one line per example it touches:
- a placeholder (DIR, runs/ID, train.tsv) is filled with a fixture or a run made here first;
- a Hub id is mapped to a local fixture or preset of the same family ONLY because the suite runs
  offline (the examples download them);
- an example that needs what this machine may not have (a GPU, network, mpirun, sbatch,
  tensorboard, pandas) is listed as not run, with the reason;
- usage synopses (`tach info [--json]`) are not run: tests/docs/check_help.py compares them with
  --help;
- by default (TACH_DOCS_EXAMPLES=quick) an example whose grid takes minutes on a 2-core machine
  runs with a smaller grid, said per example; TACH_DOCS_EXAMPLES=full runs them as written.
PENDING lists examples known to fail for a reason being fixed elsewhere: they run, their failure
is printed as pending and does not fail the suite; one that passes is reported, to be taken off.

usage: run_examples.py TACH_BUILD_DIR REPO_DIR SHARED_DIR [--only SUBSTRING] [--list]
(--list: what would run, after the mappings, without running it)
"""
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

build_dir, repo, shared = (os.path.abspath(a) for a in sys.argv[1:4])
only = sys.argv[sys.argv.index("--only") + 1] if "--only" in sys.argv else None
LIST = "--list" in sys.argv
FULL = os.environ.get("TACH_DOCS_EXAMPLES", "quick") == "full"
TIMEOUT_S = float(os.environ.get("TACH_DOCS_TIMEOUT", "300"))
FILES = ["README.md", "docs/cli.md", "docs/python.md"]
COMMAND_START = re.compile(r"^(\$ )?(build/tach|tach|make|mpirun|sbatch|tensorboard)\b")

FIX = "tests/fixtures"
TINY_SST2 = f"{FIX}/encoders/distilbert-sst2-tiny"
BERT_TOK = "../shared/tokenizers/bert-base-uncased"
TINY_TOK = f"{FIX}/tokenizers/tiny-wordpiece"  # the bare BERT fixture's vocabulary

# Placeholders and offline mappings, applied in order to every command (regex, replacement, why).
SUBST = [
    (r"embed -m DIR(?![\w/])", f"embed -m {FIX}/encoders/bert-base-model-f32 -k {TINY_TOK}",
     "placeholder: a sentence-embedding model directory"),
    (r"generate -m DIR(?![\w/])", f"generate -m {FIX}/decoders/qwen2-tok-bf16 -k ../shared/tokenizers/qwen2.5",
     "placeholder: a causal LM directory"),
    (r"merge -m DIR(?![\w/])", f"merge -m {TINY_SST2}", "placeholder: a classifier directory"),
    (r"(?<![\w/.-])DIR(?![\w/])", f"{TINY_SST2} -k {BERT_TOK}", "placeholder: a classifier directory"),
    (r"--adapter runs/RUN/model\b", "--adapter runs/ex-lora/model", "placeholder: a LoRA adapter tach train saved here"),
    (r"bench -c config\.yaml", "bench -c ex/config.yaml",
     "placeholder: the benchmark config docs/cli.md shows (its yaml block), made here"),
    (r"train -c train\.yaml", "train -c ex/train.yaml", "placeholder: a training config made here"),
    (r"runs/train-20261123-021214-all-MiniLM-L6-v2", "runs/ex-train", "placeholder: a training run made here"),
    (r"~/\.cache/tach-models/all-MiniLM-L6-v2", f"{TINY_SST2} -k {BERT_TOK}",
     "placeholder: a model the reader downloaded; the tiny SST-2 fixture stands in"),
    (r"(?<![\w/.-])sst2/(train|dev)\.tsv", r"ex/\1.tsv", "placeholder: SST-2's files; small ones made here"),
    (r"(?<![\w/.-])train\.tsv\b", "ex/train.tsv", "placeholder: a small labelled TSV made here"),
    (r"(?<![\w/.-])dev\.tsv\b", "ex/dev.tsv", "placeholder: a small labelled TSV made here"),
    (r"runs/(ID|BEFORE|20261122-055338-distilbert-base-uncased)\b", "runs/ex-bench", "placeholder: a bench run made here"),
    (r"runs/AFTER\b", "runs/ex-bench2", "placeholder: a second bench run made here"),
    (r"runs/TRAIN_RUN\b", "runs/ex-train-sweep", "placeholder: a training sweep made here"),
    (r"runs/(RUN|<id>)/model\b", "runs/ex-train/model", "placeholder: a model tach train saved here"),
    (r"\./my-sst2-model\b", TINY_SST2, "placeholder: a fine-tuned SST-2 classifier"),
    (r"distilbert/distilbert-base-uncased-finetuned-sst-2-english", TINY_SST2,
     "offline: a Hub id; the tiny SST-2 DistilBERT fixture stands in"),
    (r"(?<!\")sentence-transformers/all-MiniLM-L6-v2", f"{FIX}/encoders/bert-base-model-f32 -k {TINY_TOK}",
     "offline: a Hub id; a bare BERT fixture (mean pooling, as MiniLM) stands in"),
    (r"(?<![\w:/])(-f|--file) texts\.txt", r"\1 ex/texts.txt", "placeholder: a text file made here"),
    (r"dslim/bert-base-NER", f"{FIX}/heads/bert-tokcls-f32 -k {FIX}/token_classes/tokenizer-wordpiece",
     "offline: a Hub id; the tiny BERT token classifier (with a tokenizer of its vocabulary) stands in"),
    (r"(?<![\w/.-])conll2003_test\.txt", f"{FIX}/token_classes/ner.conll",
     "placeholder: CoNLL-2003's test file; a small one in the same layout stands in"),
    (r"distilbert-base-cased-distilled-squad", f"{FIX}/heads/bert-qa-f32 -k {FIX}/question_answering/tokenizer-tiny",
     "offline: a Hub id; the tiny BERT question-answering model (with a tokenizer of its vocabulary) stands in"),
    (r"(?<![\w/.-])squad_dev_v1\.1\.json", f"{FIX}/question_answering/squad-v1.json",
     "placeholder: SQuAD v1.1's dev file; a small one in the same layout stands in"),
    # docs/python.md
    (r'load_model\("sentence-transformers/all-MiniLM-L6-v2"\)',
     f'load_model("{FIX}/encoders/bert-base-model-f32", tokenizer="{TINY_TOK}")',
     "offline: a Hub id; a bare BERT fixture (mean pooling, as MiniLM) stands in"),
    (r'load_model\("Qwen/Qwen2\.5-0\.5B"\)', f'load_model("{FIX}/decoders/qwen2-tok-bf16", tokenizer="../shared/tokenizers/qwen2.5")',
     "offline: a Hub id; a small Qwen2 fixture with Qwen2.5's tokenizer stands in"),
    (r'"runs/<id>/model"', '"runs/ex-train/model"', "placeholder: a model tach train saved here"),
    (r'"path/to/tokenizer\.json"', f'"{BERT_TOK}/tokenizer.json"', "placeholder: a tokenizer.json"),
    (r'bench\(model="distilbert-base-uncased"', 'bench(model="preset:distilbert-base-uncased"',
     "offline: a Hub id; the preset of the same shape (synthetic weights) stands in"),
]

# Per example: a regex on the command (after SUBST) and what to do. Actions:
#   skip: not run, with the reason;  quick: (regex, replacement) applied unless FULL, with the reason;
#   expect: regexes the output must match (the fields the example's comment names); code: exit status
#   (or a tuple of the statuses that are right).
RULES = [
    (r"^make (run|test)\b", {"skip": "the whole default sweep / the whole suite: make test is the suite this runs in"}),
    (r"^mpirun\b", {"skip": "needs MPI ranks (tests/cli/train_data_parallel.sh runs the data-parallel path)"}),
    (r"^sbatch\b", {"skip": "needs a SLURM cluster (tests/cli/slurm.sh runs the sbatch script's parts)"}),
    (r"^tensorboard\b", {"skip": "tensorboard is a separate program (tests/tensorboard reads the event files)"}),
    (r"--slurm\b(?!-dry-run)", {"skip": "submits to SLURM (tests/cli/slurm.sh covers --slurm with a fake sbatch)"}),
    (r"--device cuda|-d cuda", {"skip": "needs an NVIDIA GPU (the CUDA tests run where there is one)"}),
    (r"^tach download|build/tach download", {"skip": "downloads from the Hugging Face Hub (the suite is offline)"}),
    (r"preset:qwen2\.5-0\.5b\b.*--dtype bf16\s*$|preset:qwen2\.5-0\.5b --batch 8",
     {"quick": [(r"--batch 8 --seq-len 128", "--batch 1 --seq-len 16 --repeat 1")],
      "why": "a 0.5B-parameter decoder at batch 8 x 128 takes minutes on 2 cores"}),
    (r"^build/tach bench\s*(#|$)", {"quick": [(r"bench\s*$", "bench -b 1 -s 16 --runs 2 --no-progress")],
                                    "why": "the default sweep (DistilBERT-base, 3 batches x 128) takes minutes"}),
    (r"bench -m preset:bert-base-uncased -b 1,8,32",
     {"quick": [(r"-b 1,8,32 -s 64,128,256", "-b 1 -s 64"), (r"$", " --runs 2 --no-progress")],
      "why": "18 points of BERT-base take many minutes on 2 cores"}),
    (r"bench -m preset:qwen2\.5-0\.5b -b 1,4 -s 32 --decode-tokens 32",
     {"quick": [(r"-b 1,4 -s 32 --decode-tokens 32", "-b 1 -s 32 --decode-tokens 4 --runs 2 --no-progress")],
      "why": "a 0.5B decoder's prefill and 32 decode steps per point take minutes"}),
    (r"bench --train --method full,lora --gradient-checkpointing off,on",
     {"quick": [(r"--train", "--train -m preset:bert-tiny -b 2 -s 16 --runs 1 --warmup 0 --no-progress")],
      "why": "the default training sweep (DistilBERT-base) takes many minutes"}),
    (r"profile -m preset:distilbert-base-uncased -b 8 -s 128",
     {"quick": [(r"-b 8 -s 128", "-b 1 -s 32")], "why": "DistilBERT-base at 8 x 128 profiled takes minutes"}),
    (r"classify --model preset:bert-base-uncased --batch 32 --seq-len 128 --repeat 20",
     {"quick": [(r"--batch 32 --seq-len 128 --repeat 20", "--batch 2 --seq-len 32 --repeat 2")],
      "why": "20 forwards of BERT-base at 32 x 128 take minutes"}),
    (r"monitor -- build/tach bench -b 1,8",
     {"quick": [(r"bench -b 1,8", "bench -m preset:bert-tiny -b 1 -s 8 --runs 2 --no-progress")],
      "why": "the default model's sweep takes minutes"}),
    (r"train -m \S+ (-k \S+ )?-d ex/train\.tsv --eval-dataset ex/dev\.tsv( --max-samples 2000)? --epochs 1 -b 32 -s 64 --method",
     {"quick": [(r"--epochs 1 -b 32 -s 64", "--max-steps 2 -b 4 -s 32")], "why": "six trainings of an epoch take minutes"}),
    (r"train -m \S+ (-k \S+ )?-d ex/train\.tsv --eval-dataset ex/dev\.tsv --method full,lora,qlora",
     {"quick": [(r"$", " --max-steps 2 -b 4 -s 32")], "why": "six full trainings take many minutes"}),
    (r"train -m \S+ (-k \S+ )?-d ex/train\.tsv --eval-dataset ex/dev\.tsv --epochs 1 -b 32",
     {"quick": [(r"$", " --max-steps 2 -s 32")], "why": "an epoch takes minutes"}),
    (r"eval -m tests/fixtures/encoders/distilbert-sst2-tiny .*-d ../shared/data/sst2/dev\.tsv\s*$",
     {"expect": [r"accuracy 0\.7890"]}),
    (r"run -m tests/fixtures/encoders/distilbert-sst2-tiny",
     {"quick": [(r"-b 1,8,32 -s 128", "-b 1,8 -s 128 --runs 2")], "why": "three batch sizes of the full dev set"}),
    # Two short runs (-r 3) of the same build: too few runs a side for a verdict, so never a
    # regression, whatever the machine did between them; the table must show.
    (r"compare runs/ex-bench runs/ex-bench2 --fail-on-regression", {"expect": [r"comparisons?:", r"not comparable"]}),
    (r"estimate --models .* --table", {"expect": [r"distilbert|DistilBERT"]}),
    (r"^build/tach info\s*(#|$)", {"expect": [r"(?i)cpu"]}),
    (r"embed .*--similarity", {"expect": [r"similarity"]}),
    (r"embed .* -o dev\.npy", {"expect": [r"dev\.npy \(872 x \d+ float32\)"]}),
    (r"^build/tach generate .*--text", {"expect": [r"(?i)first token", r"(?i)per (output )?token"]}),
    (r"^build/tach generate .*--dtype nf4", {"expect": [r"(?i)nf4", r"(?i)limit .* per step at the memory bandwidth"]}),
    (r"--decode-tokens", {"expect": [r"(?i)decod"]}),
    (r"^build/tach report --png --pptx", {"expect": [r"report\.pptx", r"\.png"]}),
    (r"^build/tach report runs/", {"expect": [r"report\.html"]}),
    (r"^build/tach profile ", {"expect": [r"trace\.json"]}),
    (r"^build/tach monitor ", {"expect": [r"peak RSS"]}),
    (r"^build/tach info --ceilings", {"expect": [r"(?i)GFLOP/s", r"(?i)GB/s"]}),
    (r"classify .*--json", {"expect": [r"^\s*[\[{]"]}),
    (r"^build/tach eval -m runs/ex-train/model .*--dtype f32,int8", {"expect": [r"int8", r"(?i)accuracy"]}),
]

# Known failures of examples whose behaviour another change is fixing: (regex on the command, why).
PENDING = [
]

# The interpreter for the python blocks: $PYTHON, else Debian's (as python/tests/run_pytest.sh),
# with numpy; without one the blocks are listed as not run.
PYTHON = next((p for p in [os.environ.get("PYTHON"), "/usr/bin/python3", sys.executable]
               if p and os.path.exists(p) and subprocess.run([p, "-c", "import numpy"], capture_output=True).returncode == 0),
              None)
PYTHON_SKIP = [
    (r"enumerate\(loader\)", "a PyTorch training loop (model, loader, optimizer are the reader's): "
                             "python/tests/test_torch_loop.py runs it with a real one"),
    (r"", None if PYTHON else "no python3 with numpy here (the module needs it)"),
    (r"", None if os.path.isdir(os.path.join(build_dir, "python", "tach"))
     else "this build has no Python module (configured with -DTACH_PYTHON=OFF, as make sanitize's is)"),
    (r"\.to_pandas\(\)", None if PYTHON and subprocess.run([PYTHON, "-c", "import pandas, matplotlib"],
                                                            capture_output=True).returncode == 0
     else "needs pandas and matplotlib to plot"),
]
PYTHON_QUICK = [  # (regex, replacement) unless FULL: why
    (r"batch_sizes=\[1, 2, 4, 8, 16, 32\], seq_lens=128", "batch_sizes=[1, 2], seq_lens=32, runs=2",
     "12 points of DistilBERT-base at 128 tokens take many minutes"),
]


def blocks(path):
    """(first line number, language, lines) of each fenced block (an indented one dedented)."""
    out, cur, indent = [], None, 0
    for n, line in enumerate(open(os.path.join(repo, path), encoding="utf-8").read().splitlines(), 1):
        if line.lstrip().startswith("```"):
            if cur is None:
                indent = len(line) - len(line.lstrip())
                cur = (n + 1, line.strip()[3:].strip(), [])
            else:
                out.append(cur)
                cur = None
        elif cur is not None:
            cur[2].append(line[indent:] if line[:indent].isspace() else line)
    return out


def commands(path):
    """(file:line, command) of every shell command in the file's fenced blocks, continuations joined."""
    out = []
    for first, lang, lines in blocks(path):
        if lang not in ("", "sh", "bash", "shell", "console"):
            continue
        i = 0
        while i < len(lines):
            line, n = lines[i], first + i
            i += 1
            if not COMMAND_START.match(line):
                continue
            cmd = line[2:] if line.startswith("$ ") else line
            while cmd.rstrip().endswith("\\") and i < len(lines):
                cmd = cmd.rstrip()[:-1].rstrip() + " " + lines[i].strip()
                i += 1
            out.append((f"{path}:{n}", cmd.strip()))
    return out


def strip_comment(cmd):
    """The command without its trailing comment (a '#' outside quotes, after a space)."""
    quote = None
    for i, c in enumerate(cmd):
        if quote:
            quote = None if c == quote else quote
        elif c in "'\"":
            quote = c
        elif c == "#" and (i == 0 or cmd[i - 1].isspace()):
            return cmd[:i].rstrip()
    return cmd.rstrip()


def is_synopsis(cmd):
    words = strip_comment(cmd)
    return bool(re.search(r"\[|\]|\.\.\.|(?<![\w/.:-])[A-Z][A-Z_]{2,}(?![\w])|\b(RUN|PCT|N)\b", words)) or \
        re.search(r"\btrain-\.\.\.", cmd) is not None


def setup(work):
    for name in ("tests", "scripts", "docs", "examples"):
        if os.path.exists(os.path.join(repo, name)):
            os.symlink(os.path.join(repo, name), os.path.join(work, name))
    os.symlink(build_dir, os.path.join(work, "build"))
    os.symlink(shared, os.path.join(os.path.dirname(work), "shared"))
    os.makedirs(os.path.join(work, "ex"))
    src = os.path.join(shared, "data", "sst2", "dev.tsv")
    rows = open(src, encoding="utf-8").read().splitlines()
    for name, part in (("train.tsv", rows[:33]), ("dev.tsv", [rows[0]] + rows[33:49])):
        open(os.path.join(work, "ex", name), "w", encoding="utf-8").write("\n".join(part) + "\n")
    open(os.path.join(work, "ex", "texts.txt"), "w").write("a charming film\nhello world\n")
    # The benchmark config docs/cli.md shows; quick: on bert-tiny with fewer runs (BERT-base's
    # three batch sizes at 128 tokens, 10 runs each, take minutes on 2 cores).
    config = next("\n".join(lines) for _, lang, lines in blocks("docs/cli.md") if lang == "yaml" and "profiling:" in
                  "\n".join(lines))
    if not FULL:
        config = config.replace("preset:bert-base-uncased", "preset:bert-tiny").replace(
            "num_measurement_runs: 10", "num_measurement_runs: 3")
    open(os.path.join(work, "ex", "config.yaml"), "w").write(config + "\n")
    open(os.path.join(work, "ex", "train.yaml"), "w").write(
        f"model: {TINY_SST2}\ntokenizer: {BERT_TOK}\ndataset: ex/train.tsv\nmax_steps: 2\nbatch_size: 4\nmax_length: 32\n")
    tach = os.path.join(build_dir, "tach")
    made = [
        [tach, "bench", "-m", "preset:bert-tiny", "-b", "1,2", "-s", "8", "--runs", "3", "--run-id", "ex-bench",
         "--no-progress"],
        [tach, "bench", "-m", "preset:bert-tiny", "-b", "1,2", "-s", "8", "--runs", "3", "--run-id", "ex-bench2",
         "--no-progress"],
        [tach, "train", "-m", TINY_SST2, "-k", BERT_TOK, "-d", "ex/train.tsv", "--max-steps", "2", "-b", "4", "-s",
         "32", "--run-id", "ex-train", "--no-progress"],
        [tach, "train", "-m", TINY_SST2, "-k", BERT_TOK, "-d", "ex/train.tsv", "--max-steps", "2", "-b", "4", "-s",
         "32", "--method", "lora", "--run-id", "ex-lora", "--no-progress"],
        [tach, "bench", "--train", "-m", "preset:bert-tiny", "-b", "2", "-s", "8", "--runs", "1", "--warmup", "0",
         "--gradient-checkpointing", "off,on", "--run-id", "ex-train-sweep", "--no-progress"],
    ]
    for args in made:
        r = subprocess.run(args, cwd=work, capture_output=True, text=True, timeout=TIMEOUT_S)
        if r.returncode != 0:
            print(f"setup failed: {' '.join(args)}\n{(r.stdout + r.stderr)[-2000:]}")
            sys.exit(1)


def rule_for(cmd):
    """Every matching rule, merged (a quick grid and the fields to check may come from two)."""
    merged = {}
    for pattern, rule in RULES:
        if re.search(pattern, cmd):
            for k, v in rule.items():
                merged[k] = merged.get(k, []) + v if isinstance(v, list) else merged.get(k, v)
    return merged


def main():
    top = tempfile.mkdtemp(prefix="tach-docs-")
    work = os.path.join(top, "work")
    os.makedirs(work)
    env = dict(os.environ, PYTHONPATH=os.path.join(build_dir, "python"), TACH_BINARY=os.path.join(build_dir, "tach"),
               XDG_CACHE_HOME=os.path.join(top, "cache"), HF_HUB_OFFLINE="1", PATH=build_dir + os.pathsep +
               os.environ.get("PATH", ""))
    failures, pending_failed, pending_passed, ran, skipped = [], [], [], 0, []
    try:
        if not LIST:
            setup(work)
        examples = []
        for path in FILES:
            examples += [(where, "sh", cmd) for where, cmd in commands(path)]
            for first, lang, lines in blocks(path):
                if lang == "python":
                    examples.append((f"{path}:{first}", "python", "\n".join(lines)))
        for where, kind, text in examples:
            if only and only not in text and only not in where:
                continue
            if kind == "python":
                why = next((w for p, w in PYTHON_SKIP if w and re.search(p, text)), None)
                if why:
                    skipped.append((where, why))
                    continue
                script = text
                for pattern, repl, _ in SUBST:
                    script = re.sub(pattern, repl, script)
                for pattern, repl, _ in ([] if FULL else PYTHON_QUICK):
                    script = re.sub(pattern, repl, script)
                args, shown = [PYTHON, "-c", script], "the python block"
                rule = {}
            else:
                cmd = text
                for pattern, repl, _ in SUBST:
                    cmd = re.sub(pattern, repl, cmd)
                if is_synopsis(cmd):
                    skipped.append((where, "a usage synopsis (check_help.py compares it with --help)"))
                    continue
                rule = rule_for(strip_comment(cmd))
                if "skip" in rule:
                    skipped.append((where, rule["skip"]))
                    continue
                body = strip_comment(cmd)
                if "quick" in rule and not FULL:
                    for pattern, repl in rule["quick"]:
                        body = re.sub(pattern, repl, body, count=1)
                args, shown = ["bash", "-c", body], body
            if LIST:
                print(f"run     {where}  {shown[:200]}")
                continue
            started = time.monotonic()
            try:
                r = subprocess.run(args, cwd=work, env=env, capture_output=True, text=True, timeout=TIMEOUT_S)
                code, out = r.returncode, r.stdout + r.stderr
            except subprocess.TimeoutExpired as e:
                code, out = "timeout", f"(no exit within {TIMEOUT_S:.0f} s)"
            took = time.monotonic() - started
            ran += 1
            problems = []
            allowed = rule.get("code", 0)
            allowed = allowed if isinstance(allowed, tuple) else (allowed,)
            if code not in allowed:
                problems.append(f"exit status {code}, expected {' or '.join(map(str, allowed))}")
            for field in rule.get("expect", []):
                if not re.search(field, out, re.MULTILINE):
                    problems.append(f"the output lacks /{field}/")
            pending = next((w for p, w in PENDING if re.search(p, text)), None)
            status = "ok" if not problems else ("PENDING" if pending else "FAIL")
            print(f"{status:7} {where}  ({took:.1f} s)  {shown[:150]}")
            if problems:
                detail = f"{where}: {shown}\n    " + "; ".join(problems) + "\n    " + out.strip()[-1500:].replace(
                    "\n", "\n    ")
                (pending_failed if pending else failures).append(detail + (f"\n    pending: {pending}" if pending else ""))
            elif pending:
                pending_passed.append(f"{where}: passes now; take it off PENDING ({pending})")
    finally:
        shutil.rmtree(top, ignore_errors=True)
    print(f"\nnot run ({len(skipped)}):")
    for where, why in skipped:
        print(f"  {where}: {why}")
    if pending_failed:
        print(f"\nknown pending failures ({len(pending_failed)}), not counted:")
        for d in pending_failed:
            print("  " + d)
    for d in pending_passed:
        print("  " + d)
    if failures:
        print(f"\nFAILED ({len(failures)} of {ran} run):")
        for d in failures:
            print("  " + d)
        return 1
    print(f"\n{ran} examples ran as documented ({'full' if FULL else 'quick'} mode)")
    return 0


sys.exit(main())
