// tach bench: inference sweeps (batch × sequence length × dtype × device × threads), training
// sweeps (tach bench --train: the same axes, and method × exec × gradient checkpointing), the
// accuracy pass, and the run directory that keeps every finished point.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "tach/dataset.h"

namespace tach {

// When a point stops measuring. Warm-up runs are never measured.
struct StoppingRule {
  int runs = 0;              // > 0: exactly this many measured runs (the count rule); the rest is ignored
  int min_runs = 5;          // the other rules never stop before this many
  int max_runs = 50;         // ... and always stop here
  double time_budget_s = 5;  // > 0: stop once the measured runs took this long
  // > 0: stop once the relative standard error of the median (1.2533 s / (sqrt(n) median), for
  // roughly normal noise) is below this
  double target_cv = 0.02;
  std::string describe() const;
};

// tach bench --train: every point is a training step (forward with the loss, backward, clipping,
// AdamW) instead of a forward, swept over these axes on top of the inference ones. The optimizer
// settings are tach train's, with its defaults.
struct TrainSweep {
  bool enabled = false;
  // The head that trains, as tach train --task: sequence-classification (a new 2-label head where
  // the checkpoint has none), mlm (15% of tokens chosen), token-classification, question-answering.
  std::string task = "sequence-classification";
  std::vector<std::string> methods{"full"};  // full | lora | qlora
  std::vector<std::string> execs{"eager"};   // eager | fused
  std::vector<bool> gradient_checkpointing{false};
  double lr = 5e-5, weight_decay = 0, adam_beta1 = 0.9, adam_beta2 = 0.999, adam_eps = 1e-8;
  double max_grad_norm = 1.0;  // 0: no clipping
  bool dropout = true;         // the model's dropout rates, as in training mode
  int64_t lora_r = 8;
  double lora_alpha = 8, lora_dropout = 0;
};

struct BenchConfig {
  std::string model = "preset:distilbert-base-uncased";
  std::string tokenizer;  // texts: a tokenizer file or directory; default the model directory's
  std::string adapter;    // a peft LoRA adapter directory merged into the weights at load (empty: none)
  // The head the points run (--head): "auto" (the checkpoint's own, as published) or a head's
  // name (head_name), built new where the checkpoint lacks it.
  std::string head = "auto";
  // cpu, cuda, cuda:N, or auto: the first GPU when one is usable (forwards), else the CPU;
  // resolved when the run starts, and config.json keeps what it resolved to.
  std::vector<std::string> devices{"auto"};
  std::vector<std::string> dtypes{"f32"};  // f32 | bf16 (compute)
  // CUDA points in f32: the linears' GEMMs on TF32 tensor cores (LoadOptions::allow_tf32);
  // config.json keeps it, so tach compare can say when two runs differ in it.
  bool allow_tf32 = false;
  std::vector<int64_t> batch_sizes{1, 2, 4, 8, 16, 32};
  std::vector<int64_t> seq_lens{128};  // synthetic: exact length; dataset: max_length
  std::vector<int> threads{0};         // 0: the default (the cores free at start, or OMP_NUM_THREADS)
  int warmup_runs = 2;
  StoppingRule stop;
  // On a GPU, after a point's timed runs: forwards back to back for at least this long between
  // two steps of NVML's energy counter, for the energy per forward (0: no energy reading).
  double gpu_energy_window_s = 1.0;
  uint64_t seed = 0;  // synthetic weights and token ids, dataset shuffle

  // Inputs: "synthetic" token ids at exactly seq_len, or "dataset" texts tokenized, truncated
  // to seq_len, and padded to seq_len (bucketing off) or to the longest row of a batch of
  // similar lengths (bucketing on).
  std::string input = "synthetic";
  DatasetOptions dataset;
  bool bucketing = false;

  // The accuracy pass (needs a dataset).
  bool accuracy = false;
  std::vector<int64_t> sample_sizes;  // accuracy on the first N of the shuffled examples, per N
  int64_t limit = 0;                  // > 0: at most this many examples in all
  int64_t eval_batch_size = 32;
  int64_t eval_max_length = 128;

  double latency_budget_ms = 0;  // > 0: summary names the best batch size with p95 batch latency under it
  // Causal LMs: after a point's prefill runs, greedy decoding of this many new tokens from the
  // point's prompts (batch rows of seq_len ids), every step timed, with decoding's bandwidth limit
  // (llama-bench's tg beside its pp). 0: prefill only. Other models ignore it.
  int64_t decode_tokens = 32;
  // After each point's measured runs (never during them): 1 warm-up and 2 profiled forwards,
  // written to traces/<point>/ (trace.json, op tables, stacks).
  bool profile = false;
  // Each point's figures (and a training point's every step) as TensorBoard events in
  // RUN_DIR/tensorboard/.
  bool tensorboard = true;
  std::string runs_dir = "runs";
  std::string run_id;  // default: UTC time and model name
  TrainSweep train;    // enabled: a training sweep
  // The engines every point runs on (--engine): tach (this process), or torch, torch-compile,
  // onnxruntime, python-matmul, each in a worker process of its own (docs/engines.md), fed the
  // same token ids as tach. config.json keeps them beside the other settings.
  std::vector<std::string> engines{"tach"};
  std::string python;  // the workers' interpreter (--python; "" is python3)
};

// A training sweep's defaults, under a YAML file and flags: batch 8 to 64 (the inference default
// starts at 1, which a training sweep rarely wants), 1 warm-up step, and a stopping rule for
// steps of seconds: at least 3 and at most 20 steps, 20 s, or a 5% standard error.
BenchConfig train_sweep_defaults();

// Defaults, then the YAML file (the benchmark config.yaml shape: model, dataset, profiling, plus tach's own keys).
// Unknown keys and values of the wrong type are errors that name the key.
BenchConfig bench_config_from_yaml(const std::string& path, BenchConfig base = {});
BenchConfig bench_config_from_yaml_text(const std::string& text, const std::string& source, BenchConfig base = {});
std::string bench_config_to_json(const BenchConfig& config);  // config.json of a run
BenchConfig bench_config_from_json(const std::string& json_text, const std::string& where);

struct PointKey {
  // tach shrink's rows: the variant of the model the point ran (f32, int8, heads:0.5, a student);
  // empty for every other run, whose ids it leaves as they were. A variant fixes its dtype, so
  // id_without("variant") leaves the dtype out too: f32 and int8 rows then meet.
  std::string variant;
  std::string engine = "tach";  // tach, or the engine of a worker process (BenchConfig::engines)
  std::string device = "cpu";
  std::string dtype = "f32";
  int threads = 0;
  int64_t batch = 1;
  int64_t seq_len = 128;
  std::string kind = "inference";  // inference | train
  // Training points only.
  std::string method, exec;  // full | lora | qlora; eager | fused
  bool gradient_checkpointing = false;
  // Unique within a run: "cpu/f32/t0/b8/s128"; a training point adds "/full/eager/gc-off"; another
  // engine's point starts with it ("torch/cpu/f32/t0/b8/s128"; tach's points keep their ids), and
  // a tach shrink row with its variant ("int8/cpu/int8/t0/b8/s128").
  std::string id() const;
  // The id without one axis (variant, engine, batch, seq_len, device, dtype, threads, method, exec,
  // gradient_checkpointing): what two points differing only in that axis share.
  std::string id_without(const std::string& axis) const;
  // The axis's value as id() writes it ("b8", "eager", "gc-on"; "" for tach's engine).
  std::string value_of(const std::string& axis) const;
};

struct PointResult;
// The point's thread count as tables and titles show it: "2" when asked for, "1 (default)" when
// the default ran, "default" when the count used was not recorded.
std::string threads_label(const PointResult& p);

// The axes a point is keyed by, in id order.
const std::vector<std::string>& point_axes();

// Order statistics of one quantity, with its unit in the name of the field that holds it.
struct Distribution {
  int64_t n = 0;
  double median = 0, mean = 0, std = 0, min = 0, max = 0, p90 = 0, p95 = 0, p99 = 0;
};

struct MemoryCategoryBytes {
  int64_t current = 0, peak = 0;
};

struct PointResult {
  PointKey key;
  std::string status = "ok";  // ok | failed | skipped
  std::string reason;         // why it failed or was skipped
  std::string input;          // "synthetic" | "dataset <path>"
  int warmup_runs = 0;
  int measured_runs = 0;
  std::string stopped_by;  // which rule stopped the point, in words
  // The threads the point ran with, where key.threads is what was asked (0: the default, the cores
  // other processes left free when tach started, or OMP_NUM_THREADS). 0: not recorded (a line
  // written before it was).
  int threads_used = 0;
  Distribution batch_latency_ms, sample_latency_ms, tokenize_ms_per_batch;
  // Every measured run's batch latency, in the order measured (schema /2; empty when read from a
  // /1 line, which kept only the summary): what distributions and run comparisons resample.
  std::vector<double> batch_latency_samples_ms;
  double samples_per_s = 0, tokens_per_s = 0, batches_per_s = 0;  // over the measured time
  double padded_tokens_per_batch = 0, real_tokens_per_batch = 0;
  double flops_per_batch = 0, achieved_gflops_per_s = 0;  // from the ops' declared costs
  // tach's GPU f32 points run with --allow-tf32: the linears multiplied on TF32 tensor cores, so
  // their compute ceiling is the TF32 GEMM's (results.jsonl "gemm_tf32"; absent: false).
  bool gemm_tf32 = false;
  // The forward's activations: "bf16" or "f16" where a GPU point's model ran them end to end in
  // its compute dtype, else "f32" (results.jsonl "activations"; absent in older lines: "f32").
  std::string activations = "f32";
  // GPU points: the GPU time of each measured run, from CUDA events on tach's stream around the
  // forward (the copies of the batch in and the results out included, and any time the GPU
  // waited for the host to launch); n = 0 on the CPU.
  Distribution gpu_time_ms;
  // GPU points: the kernels the attention ran in the measured runs, in words: "cudnn fused (bf16)",
  // "tach tiles f32 (why cuDNN's did not run)", several joined by "; "; "" on the CPU (results.jsonl
  // "attention"; absent in older lines).
  std::string attention;
  int64_t rss_bytes = 0, peak_rss_bytes = 0;
  bool peak_rss_is_per_point = true;  // false when the kernel would not reset VmHWM
  // The allocator's books for the point's device (the GPU's for a GPU point), per category, and "total".
  std::map<std::string, MemoryCategoryBytes> allocator;
  // GPU points: device memory in use per the driver after the measured runs (every process's,
  // and the pool's cached blocks, which tach keeps), -1 on the CPU.
  int64_t device_memory_used_bytes = -1;
  // Training points: what a step is made of. Their batch latency is the whole step's (data,
  // forward, backward, optimizer), one run is one optimizer step over one batch, and the FLOPs
  // are the step's.
  struct Train {
    Distribution data_ms, forward_ms, backward_ms, optimizer_ms;  // per step
    double loss_first = 0, loss_last = 0;                         // of the measured steps
    int64_t parameters = 0, trainable_parameters = 0;
    // The ops' declared FLOPs of one step, from a profiled step after the measured ones: model
    // FLOPs leave out a checkpointed layer's recomputation, hardware FLOPs count it.
    double model_flops_per_step = 0, hardware_flops_per_step = 0;
    // Achieved model FLOP/s (over the summed measured step time) against the measured GEMM
    // ceiling of the point's precision (tach info --ceilings), and that ceiling.
    double mfu = -1, ceiling_gflops_per_s = 0;
    // The load that ceiling was measured under (results.jsonl train.ceiling_load; a sweep measures
    // it once and judges every point against it). Under load, the ceiling is too low and MFU and
    // GEMM efficiency are not efficiencies: the reports say so.
    bool ceiling_under_load = false;
    double ceiling_other_cores = -1, ceiling_load_average = -1;  // -1: not recorded
    // The GEMMs' share of the profiled step's op time, and their achieved fraction of the ceiling
    // (linear, linear_backward and the NF4 linears: FLOPs over self time).
    double gemm_time_share = -1, gemm_efficiency = -1;
    // tach estimate's peak for this point (bytes; 0: no estimate for this model) and the memory
    // it saw available.
    int64_t estimate_bytes = 0, available_bytes = 0;
    std::string precision;  // how the GEMMs ran: f32, bf16, or bf16 emulated
    // Under mpirun: the ranks (the batch is per rank, and samples/s and tokens/s count every
    // rank's rows over rank 0's step time), and rank 0's gradient all-reduce per step: its time
    // on the communication thread, and what the step waited for after its backward.
    int world_size = 1;
    Distribution communication_ms, communication_exposed_ms;
  } train;
  // Causal-LM points with decode_tokens > 0: one greedy generation after the prefill runs (and one
  // untimed before it), its decode steps (each one new token for every row; the first token is the
  // prefill's) against decoding's bandwidth limit (tach/profile.h DecodeLimit). step_ms.n = 0: none.
  struct Decode {
    Distribution step_ms;
    std::vector<double> step_samples_ms;                         // every step, in order: what tach compare resamples
    double tokens_per_s = 0;                                     // rows x steps over the steps' summed time
    double time_to_first_token_ms = 0;                           // the generation's prefill and first choice
    double weight_bytes_per_step = 0, cache_bytes_per_step = 0;  // the least a step reads (cache: mean)
    double memory_bytes_per_s = 0, limit_ms = 0, fraction_of_limit = 0;                 // STREAM triad (GPU: copy)
    double memory_read_bytes_per_s = 0, read_limit_ms = 0, fraction_of_read_limit = 0;  // CPU read-only; 0 on a GPU
    std::string bandwidth_method, method, warning;  // where the bandwidth came from; how the steps ran; a limit beaten
  } decode;
  // Energy of the measured runs: CPU package + DRAM from RAPL. -1 when unavailable, with the
  // reason in energy_source: never estimated from TDP.
  double energy_j = -1, energy_j_per_sample = -1, energy_j_per_token = -1;
  std::string energy_source;
  // Other processes' CPU use while the point was measured (results.jsonl "load"; absent in older
  // runs: measured = false, and the load is unknown, not different). contended: they took cores
  // the point's threads needed. tach compare calls a change inconclusive where either point was
  // contended.
  struct Load {
    bool measured = false;
    double other_cores_mean = 0, other_cores_max = 0;  // cores (1.0 = one core fully busy)
    double load_average_1m = 0;
    bool contended = false;
  } load;
  // Another engine's point (key.engine not tach): what its worker reported, and what tach checked
  // before timing. Its runs are timed by the worker around each call (with a device synchronisation
  // on a GPU) and driven by tach's stopping rule, in chunks of calls per request.
  struct EngineRun {
    std::string versions;  // "python 3.11.2, torch 2.5.1, transformers 4.46.0"
    std::string task;      // what the worker loaded: sequence-classification, ...
    // One-time costs, apart from the steady state: the load; the setup (torch.compile, the ONNX
    // export, cached per model) and the first call (where torch.compile compiles).
    double load_s = 0, setup_s = 0, first_call_s = 0;
    std::string setup_kind = "none";  // none | torch.compile | onnx export
    bool setup_cached = false;
    double setup_cache_age_s = -1;  // -1: not reused from the cache
    // The protocol's own cost: the median ping round trip, and per timed call, tach's clock around
    // each request of calls minus the worker's summed call times, over the calls (the median chunk).
    double ping_round_trip_us = 0, protocol_us_per_call = 0;
    int64_t chunks = 0;  // time requests the measured runs took
    // The outputs compared with tach's own for the same ids, before timing: the largest absolute
    // difference against the dtype's tolerance. checked false: not compared (why in outputs_note).
    bool outputs_checked = false, outputs_agree = false;
    std::string outputs_name, outputs_note;  // "logits"
    double max_abs_diff = -1, tolerance = 0;
    // A training point (--train): the outputs check above is of the losses of the first steps, on
    // the same batch from the same checkpoint; both trajectories kept (a non-finite loss: NaN).
    std::vector<double> tach_losses, engine_losses;
    int loss_steps_compared = 0;
    // The worker's memory (RSS above; the device's peaks from its allocator; -1: none).
    int64_t device_allocated_peak_bytes = -1, device_reserved_peak_bytes = -1;
    std::string log;  // the worker's stderr, relative to the run directory
  } engine_run;
  // tach shrink's rows: the accuracy pass of the point's variant on the run's dataset (tach eval's
  // pass, its numbers), the same on every batch of a variant. measured false: none (bench's points).
  struct Accuracy {
    bool measured = false;
    double accuracy = 0, macro_f1 = 0;
    int64_t examples = 0;
    std::string dataset;
  } accuracy;
  double measured_wall_s = 0;    // first measured run start to last end, on the bench's clock
  double timer_overhead_ns = 0;  // one steady-clock reading
  double bookkeeping_ms = 0;     // measured wall minus the sum of run latencies
  std::string finished_at;       // UTC, ISO 8601
};

// A point's throughput, one definition in every view (the table, the findings, summary.json and
// .txt, the CSV, the report, tach compare): the work of one batch over the MEDIAN batch latency,
// the statistic the latency beside it is; one slow run cannot swing it as it swings a total over
// the summed time. Sets samples_per_s (rows per batch, every rank's under mpirun), batches_per_s,
// tokens_per_s (real tokens per batch, their mean over the batches), achieved_gflops_per_s (FLOPs
// per batch), a training point's mfu (against train.ceiling_gflops_per_s), and decode.tokens_per_s
// (rows over the median decode step). A point without a median keeps zeros.
void set_throughput_from_median(PointResult& p);
// per_batch (rows, tokens, FLOPs) over a median latency in ms, per second; 0 without a median.
double per_second_at_median(double per_batch, double median_ms);
// The definition in words, for legends and method lines.
extern const char* const kThroughputDefinition;

std::string point_to_json(const PointResult& p);  // one line of results.jsonl, no newline

// Every finished point of a run directory, read only: results.jsonl, then each SLURM task's
// results.d/*.jsonl (in name order), a point found twice counted once (its first line). A torn last
// line (a kill during a write, or a task still writing) is left out and its bytes added to
// *torn_bytes; a bad line is an error naming the file and line. No results file: an empty list.
std::vector<PointResult> read_run_results(const std::string& run_dir, size_t* torn_bytes = nullptr);
// One results file's points (the same rules); a missing file: an empty list.
std::vector<PointResult> read_results_file(const std::string& path, size_t* torn_bytes = nullptr);
// The results files of a run directory in the order read_run_results reads them.
std::vector<std::string> run_results_files(const std::string& run_dir);
PointResult point_from_json(const std::string& line, const std::string& where);

struct ClassMetrics {
  std::string label;
  double precision = 0, recall = 0, f1 = 0;
  int64_t support = 0;
};

struct AccuracyResult {
  std::string device, dtype;  // the model the pass ran: one pass per device and dtype of the sweep
  int64_t examples = 0;
  double accuracy = 0, macro_f1 = 0;
  double chance_accuracy = 0;  // the majority class's share: what a constant guess scores
  std::vector<ClassMetrics> per_class;
  std::vector<std::vector<int64_t>> confusion;  // [true label][predicted label]
  double tokenize_s = 0, model_s = 0, total_s = 0, samples_per_s = 0;
  int64_t warmup_batches = 0;  // untimed forwards before the pass (its first batch), so no pass pays the cold start
  // Other processes' CPU use over the timed pass, as a point's; contended: the pass's threads
  // shared cores with them, so its samples/s is the shared machine's.
  PointResult::Load load;
  // Each example's predicted label id (the first `examples` of the dataset, in its order): what
  // another engine's predictions are compared with. accuracy.json keeps them when other engines ran.
  std::vector<int32_t> predicted;
  // A per-token head's pass (a token classifier's or a question-answering model's, as tach eval
  // scores them): task "token-classification" or "question-answering" ("" for a sequence
  // classifier, whose figures are those above); its scores by name, the headline first
  // (accuracy_metric_names); scheme: the tags' ("conlleval", "IOB2", ...) or the SQuAD version;
  // predicted_text: each word's tag, sentence after sentence, or each question's best answer.
  std::string task;
  std::vector<std::pair<std::string, double>> scores;
  std::string scheme;
  std::vector<std::string> predicted_text;
};

// Another engine's accuracy pass (tach bench --engine NAME --accuracy): its logits for the token ids
// tach's pass made, in tach's batches, scored by tach's metrics, one per tach pass (device, dtype,
// sample size).
struct EngineAccuracy {
  std::string engine, device, dtype;
  std::string status = "ok", reason;  // "failed" with the reason: the engine could not run this pass
  int64_t examples = 0;
  double accuracy = 0, macro_f1 = 0;
  // A per-token head's pass: its task and scores, as AccuracyResult's.
  std::string task;
  std::vector<std::pair<std::string, double>> scores;
  // Predictions that differ from tach's on the same examples (a per-token head's: tags, or
  // answers); -1 when tach's were not at hand (a run resumed from an accuracy.json written before
  // they were kept).
  int64_t differ = -1;
  double wall_s = 0;     // the pass's wall time, the protocol included: a record, not a timing
  std::string versions;  // the worker's packages ("python 3.11.2, torch 2.5.1, ...")
  std::string python;    // --python as given ("" is python3): a resumed run reuses the result only for the same
};

// The scores of a per-token head's accuracy pass, in order, the headline first: seqeval's micro
// f1, precision and recall and the word accuracy (fractions) for "token-classification"; SQuAD's
// exact_match and f1 (percent) for "question-answering"; none for a sequence classifier ("").
std::vector<std::string> accuracy_metric_names(const std::string& task);
// A pass's score by name (NaN where it has none).
double accuracy_score(const std::vector<std::pair<std::string, double>>& scores, const std::string& name);

// Accuracy, macro-F1 (mean over labels present in truth or predictions), per-class metrics and
// the confusion matrix. truth and predicted: ids in [0, labels.size()).
AccuracyResult classification_metrics(const std::vector<int32_t>& truth, const std::vector<int32_t>& predicted,
                                      const std::vector<std::string>& labels);

struct ModelSummary {
  std::string spec, source, architecture, weights_dtype;
  bool synthetic_weights = false;
  int64_t parameters = 0;
  int64_t disk_bytes = 0;    // safetensors files; 0 for synthetic weights
  int64_t memory_bytes = 0;  // allocator weights + mapped bytes after loading
  std::vector<std::string> labels;
  std::string task;  // what a point times: "sequence classification (2 labels)", "sentence embedding (...)"
  // What loading said: a head built new (transformers' "newly initialized" note), a head's tensors
  // left out, as ModelInfo::notes has them.
  std::vector<std::string> notes;
};

// What a sweep calls back, for progress bars and tests. All optional.
struct BenchObserver {
  std::function<void(const PointKey&, size_t index, size_t total)> on_point_start;
  std::function<void(const PointResult&, size_t index, size_t total)> on_point_done;
  std::function<void(const std::string& message)> on_note;
  // Around the measured runs of a point: lets a caller time the same work on its own clock.
  std::function<void(const PointKey&)> on_measure_begin;
  std::function<void(const PointKey&, int64_t samples)> on_measure_end;
};

struct SweepOutcome {
  std::string run_dir;
  BenchConfig config;                    // as run (a resumed run's own config.json)
  std::vector<PointResult> results;      // every point of the run, finished earlier or now, in grid order
  std::vector<ModelSummary> models;      // per device and dtype loaded in this process
  std::vector<AccuracyResult> accuracy;  // one per sample size (or the whole pass)
  std::string accuracy_dataset;
  std::vector<EngineAccuracy> engine_accuracy;  // other engines' passes, one per engine and tach pass
  int64_t resumed_points = 0;                   // points found finished in results.jsonl
  int accuracy_threads = 0;                     // the threads the accuracy pass ran with (0: none ran here)
  double result_write_ms_median = 0;            // appending and fsyncing one results line
  std::vector<std::string> notes;               // what the sweep decided or found, for the summary
  // Under mpirun (a training sweep, each point's steps data-parallel): this process's rank. Rank 0
  // writes the run directory and speaks for the job; the others return with nothing to write.
  int rank = 0, world_size = 1;
  bool eval_only = false;  // tach eval: the accuracy pass alone, no points; its summary describes an eval
};

// The usage errors run_bench and run_eval give a bad configuration (an unknown dtype, a negative
// count, an empty axis), found without reading the model or asking for the devices: the commands
// call it as soon as their flags are read, so that a bad value is refused before a model loads.
void check_sweep_config(const BenchConfig& config);
// What the grid's sequence lengths need of the model, from its config.json (no weights): a length
// past the longest row it takes (its positions) could not run at any point, so a grid holding one
// is a usage error naming the lengths past it, the limit and the lengths that fit, before a run
// directory is made. The commands call it once the lengths are final (a question-answering
// model's default length follows its positions).
void check_lengths_fit_model(const BenchConfig& config);

// Creates runs/<run_id>/ with config.json and runs every point, appending each to results.jsonl
// as it finishes. A point that fails is recorded with its reason and the sweep goes on. Under
// mpirun a training sweep runs every point's steps data-parallel over the ranks (the batch is per
// rank, as tach train's); rank 0 writes the run.
SweepOutcome run_bench(const BenchConfig& config, const BenchObserver& observer = {});

// Continues the run in run_dir with its own config.json: points already in results.jsonl are kept
// and skipped (a torn last line from a kill is cut off first).
SweepOutcome resume_bench(const std::string& run_dir, const BenchObserver& observer = {});

// The accuracy pass alone (tach eval): reads the dataset, loads the model, classifies.
SweepOutcome run_eval(const BenchConfig& config, const BenchObserver& observer = {});

// accuracy.json of a run: one object per sample size, schema "tach.bench.accuracy/1".
std::string accuracy_to_json(const std::vector<AccuracyResult>& results, const std::string& dataset);
std::vector<AccuracyResult> accuracy_from_json(const std::string& text, const std::string& where, std::string* dataset);
// accuracy.json's "engines" (absent where no other engine ran): each EngineAccuracy's fields by
// name (docs/formats.md), as a JSON array; and read back from the whole file's text (empty when absent).
std::string engine_accuracy_to_json(const std::vector<EngineAccuracy>& results);
std::vector<EngineAccuracy> engine_accuracy_from_json(const std::string& accuracy_json, const std::string& where);

}  // namespace tach
