// Options of tach bench / eval / run. Every flag says its default and unit; flags override the
// YAML file, which overrides the defaults.
#include "bench_options.h"

#include <cstdio>
#include <iostream>

#include "format.h"
#include "head_option.h"
#include "tach/error.h"
#include "tf32_option.h"
#include "usage.h"

namespace tach::cli {

namespace {

// 5e-05 rather than 0.000050.
std::string fixed_or_exp(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

std::string join(const std::vector<int64_t>& v) {
  std::string s;
  for (auto x : v) s += (s.empty() ? "" : ",") + std::to_string(x);
  return s;
}

}  // namespace

BenchConfig BenchFlags::resolve() const {
  BenchConfig c;
  if (!config_file.empty()) c = bench_config_from_yaml(config_file, c);
  // A training sweep (--train, or a training: section) starts from its own defaults.
  if (train || c.train.enabled) {
    c = train_sweep_defaults();
    if (!config_file.empty()) c = bench_config_from_yaml(config_file, c);
    c.train.enabled = true;
  }
  for (const auto& [opt, apply] : given)
    if (opt->count() > 0) apply(c);
  check_sweep_config(c);  // before anything reads the model: a bad value is a usage error now
  check_allow_tf32(c.allow_tf32, c.devices, c.dtypes, c.train.enabled);
  return c;
}

void add_bench_options(CLI::App* sub, BenchFlags& f, BenchScope scope) {
  const BenchConfig d;
  auto& v = f.values;
  const auto on = [&f](CLI::Option* o, std::function<void(BenchConfig&)> apply) {
    f.given.emplace_back(o, std::move(apply));
  };
  sub->add_option("-c,--config", f.config_file,
                  "YAML config (shape: model{name,device,dtype}, dataset{path,text_column,label_column,split,"
                  "sample_sizes}, profiling{batch_sizes,num_warmup_runs,num_measurement_runs,max_length}); flags "
                  "override it")
      ->check(CLI::ExistingFile);
  on(sub->add_option("-m,--model", v.model,
                     "Model: preset:NAME, a directory with config.json and safetensors, or a hub id in the HF cache "
                     "(default " +
                         d.model + ")"),
     [&v](BenchConfig& c) { c.model = v.model; });
  on(sub->add_option("--adapter", v.adapter,
                     "A LoRA adapter directory as peft saves it (adapter_config.json, adapter_model.safetensors), "
                     "merged into the model's weights at load"),
     [&v](BenchConfig& c) { c.adapter = v.adapter; });
  on(add_head_option(sub, v.head, HeadUse::as_published), [&v](BenchConfig& c) { c.head = v.head; });
  on(sub->add_option("-k,--tokenizer", v.tokenizer,
                     "Tokenizer for dataset texts: tokenizer.json or a directory (default: the model directory's)"),
     [&v](BenchConfig& c) { c.tokenizer = v.tokenizer; });
  on(sub->add_option("--dtype", f.dtypes,
                     "Compute dtypes, comma-separated: f32, bf16, int8 (the linears quantized: dynamically on the cpu, "
                     "weight-only on cuda) or nf4 (4-bit weights); f16 too on cuda (default f32)")
         ->delimiter(','),
     [&f](BenchConfig& c) {
       c.dtypes.clear();
       for (const auto& s : f.dtypes)
         c.dtypes.push_back(s == "float32" ? "f32" : s == "bfloat16" ? "bf16" : s == "float16" ? "f16" : s);
     });
  on(sub->add_option("--seed", v.seed, "Seed for synthetic weights and ids, and the dataset shuffle (default 0)"),
     [&v](BenchConfig& c) { c.seed = v.seed; });
  on(sub->add_option("--runs-dir", v.runs_dir, "Where run directories go (default " + d.runs_dir + ")"),
     [&v](BenchConfig& c) { c.runs_dir = v.runs_dir; });
  on(sub->add_option("--run-id", v.run_id, "Name of the run directory (default: UTC time and model name)"),
     [&v](BenchConfig& c) { c.run_id = v.run_id; });

  on(sub->add_option(
            "--device", v.devices,
            std::string(scope == BenchScope::eval ? "Devices of the accuracy pass (one pass each)" : "Devices") +
                ", comma-separated: cpu, cuda, cuda:N, or auto: the first GPU when one is usable, else "
                "the CPU (default auto)")
         ->delimiter(',')
         ->check(device_name(true)),
     [&v](BenchConfig& c) { c.devices = v.devices; });
  if (scope != BenchScope::eval)
    on(add_allow_tf32_option(sub, v.allow_tf32), [&v](BenchConfig& c) { c.allow_tf32 = v.allow_tf32; });
  if (scope == BenchScope::eval) {
    on(sub->add_option("-t,--threads", v.threads,
                       "Threads of the accuracy pass; 0 = the cores other processes leave free at start, or "
                       "OMP_NUM_THREADS (default 0)")
           ->expected(1)
           ->check(thread_count()),
       [&v](BenchConfig& c) { c.threads = v.threads; });
  }
  if (scope != BenchScope::eval) {
    on(sub->add_option(kBatchOption, v.batch_sizes,
                       "Batch sizes, comma-separated, in samples (default " + join(d.batch_sizes) + ")")
           ->delimiter(',')
           ->check(positive_count("batch size", "batch sizes")),
       [&v](BenchConfig& c) { c.batch_sizes = v.batch_sizes; });
    on(sub->add_option("-s,--seq-lens,--max-length", v.seq_lens,
                       "Sequence lengths in tokens, comma-separated: exact for synthetic input, the truncation and "
                       "padding length for dataset input (default " +
                           join(d.seq_lens) + ")")
           ->delimiter(',')
           ->check(positive_count("sequence length", "sequence lengths")),
       [&v](BenchConfig& c) { c.seq_lens = v.seq_lens; });
    on(sub->add_option("-t,--threads", v.threads,
                       "Thread counts, comma-separated; 0 = the cores other processes leave free at start, or "
                       "OMP_NUM_THREADS (default 0; a resumed run keeps the count its earlier points used)")
           ->delimiter(',')
           ->check(thread_count()),
       [&v](BenchConfig& c) { c.threads = v.threads; });
    on(sub->add_option("--engine", v.engines,
                       "Engines, comma-separated: tach; torch (PyTorch eager), torch-compile (torch.compile), "
                       "onnxruntime (the model exported to ONNX), python-matmul (a pure-Python stand-in that tests "
                       "the harness). Each other engine runs in a Python worker process on the same token ids, its "
                       "outputs checked against tach's, under the same stopping rule (default tach). With --train: "
                       "tach, torch, torch-compile, python-matmul train the same batch from the checkpoint, their "
                       "first 3 steps' losses checked against tach's (--no-dropout to compare them)")
           ->delimiter(','),
       [&v](BenchConfig& c) { c.engines = v.engines; });
    on(sub->add_option(
           "--python", v.python,
           "The Python that runs the other engines' workers (a virtualenv's bin/python with torch, "
           "transformers, onnxruntime; peft for --method lora, and bitsandbytes for qlora; default python3)"),
       [&v](BenchConfig& c) { c.python = v.python; });
    on(sub->add_option("--warmup", v.warmup_runs,
                       "Warm-up runs per point, never measured (default " + std::to_string(d.warmup_runs) + ")"),
       [&v](BenchConfig& c) { c.warmup_runs = v.warmup_runs; });
    on(sub->add_option("--energy-window", v.gpu_energy_window_s,
                       "On a GPU: the least seconds between two steps of NVML's energy counter for the energy per "
                       "run: forwards after each point's timed runs; with --train, the measured steps (and more "
                       "where they are shorter) (0: none; default " +
                           fixed(d.gpu_energy_window_s, 1) + ")")
           ->check(CLI::NonNegativeNumber),
       [&v](BenchConfig& c) { c.gpu_energy_window_s = v.gpu_energy_window_s; });
    on(sub->add_option("-r,--runs", v.stop.runs,
                       "Exactly N measured runs per point (the count rule; default: off, "
                       "the adaptive rule below)"),
       [&v](BenchConfig& c) { c.stop.runs = v.stop.runs; });
    on(sub->add_option(
           "--min-runs", v.stop.min_runs,
           "Adaptive rule: at least this many measured runs (default " + std::to_string(d.stop.min_runs) + ")"),
       [&v](BenchConfig& c) { c.stop.min_runs = v.stop.min_runs; });
    on(sub->add_option(
           "--max-runs", v.stop.max_runs,
           "Adaptive rule: at most this many measured runs (default " + std::to_string(d.stop.max_runs) + ")"),
       [&v](BenchConfig& c) { c.stop.max_runs = v.stop.max_runs; });
    on(sub->add_option("--time-budget", v.stop.time_budget_s,
                       "Adaptive rule: stop once this many seconds were measured; 0 = off (default " +
                           fixed(d.stop.time_budget_s, 1) + " s)"),
       [&v](BenchConfig& c) { c.stop.time_budget_s = v.stop.time_budget_s; });
    on(sub->add_option("--target-cv", v.stop.target_cv,
                       "Adaptive rule: stop once the median's relative standard error is below this fraction; 0 = off "
                       "(default " +
                           fixed(d.stop.target_cv, 2) + " = 2%)"),
       [&v](BenchConfig& c) { c.stop.target_cv = v.stop.target_cv; });
    on(sub->add_option("--input", v.input,
                       "Inputs: synthetic (random ids at exactly the length) or dataset (texts from --dataset) "
                       "(default synthetic)")
           ->check(CLI::IsMember({"synthetic", "dataset"})),
       [&v](BenchConfig& c) { c.input = v.input; });
    on(sub->add_flag("--bucketing", v.bucketing,
                     "Dataset input: batch texts of similar length and pad to the longest, not to --max-length"),
       [&v](BenchConfig& c) { c.bucketing = v.bucketing; });
    on(sub->add_flag(
           "--accuracy", v.accuracy,
           "Also run the accuracy pass over --dataset (a token classifier's seqeval scores and a question-answering "
           "model's SQuAD scores as tach eval gives them; with --engine, each other engine's too: the same token "
           "ids, scored by tach's metrics, with the predictions that differ from tach's)"),
       [&v](BenchConfig& c) { c.accuracy = v.accuracy; });
    on(sub->add_option(
           "--decode-tokens", v.decode_tokens,
           "Causal LMs: after each point's prefill runs, time greedy decoding of this many new tokens from "
           "the point's prompts (every step, with the bandwidth limit and the median's fraction of it); 0 = "
           "prefill only (default " +
               std::to_string(d.decode_tokens) + ")"),
       [&v](BenchConfig& c) { c.decode_tokens = v.decode_tokens; });
    on(sub->add_option("--latency-budget-ms", v.latency_budget_ms,
                       "The summary names the best batch size whose p95 batch latency is within this many ms"),
       [&v](BenchConfig& c) { c.latency_budget_ms = v.latency_budget_ms; });
    on(sub->add_flag("--profile", v.profile,
                     "After each point's measured runs, profile 2 forwards (--train: its profiled step) into "
                     "traces/<point>/ (trace.json, op tables, stacks); the point's timings never include the profiler"),
       [&v](BenchConfig& c) { c.profile = v.profile; });
    on(sub->add_flag("--tensorboard,!--no-tensorboard", v.tensorboard,
                     "TensorBoard event files of each point's latency percentiles and throughput (--train: and of "
                     "every measured step) in RUN_DIR/tensorboard/ (default on)"),
       [&v](BenchConfig& c) { c.tensorboard = v.tensorboard; });
    sub->add_option("--format", f.format, "Result table on stdout: table, md, csv, json, jsonl (default table)")
        ->check(CLI::IsMember({"table", "md", "csv", "json", "jsonl"}));
    sub->add_flag("--no-progress", f.no_progress,
                  "No progress: no bar on a terminal, no line per point elsewhere (failures still print)");
    sub->add_option("--resume", f.resume,
                    "Continue the interrupted run in this directory with its own config.json; finished points are "
                    "kept and skipped")
        ->check(CLI::ExistingDirectory);
  } else {
    on(sub->add_option("-s,--max-length", v.eval_max_length,
                       "Truncate texts to this many tokens (default " + std::to_string(d.eval_max_length) +
                           ", and never past the model's positions)"),
       [&v](BenchConfig& c) { c.eval_max_length = v.eval_max_length; });
  }

  // The dataset, for accuracy and dataset input.
  on(sub->add_option("-d,--dataset", v.dataset.path,
                     "Labelled dataset: .csv, .tsv, .jsonl, .parquet, .json with splits, or a Hub dataset (glue/sst2, "
                     "hf://datasets/ORG/NAME[/CONFIG]; Parquet splits through the cache)"),
     [&v](BenchConfig& c) { c.dataset.path = v.dataset.path; });
  on(sub->add_option("--dataset-format", v.dataset.format,
                     "auto (from the extension), csv, tsv, jsonl, json, parquet; conll (tagged words, tach eval on a "
                     "token classifier)")
         ->check(CLI::IsMember({"auto", "csv", "tsv", "jsonl", "json", "parquet", "conll"})),
     [&v](BenchConfig& c) { c.dataset.format = v.dataset.format; });
  on(sub->add_option("--text-column", v.dataset.text_column,
                     "Text column or key; a 0-based index for files without a header (default text)"),
     [&v](BenchConfig& c) { c.dataset.text_column = v.dataset.text_column; });
  on(sub->add_option("--text-pair-column", v.dataset.text_pair_column, "Second text column, for sentence pairs"),
     [&v](BenchConfig& c) { c.dataset.text_pair_column = v.dataset.text_pair_column; });
  on(sub->add_option("--label-column", v.dataset.label_column,
                     "Label column or key; labels match the model's id2label names, or integer ids (default label)"),
     [&v](BenchConfig& c) { c.dataset.label_column = v.dataset.label_column; });
  on(sub->add_option("--split", v.dataset.split,
                     "Split of a JSON split file (default test) or of a Hub dataset (validation, test, ...)"),
     [&v](BenchConfig& c) { c.dataset.split = v.dataset.split; });
  on(sub->add_option("--header", v.dataset.header, "CSV/TSV header: auto, yes, no (default auto)")
         ->check(CLI::IsMember({"auto", "yes", "no"})),
     [&v](BenchConfig& c) { c.dataset.header = v.dataset.header; });
  on(sub->add_option("--sample-sizes", v.sample_sizes,
                     "Accuracy on the first N of the shuffled examples, per N, comma-separated (default: all)")
         ->delimiter(','),
     [&v](BenchConfig& c) { c.sample_sizes = v.sample_sizes; });
  on(sub->add_option("--limit", v.limit, "Read at most N examples (after the seeded shuffle); 0 = all"),
     [&v](BenchConfig& c) { c.limit = v.limit; });
  on(sub->add_option("--eval-batch-size", v.eval_batch_size,
                     "Batch size of the accuracy pass, in samples (default " + std::to_string(d.eval_batch_size) + ")")
         ->check(positive_count("evaluation batch size", "evaluation batch sizes")),
     [&v](BenchConfig& c) { c.eval_batch_size = v.eval_batch_size; });
}

void check_some_point_ran(const SweepOutcome& out) {
  if (out.results.empty()) return;
  int failed = 0, skipped = 0;
  for (const auto& p : out.results) {
    if (p.status == "ok") return;
    (p.status == "skipped" ? skipped : failed)++;
  }
  const PointResult& first = out.results.front();
  throw Error("no point of the sweep ran: " + std::to_string(failed) + " failed" +
              (skipped ? ", " + std::to_string(skipped) + " skipped" : std::string()) + "; the first, " +
              first.key.id() + ": " + first.reason + " (every point's reason is in " + out.run_dir + "/results.jsonl)");
}

void check_resume_alone(const BenchFlags& f) {
  if (f.resume.empty()) return;
  for (const auto& [opt, _] : f.given)
    check(opt->count() == 0, "--resume continues a run with its own config.json; drop " + opt->get_name() +
                                 " (start a new run to change the configuration)");
  check(f.config_file.empty(), "--resume continues a run with its own config.json; drop --config");
}

void add_train_sweep_options(CLI::App* sub, BenchFlags& f) {
  const TrainSweep d;
  auto& t = f.values.train;
  const auto on = [&f](CLI::Option* o, std::function<void(BenchConfig&)> apply) {
    f.given.emplace_back(o, std::move(apply));
  };
  sub->add_flag("--train", f.train,
                "A training sweep: each point times training steps (data, forward with the loss, backward, clipping, "
                "AdamW) instead of forwards. Defaults: batch 8,16,32,64, 1 warm-up step, 3 to 20 measured steps "
                "(20 s or a 5% standard error); with no model, DistilBERT-base (synthetic weights), seq 128, full, "
                "eager: a few minutes on 2 cores");
  const auto needs_train = [&f](const std::string& flag) {
    return [&f, flag](BenchConfig& c) {
      check(f.train || c.train.enabled, flag + " is a training sweep's axis: add --train");
    };
  };
  on(sub->add_option("--task", f.task,
                     "--train: the head that trains, as tach train --task: sequence-classification (default), mlm, "
                     "token-classification, question-answering (synthetic rows and targets of the task's shape)")
         ->check(CLI::IsMember({"sequence-classification", "mlm", "token-classification", "question-answering"})),
     [&f, needs_train](BenchConfig& c) {
       needs_train("--task")(c);
       c.train.task = f.task;
     });
  on(sub->add_option("--method", f.methods, "--train: methods, comma-separated: full, lora, qlora (default full)")
         ->delimiter(',')
         ->check(CLI::IsMember({"full", "lora", "qlora"})),
     [&f, needs_train](BenchConfig& c) {
       needs_train("--method")(c);
       c.train.methods = f.methods;
     });
  on(sub->add_option("--exec", f.execs, "--train: executions, comma-separated: eager, fused (default eager)")
         ->delimiter(',')
         ->check(CLI::IsMember({"eager", "fused"})),
     [&f, needs_train](BenchConfig& c) {
       needs_train("--exec")(c);
       c.train.execs = f.execs;
     });
  on(sub->add_option("--gradient-checkpointing", f.checkpointing,
                     "--train: gradient checkpointing, comma-separated: off, on (default off)")
         ->delimiter(',')
         ->check(CLI::IsMember({"off", "on"})),
     [&f, needs_train](BenchConfig& c) {
       needs_train("--gradient-checkpointing")(c);
       c.train.gradient_checkpointing.clear();
       for (const auto& s : f.checkpointing) c.train.gradient_checkpointing.push_back(s == "on");
     });
  const auto number = [&](const char* flag, double& value, double def, const char* what, double TrainSweep::*field) {
    on(sub->add_option(flag, value, std::string("--train: ") + what + " (default " + fixed_or_exp(def) + ")"),
       [&value, field, needs_train, flag](BenchConfig& c) {
         needs_train(flag)(c);
         c.train.*field = value;
       });
  };
  number("--lr", t.lr, d.lr, "the learning rate", &TrainSweep::lr);
  number("--weight-decay", t.weight_decay, d.weight_decay, "AdamW's weight decay", &TrainSweep::weight_decay);
  number("--adam-beta1", t.adam_beta1, d.adam_beta1, "AdamW's beta1", &TrainSweep::adam_beta1);
  number("--adam-beta2", t.adam_beta2, d.adam_beta2, "AdamW's beta2", &TrainSweep::adam_beta2);
  number("--adam-epsilon", t.adam_eps, d.adam_eps, "AdamW's epsilon", &TrainSweep::adam_eps);
  number("--max-grad-norm", t.max_grad_norm, d.max_grad_norm, "clip the gradient norm to this; 0 = no clipping",
         &TrainSweep::max_grad_norm);
  number("--lora-alpha", t.lora_alpha, d.lora_alpha, "LoRA's alpha", &TrainSweep::lora_alpha);
  number("--lora-dropout", t.lora_dropout, d.lora_dropout, "dropout on the LoRA adapters' inputs",
         &TrainSweep::lora_dropout);
  on(sub->add_option("--lora-r", t.lora_r, "--train: LoRA's rank (default " + std::to_string(d.lora_r) + ")"),
     [&t, needs_train](BenchConfig& c) {
       needs_train("--lora-r")(c);
       c.train.lora_r = t.lora_r;
     });
  on(sub->add_flag("--no-dropout", f.no_dropout,
                   "--train: dropout off (default: the model's rates, as in training mode)"),
     [needs_train](BenchConfig& c) {
       needs_train("--no-dropout")(c);
       c.train.dropout = false;
     });
}

void add_slurm_options(CLI::App* sub, SlurmFlags& s) {
  sub->add_flag("--slurm", s.submit,
                "Submit the sweep to SLURM as a job array instead of running it here: RUN_DIR/slurm/sweep.sbatch, one "
                "task per curve over batch sizes, each task writing its points to RUN_DIR/results.d/; with --resume, "
                "submit only the points still missing. tach report RUN_DIR reads the run once its points are in");
  auto& o = s.options;
  s.submit_only = {
      sub->add_option("--slurm-partition", o.partition, "--slurm: the partition (default: the cluster's)"),
      sub->add_option("--slurm-time", o.time, "--slurm: each task's time limit, as sbatch --time takes it (30:00)"),
      sub->add_option("--slurm-cpus-per-task", o.cpus_per_task,
                      "--slurm: cores per task; a point's threads 0 then means these cores (default: SLURM's)")
          ->check(CLI::PositiveNumber),
      sub->add_option("--slurm-gpus-per-task", o.gpus_per_task,
                      "--slurm: GPUs per task; --device auto then means cuda (default 0)")
          ->check(CLI::NonNegativeNumber),
      sub->add_option("--slurm-array-parallelism", o.array_parallelism,
                      "--slurm: at most this many tasks at once (sbatch --array=0-N%P; default: no limit)")
          ->check(CLI::PositiveNumber),
      sub->add_flag("--slurm-dry-run", o.dry_run, "--slurm: write the script and the plan, submit nothing"),
  };
  sub->add_option("--slurm-plan", s.plan,
                  "What sweep.sbatch runs in each array task: the plan file (RUN_DIR/slurm/plan-N.json), with "
                  "--resume RUN_DIR and --slurm-task")
      ->check(CLI::ExistingFile);
  sub->add_option("--slurm-task", s.task, "What sweep.sbatch runs: the array task's index in --slurm-plan")
      ->check(CLI::NonNegativeNumber);
}

}  // namespace tach::cli
