// Fine-tuning on tach's own engine: `tach train`. A BERT, DistilBERT or Qwen2 sequence classifier
// trains on a labelled dataset with AdamW, the linear warm-up/decay schedule, clipping and
// gradient accumulation; every step is timed by phase and logged; the run can be killed and
// resumed; the result is saved as a Hugging Face model directory.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tach/dataset.h"
#include "tach/model.h"
#include "tach/monitor.h"

namespace tach {

struct TrainOptions {
  std::string model;      // preset:NAME, a directory, or ORG/NAME from the hub cache
  std::string tokenizer;  // default: the model's directory
  DatasetOptions data;
  int64_t max_samples = 0;          // the first N examples, in file order (0: all)
  bool shuffle = true;              // reshuffle every epoch (seeded); false keeps file order
  std::vector<std::string> labels;  // a new head's labels, in id order (default: from the data)
  std::string problem_type;         // a new head's; default single_label_classification

  // The head that trains: sequence-classification (default; a masked-LM checkpoint gets a new
  // classifier, as AutoModelForSequenceClassification gives it), mlm (continued pre-training on
  // the text column), token-classification (CoNLL or JSON tagged words), question-answering
  // (SQuAD-format data).
  std::string task = "sequence-classification";
  // No task given (tach train without --task or --head): a checkpoint published as a token
  // classifier or question-answering model trains its own head, saying so; any other trains `task`.
  bool task_default = false;
  double mlm_probability = 0.15;  // mlm: the share of tokens chosen (DataCollatorForLanguageModeling)
  bool label_all_tokens = false;  // token classification: every sub-token gets its word's label
  int64_t doc_stride = 128;       // question answering: tokens shared by a long context's windows

  DatasetOptions eval_data;     // path empty: no evaluation
  int64_t eval_every = 0;       // steps between evaluations; 0: at the end of each epoch
  int64_t eval_max_length = 0;  // 0: max_length

  int64_t epochs = 3;     // transformers' TrainingArguments defaults where they have one
  int64_t max_steps = 0;  // > 0 overrides epochs
  int64_t batch_size = 8;
  int64_t grad_accumulation = 1;
  double lr = 5e-5;
  double warmup_ratio = 0;
  std::string schedule = "linear";  // linear | constant
  double weight_decay = 0;
  std::string decay_scope = "trainer";  // trainer (no decay on biases, LayerNorm) | all
  double adam_beta1 = 0.9, adam_beta2 = 0.999, adam_eps = 1e-8;
  double max_grad_norm = 1.0;  // 0: no clipping
  int64_t max_length = 128;
  // Whether --max-length was given (tach train -s, or its YAML file). A length given past the model's
  // positions is a usage error before the run directory; one not given (128; question answering:
  // run_qa.py's 384-token windows) is fitted to them, and the run says so.
  bool max_length_given = false;
  // The question-answering stride was not given: fitted windows keep at most half of theirs.
  bool doc_stride_default = false;
  std::string padding = "longest";  // longest (per batch) | max_length
  bool dropout = true;              // false: dropout off in training too
  uint64_t seed = 42;
  std::string dtype = "f32";
  std::string exec = "eager";  // eager: one op at a time, every intermediate kept; fused: fused kernels
  // Keep only each layer's input in the forward; the backward recomputes the layer first.
  bool gradient_checkpointing = false;

  // full: every parameter trains; lora: adapters beside the linears, the base frozen (PEFT's
  // LoraConfig defaults: r 8, alpha 8, dropout 0; the head trains in full as modules_to_save).
  std::string method = "full";
  int64_t lora_r = 8;
  double lora_alpha = 8;
  double lora_dropout = 0;
  std::vector<std::string> lora_target_modules;  // default: every linear of the layers (docs/cli.md)
  std::vector<std::string> modules_to_save;      // default: classifier, score (PEFT's for SEQ_CLS)
  // A peft LoRA adapter directory to continue training from: its options (r, alpha, dropout,
  // targets, modules_to_save) and weights replace the lora_* options above.
  std::string adapter;

  // Knowledge distillation: a trained model (any family, the same head, labels and tokenizer)
  // whose softened outputs join the loss: alpha · T² · KL(teacher || student) + (1 - alpha) · the
  // task loss (docs/cli.md). Empty: none. The teacher runs inference only, in distill_dtype.
  std::string distill_from;
  double distill_temperature = 2.0;
  double distill_alpha = 0.5;
  std::string distill_dtype = "f32";

  std::string runs_dir = "runs";
  std::string run_id;      // default: UTC time and model name
  std::string save_dir;    // default: runs/<run_id>/model
  int64_t save_every = 0;  // steps between resume checkpoints; 0: every epoch and at the end
  std::string resume;      // a run directory to continue

  // Profiling, named as the training profiling guide names them.
  bool profile = false;
  // The same flags, spellings and defaults as tach profile's.
  int64_t profiler_skip_first = 0, profiler_wait = 1, profiler_warmup = 1, profiler_active = 3, profiler_repeat = 1;
  std::string profiler_output_dir;  // default: runs/<run_id>/traces
  bool memory_logging = false;
  int64_t memory_log_steps = 10;
  bool tensorboard = true;  // every step's metrics also as TensorBoard events in RUN_DIR/tensorboard/

  int threads = 0;  // 0: all cores (under mpirun: the cores shared among this machine's ranks)
  // Where the step runs (--device, through training_device): the model's parameters, gradients,
  // AdamW moments and activations live there and every op dispatches on it.
  Device device = Device::cpu();

  // Data-parallel training under mpirun or srun (rank and world size come from MPI; batch_size is
  // per rank). A collective that takes longer than dist_timeout seconds ends the job, naming the
  // rank that stopped; gradients travel in buckets of bucket_mb megabytes.
  double dist_timeout = 300;
  double bucket_mb = 25;
  // A one-process run of the same job on the same machine: summary.json's scaling efficiency.
  std::string scaling_reference;
};

// Where a training step runs for --device SPEC: cpu, cuda, cuda:N, or auto (the first GPU when one
// is usable, else the CPU; *why then says which and why). A GPU that is not here is an error
// naming the reason (no CUDA backend in this build, no driver, no such index).
Device training_device(const std::string& spec, std::string* why = nullptr);

// Reads a YAML file of the same options (keys as the flags, without the dashes, with
// underscores), onto `options`. Unknown keys are errors naming the key.
void load_train_yaml(const std::string& path, TrainOptions& options);
// Options from a YAML file under flags from the command line: every option not given on the
// command line (by its key, e.g. "batch_size" for --batch-size) takes the file's value.
void merge_train_options(TrainOptions& flags, const TrainOptions& file,
                         const std::function<bool(const std::string& key)>& given_on_command_line);

struct TrainStepReport {
  int64_t step = 0, total_steps = 0, epoch = 0;
  double loss = 0, lr = 0, grad_norm = 0, tokens_per_s = 0, eta_s = 0;
  double task_loss = -1;  // --distill-from: the task's own loss (cross-entropy) beside the mix; -1 without
};

struct TrainEpochReport {
  int64_t epoch = 0;
  double train_loss = 0, eval_loss = 0, eval_accuracy = 0, eval_macro_f1 = 0;
  double eval_perplexity = -1;  // mlm: exp(eval loss); -1 for the other tasks
  // --distill-from: train_loss is the mix alpha · T² KL + (1 - alpha) · task loss; these are its
  // terms, each a mean of the steps (-1 without a teacher).
  double train_task_loss = -1, train_distill_loss = -1;
  bool evaluated = false;
  double seconds = 0, tokens_per_s = 0, samples_per_s = 0;
  int64_t peak_bytes = 0;
  // Other processes' CPU use over the epoch's steps (the evaluation after them left out), as bench
  // measures a point's: contended when they took the cores its threads needed.
  CpuLoad load;
};

struct TrainObserver {
  std::function<void(const TrainStepReport&)> on_step;
  std::function<void(const std::string&)> on_note;
};

struct TrainResult {
  std::string run_dir, saved_model;
  int64_t steps = 0;
  int64_t resumed_from = -1;  // the step a resumed run continued after; -1 when it started fresh
  double train_seconds = 0, step_ms_median = 0;
  double step_ms_p90 = 0;                                    // over the steps this process ran
  double tokens_per_s_median = 0, samples_per_s_median = 0;  // per step, real tokens, wall time
  // --distill-from: the medians of the teacher's phase and of the student's forward (-1: no teacher).
  double teacher_ms_median = -1, forward_ms_median = -1;
  // --distill-from: the mix's weight alpha and temperature T (-1: no teacher; the loss is the task's).
  double distill_alpha = -1, distill_temperature = -1;
  int64_t trainable_parameters = 0, total_parameters = 0;
  int64_t peak_bytes = 0;  // tach's allocator, the whole run
  std::map<std::string, int64_t> peak_bytes_by_category;
  std::vector<TrainEpochReport> epochs;
  int world_size = 1;      // ranks that trained together (1: one process)
  int rank = 0;            // this process's rank among them
  bool diverged = false;   // the loss turned NaN or infinite; the run stopped
  std::string divergence;  // which step and what
  // --resume on a run that had finished (summary.json complete): nothing ran and nothing in its
  // directory changed; the figures above are its summary.json's.
  bool finished_already = false;
};

TrainResult run_training(TrainOptions options, const TrainObserver& observer = {});

// The method × exec comparison: one training run per combination of `methods` (full, lora,
// qlora) and `execs` (eager, fused), each with `base`'s other options, into
// <runs_dir>/<run_id>/<method>-<exec>/; then summary.json (schema tach.train_comparison/1)
// and comparison.csv in <runs_dir>/<run_id>/. One row per run: trainable and total parameters,
// step latency (median, p90), tokens/s and samples/s, peak memory per category, epoch time and
// dev accuracy.
struct TrainComparisonRow {
  std::string method, exec, run_dir;
  TrainResult result;
};
struct TrainComparison {
  std::string dir;
  std::vector<TrainComparisonRow> rows;
};
TrainComparison run_training_comparison(const TrainOptions& base, const std::vector<std::string>& methods,
                                        const std::vector<std::string>& execs, const TrainObserver& observer = {});

// A classifier set up for training steps outside tach train's loop (tach profile --train, or a
// program that embeds tach): each step() runs the forward with the loss, the backward, clipping
// and an AdamW update, each phase inside a profiler scope ("forward", "backward", "optimizer").
class TrainStepper {
 public:
  struct Options {
    std::string model;
    uint64_t seed = 0;  // preset weights, a new head, dropout masks
    double lr = 5e-5, weight_decay = 0, max_grad_norm = 1.0;
    bool dropout = true;
    bool fused = false;  // --exec fused: the fused kernels (docs/architecture.md)
    bool bf16 = false;   // mixed precision: bf16 GEMM inputs, f32 masters (emulated where the CPU lacks bf16)
    bool lora = false;   // LoRA on every linear of the layers (tach train --method lora's defaults)
    bool qlora = false;  // and the frozen base's layer weights in NF4 (implies lora)
    bool gradient_checkpointing = false;  // keep layer inputs only; recompute each layer in the backward
    int64_t lora_r = 8;
    double lora_alpha = 8;
    Device device = Device::cpu();  // where the step runs, as TrainOptions::device
    // The head that trains, as tach train --task (the checkpoint's, or a new one as transformers
    // makes it); it sets what step()'s labels are.
    Head head = Head::sequence_classification;
    // Knowledge distillation, as tach train's --distill-* options (empty distill_from: none): each
    // step then runs the teacher first, inside a profiler scope named "teacher".
    std::string distill_from;
    double distill_temperature = 2.0, distill_alpha = 0.5;
    std::string distill_dtype = "f32";
  };
  static std::unique_ptr<TrainStepper> create(const Options& options);
  virtual ~TrainStepper() = default;
  // labels, by the head: a class id per row, in [0, num_labels()); a token classifier's label per
  // token [B * T] (-100 ignored); the masked LM's [B * T], a token's id where it is predicted and
  // -100 elsewhere; question answering's start and end position per row, [B * 2]. Returns the
  // loss before the update.
  virtual double step(const TokenBatch& batch, const std::vector<int32_t>& labels) = 0;
  virtual int64_t vocab_size() const = 0;
  virtual int64_t num_labels() const = 0;
  virtual int32_t pad_token_id() const = 0;
  virtual int64_t parameters() const = 0;
  virtual std::string architecture() const = 0;
  virtual std::vector<std::string> notes() const = 0;  // e.g. that bf16 is emulated on this CPU
};

}  // namespace tach
