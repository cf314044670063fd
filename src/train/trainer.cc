// tach train: the loop, one function per phase. Setting up: the options (or a resumed run's),
// the head's labels, the model and its method, the data, the schedule, the run directory, the
// checkpoint to continue from. Per step: the step itself (train/train_step.h: data, forward,
// backward, optimizer, each timed), its log line, evaluation, the epoch's row and the resume
// checkpoint. At the end: the model saved and summary.json. Every file is written so that a
// kill at any instant leaves the last complete state readable (docs/train.md).
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdlib>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>

#include "core/parallel.h"
#include "dist/communicator.h"
#include "cpu/train_gemm.h"
#include "model/peft_adapter.h"
#include "model/safetensors_writer.h"
#include "tach/error.h"
#include "tach/estimate.h"
#include "tach/memory.h"
#include "tach/metrics.h"
#include "tach/monitor.h"
#include "tach/profile.h"
#include "tach/runtime.h"
#include "tach/system_info.h"
#include "tach/tokenizer.h"
#include "tach/train.h"
#include "bench/bench_internal.h"
#include "tasks/split_words.h"
#include "train/data_parallel.h"
#include "train/lr_schedule.h"
#include "train/run_checkpoint.h"
#include "train/run_files.h"
#include "train/run_names.h"
#include "train/save_model.h"
#include "train/train_data.h"
#include "train/train_eval.h"
#include "train/train_options.h"
#include "train/qa_features.h"
#include "train/task_data.h"
#include "train/train_step.h"
#include "train/trainable_model.h"
#include "train/training_method.h"
#include "train/training_model.h"

namespace tach {

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using train::claim_run_dir, train::csv_number, train::keep_lines, train::median, train::p90, train::read_json;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

constexpr const char* kEpochHeader =
    "epoch,train_loss,eval_loss,eval_accuracy,eval_macro_f1,epoch_seconds,tokens_per_s,samples_per_s,peak_memory_bytes";

// The steps of a run, from the data's size and the options.
struct StepPlan {
  int64_t examples = 0, batch = 0, accumulation = 0;
  int64_t batches_per_epoch = 0, steps_per_epoch = 0, total_steps = 0, warmup_steps = 0;
  train::LinearSchedule schedule;
};

// batch: the global batch (every rank's rows together).
StepPlan plan_steps(const TrainOptions& o, int64_t examples, int world_size) {
  StepPlan p;
  p.examples = examples, p.batch = o.batch_size * world_size, p.accumulation = o.grad_accumulation;
  p.batches_per_epoch = (examples + p.batch - 1) / p.batch;
  p.steps_per_epoch = (p.batches_per_epoch + p.accumulation - 1) / p.accumulation;
  p.total_steps = o.max_steps > 0 ? o.max_steps : o.epochs * p.steps_per_epoch;
  p.warmup_steps = int64_t(std::ceil(o.warmup_ratio * double(p.total_steps)));
  p.schedule = {o.lr, p.warmup_steps, p.total_steps, o.schedule == "linear"};
  return p;
}

// What the run carries across the epochs (and across a resume, through the checkpoint).
struct EpochTotals {
  double loss_sum = 0, seconds = 0;
  int64_t loss_count = 0, tokens = 0, samples = 0;
  CpuLoad load;  // the reading that ended in this epoch (TrainRun::load_window); unmeasured: none did
  nlohmann::json to_json() const {
    return {{"epoch_loss_sum", loss_sum},
            {"epoch_loss_count", loss_count},
            {"epoch_tokens", tokens},
            {"epoch_samples", samples},
            {"epoch_seconds", seconds}};
  }
  static EpochTotals from_json(const nlohmann::json& j) {
    EpochTotals t;
    t.loss_sum = j.value("epoch_loss_sum", 0.0);
    t.loss_count = j.value("epoch_loss_count", int64_t(0));
    t.tokens = j.value("epoch_tokens", int64_t(0));
    t.samples = j.value("epoch_samples", int64_t(0));
    t.seconds = j.value("epoch_seconds", 0.0);
    return t;
  }
};

// Every step's phase times and rates, for the summary's medians.
struct StepSeries {
  std::vector<double> step_ms, data_ms, fwd_ms, bwd_ms, opt_ms, comm_ms, exposed_ms, tok_rates, sample_rates;
  void add(const train::StepOutcome& s) {
    comm_ms.push_back(s.seconds.communication * 1e3);
    exposed_ms.push_back(s.seconds.communication_exposed * 1e3);
    const double t = s.seconds.total;
    step_ms.push_back(t * 1e3);
    data_ms.push_back(s.seconds.data * 1e3);
    fwd_ms.push_back(s.seconds.forward * 1e3);
    bwd_ms.push_back(s.seconds.backward * 1e3);
    opt_ms.push_back(s.seconds.optimizer * 1e3);
    tok_rates.push_back(double(s.tokens) / t);
    sample_rates.push_back(double(s.samples) / t);
  }
};

// The allocator's peaks are reset per epoch (epoch_results.csv has each epoch's); the run's are folded here.
struct RunPeaks {
  std::array<int64_t, kMemoryCategoryCount> by_category{};
  int64_t total = 0;
  void fold() {
    const MemoryStats now = memory_stats(Device::cpu());
    total = std::max(total, now.total.peak);
    for (int c = 0; c < kMemoryCategoryCount; ++c)
      by_category[size_t(c)] = std::max(by_category[size_t(c)], now.by_category[size_t(c)].peak);
  }
};

// Everything a run holds between its phases.
struct TrainRun {
  TrainOptions o;
  TrainResult result;
  std::function<void(const std::string&)> note;
  std::string run_dir, resume_checkpoint, steps_path, epochs_path;
  train::TrainingModelSource src;
  std::vector<std::string> labels, head_notes;
  std::string problem_type, tokenizer_path;
  std::shared_ptr<model::PeftAdapter> adapter;
  std::unique_ptr<train::TrainableModel> model;
  Head task = Head::sequence_classification;  // --task's head
  // Other processes' CPU use over the steps, opened at the first step after a reading (or a
  // resume), read between steps. A reading needs half a second of /proc/stat's 10 ms ticks, so
  // a window runs on across short epochs and is read at the end of the one that fills it.
  std::optional<CpuLoadWindow> load_window;
  Dataset train_set;
  std::vector<data::TaggedSentence> tagged;    // token classification's training sentences
  std::vector<data::SquadQuestion> questions;  // question answering's
  train::TrainData data, eval_data;
  bool has_eval = false;
  StepPlan plan;
  std::unique_ptr<train::TrainingStep> step;
  int64_t start_step = 0;
  double train_seconds_before = 0;
  EpochTotals epoch;
  StepSeries series;
  RunPeaks peaks;
  std::unique_ptr<TensorBoardWriter> tensorboard;  // RUN_DIR/tensorboard/, unless --no-tensorboard
  // Data-parallel: this rank's place, and the sharding and gradient sums (null in one process).
  // Rank 0 writes the run directory; every rank writes its own step times under ranks/.
  dist::Communicator* comm = nullptr;
  std::unique_ptr<train::DataParallel> dp;
  bool lead() const { return !comm || comm->rank() == 0; }
  int world() const { return comm ? comm->size() : 1; }
  std::string rank_dir() const { return run_dir + "/ranks/rank-" + std::to_string(comm ? comm->rank() : 0); }
};

// The figures a summary.json holds, for what tach train prints.
void result_from_summary(const nlohmann::json& s, TrainResult& res) {
  res.run_dir = s.value("run_dir", res.run_dir);
  res.steps = s.value("steps", int64_t(0));
  res.resumed_from = s.value("resumed_from_step", int64_t(-1));
  res.train_seconds = s.value("train_seconds", 0.0);
  res.step_ms_median = s.value("step_ms_median", 0.0);
  res.step_ms_p90 = s.value("step_ms_p90", 0.0);
  res.tokens_per_s_median = s.value("tokens_per_s_median", 0.0);
  res.samples_per_s_median = s.value("samples_per_s_median", 0.0);
  res.trainable_parameters = s.value("trainable_parameters", int64_t(0));
  res.total_parameters = s.value("parameters", int64_t(0));
  res.saved_model = s.value("saved_model", std::string());
  res.diverged = s.value("diverged", false);
  res.divergence = s.value("divergence", std::string());
  if (s.contains("memory_peak_bytes")) res.peak_bytes = s["memory_peak_bytes"].value("total", int64_t(0));
}

// A run whose summary.json says every step ran and the work after training was done (a summary
// from before the pending list was recorded counts when its steps reached the total).
bool finished(const nlohmann::json& s) {
  if (s.value("schema", "") != "tach.train_summary/1" || s.value("diverged", false)) return false;
  const auto pending = s.find("post_training_pending");
  return s.value("steps", int64_t(0)) >= s.value("total_steps", int64_t(1)) && (pending == s.end() || pending->empty());
}

// A resumed run continues with the options it started with; nothing given now overrides them.
// A finished one is left as it is: not even run.log is appended to.
void resume_options(TrainRun& r) {
  if (r.o.resume.empty()) return;
  r.run_dir = r.o.resume;
  // Finished, and resumed with its number of ranks (another number is refused below, as always).
  if (fs::exists(r.run_dir + "/summary.json")) {
    const nlohmann::json summary = read_json(r.run_dir + "/summary.json");
    if (finished(summary) &&
        summary.value("distributed", nlohmann::json::object()).value("world_size", 1) == r.world()) {
      result_from_summary(summary, r.result);
      r.result.run_dir = r.run_dir;
      r.result.finished_already = true;
      return;
    }
  }
  if (r.lead()) announce_run_dir(r.run_dir);
  const nlohmann::json config = read_json(r.run_dir + "/config.json");
  check(config.value("schema", "") == "tach.train_config/1", r.run_dir + "/config.json is not a tach train run");
  const std::string resume = r.o.resume;
  r.o = train::options_from_json(config.at("options"), r.run_dir + "/config.json");
  r.o.resume = resume;
  const int trained_with = config.value("distributed", nlohmann::json::object()).value("world_size", 1);
  check(trained_with == r.world(),
        r.run_dir + " was trained with " + std::to_string(trained_with) + " rank(s) and this is " +
            std::to_string(r.world()) + ": the global batch and the data each rank takes depend on it; resume with " +
            (trained_with == 1 ? std::string("one process") : "mpirun -np " + std::to_string(trained_with)));
  r.resume_checkpoint = train::latest_run_checkpoint(r.run_dir);
}

// The head's labels and problem type: the checkpoint's head, a continued adapter's, or a new
// head's from --labels or the data.
void resolve_head(TrainRun& r) {
  if (r.task != Head::sequence_classification) {
    r.problem_type.clear();
    r.labels.clear();
    if (r.task != Head::token_classification) return;  // question answering: start, end; the masked LM: none
    // A token classifier's labels: the checkpoint's own head's, else --labels, else the data's tags sorted.
    if (r.src.has_head(Head::token_classification)) {
      r.labels = r.src.id2label();
      check(r.o.labels.empty() || r.o.labels == r.labels, "--labels names a new head, but " + r.o.model +
                                                              " already has a token classifier (" +
                                                              std::to_string(r.labels.size()) + " labels)");
    } else {
      r.labels = r.o.labels.empty() ? train::tag_labels(r.tagged) : r.o.labels;
    }
    return;
  }
  r.labels = r.src.id2label();
  r.problem_type = r.src.problem_type();
  int64_t adapter_head_rows = 0;
  if (!r.o.adapter.empty()) {
    r.adapter = model::PeftAdapter::open(r.o.adapter);
    adapter_head_rows = std::max(r.adapter->head_rows("classifier.weight"), r.adapter->head_rows("score.weight"));
    if (adapter_head_rows > 0 && !r.adapter->id2label().empty()) r.labels = r.adapter->id2label();
  }
  if (!r.src.checkpoint_has_head && !(r.adapter && !r.adapter->id2label().empty() && adapter_head_rows > 0)) {
    r.problem_type = r.o.problem_type.empty() ? "single_label_classification" : r.o.problem_type;
    r.labels = r.o.labels.empty() ? train::labels_from_data(r.train_set, r.problem_type == "multi_label_classification")
                                  : r.o.labels;
    if (r.problem_type == "regression") r.labels = {"LABEL_0"};
  } else {
    check(r.o.labels.empty() || r.o.labels == r.labels, "--labels names a new head, but " + r.o.model +
                                                            " already has one (" + std::to_string(r.labels.size()) +
                                                            " labels); drop --labels to train it");
  }
  if (r.problem_type.empty()) r.problem_type = r.labels.size() == 1 ? "regression" : "single_label_classification";
  check(adapter_head_rows == 0 || int64_t(r.labels.size()) == adapter_head_rows,
        "the adapter in " + r.o.adapter + " has a head for " + std::to_string(adapter_head_rows) + " labels, but " +
            std::to_string(r.labels.size()) + " come from " + (r.src.checkpoint_has_head ? r.o.model : "the data"));
}

// The trainable model with its method (LoRA, QLoRA) applied; the checkpoint's bytes released.
void build_model(TrainRun& r) {
  r.model = train::build_trainable_model(r.src, r.labels, r.problem_type, r.o.seed, &r.head_notes, r.task);
  train::MethodOptions mo;
  mo.method = r.o.method;
  mo.lora.r = r.o.lora_r;
  mo.lora.alpha = float(r.o.lora_alpha);
  mo.lora.dropout = float(r.o.lora_dropout);
  mo.lora.target_modules = r.o.lora_target_modules;
  mo.lora.modules_to_save = r.o.modules_to_save;
  mo.adapter = r.adapter.get();
  mo.adapter_dir = r.o.adapter;
  for (auto& n : train::apply_training_method(*r.model, *r.src.family, mo, r.o.seed)) r.head_notes.push_back(n);
  r.src.store.reset();  // every weight is an f32 master copy (or NF4) now
  for (const auto& n : r.head_notes) r.note(n);
}

// The training or evaluation data's options: --dataset's columns with `which`'s path and split
// (JSON split files: "train" by default for training). The masked LM reads texts only.
DatasetOptions data_source(const TrainRun& r, const DatasetOptions& which) {
  DatasetOptions d = r.o.data;
  d.path = which.path;
  d.split = which.split;
  if (&which == &r.o.data && d.split.empty()) d.split = "train";
  if (r.task == Head::masked_lm) d.label_column.clear(), d.text_pair_column.clear();
  return d;
}

// Tagged sentences (CoNLL or JSON records): the words under --text-column (default tokens) and
// the tags under --label-column (default ner_tags); integer tags name the head's labels.
std::vector<data::TaggedSentence> read_tagged(const TrainRun& r, const DatasetOptions& which) {
  data::TaggedJsonOptions jo;
  if (r.o.data.text_column != "text") jo.words_key = r.o.data.text_column;
  if (r.o.data.label_column != "label") jo.tags_key = r.o.data.label_column;
  jo.split = which.split.empty() && &which == &r.o.data ? "" : which.split;
  jo.tag_names = !r.o.labels.empty()                          ? r.o.labels
                 : r.src.has_head(Head::token_classification) ? r.src.id2label()
                                                              : r.labels;
  const std::string& format = r.o.data.format;
  check(format == "auto" || format == "conll" || format == "json" || format == "jsonl",
        "--task token-classification reads CoNLL or JSON tagged words: --dataset-format auto, conll, json or jsonl, "
        "not " +
            format);
  return data::read_tagged_file(which.path, format, -1, jo);
}

// The collator's settings: the tokenizer's mask token, random tokens from all of its vocabulary.
train::MlmMasking mlm_masking(const TrainRun& r, const Tokenizer& tokenizer) {
  train::MlmMasking m;
  m.probability = r.o.mlm_probability;
  for (const char* token : {"[MASK]", "<mask>"})
    if (const auto id = tokenizer.token_to_id(token); id && m.mask_token_id < 0) m.mask_token_id = *id;
  m.vocab_size = int64_t(tokenizer.vocab_size());
  check(m.vocab_size <= r.src.config.vocab_size, "the tokenizer has " + std::to_string(m.vocab_size) + " tokens and " +
                                                     r.o.model + " only " + std::to_string(r.src.config.vocab_size) +
                                                     " embeddings: a random replacement could fall outside them");
  return m;
}

// The training (and evaluation) examples tokenized once.
void prepare_data(TrainRun& r) {
  const TrainOptions& o = r.o;
  r.tokenizer_path = !o.tokenizer.empty() ? o.tokenizer : r.src.location.dir;
  check(!r.tokenizer_path.empty(),
        missing_tokenizer_message(o.model, r.src.family ? r.src.family->tokenizer_hint : ""));
  const auto tokenizer = Tokenizer::load(r.tokenizer_path);
  check(r.src.pad_token_id() >= 0 || o.batch_size == 1,
        o.model +
            ": config.json names no pad_token_id, so padded rows of a batch cannot be told apart; set "
            "pad_token_id in config.json or train with --batch-size 1");
  const auto pad_id = int32_t(std::max<int64_t>(0, r.src.pad_token_id()));
  r.has_eval = !o.eval_data.path.empty();
  const int64_t eval_length = o.eval_max_length > 0 ? o.eval_max_length : o.max_length;
  const bool types = r.model->uses_token_types(), fixed = o.padding == "max_length";
  if (r.task == Head::masked_lm) {
    const train::MlmMasking masking = mlm_masking(r, *tokenizer);
    r.data = train::prepare_mlm_data(r.train_set, *tokenizer, o.max_length, fixed, pad_id, types, masking, o.seed);
    if (r.has_eval)
      r.eval_data = train::prepare_mlm_data(read_dataset(data_source(r, o.eval_data)), *tokenizer, eval_length, false,
                                            pad_id, types, masking, o.seed);
    return;
  }
  if (r.task == Head::token_classification) {
    // run_ner's rule: a space before each word for the byte-level BPE model types it names.
    const bool prefix_space = tasks::run_ner_adds_prefix_space(r.src.model_type);
    r.data = train::prepare_token_data(r.tagged, o.data.path, *tokenizer, prefix_space, r.labels, o.label_all_tokens,
                                       o.max_length, fixed, pad_id, types);
    if (r.has_eval)
      r.eval_data = train::prepare_token_data(read_tagged(r, o.eval_data), o.eval_data.path, *tokenizer, prefix_space,
                                              r.labels, o.label_all_tokens, eval_length, false, pad_id, types);
    return;
  }
  if (r.task == Head::question_answering) {
    r.data = train::prepare_qa_data(r.questions, *tokenizer, o.max_length, o.doc_stride, fixed, pad_id, types);
    if (r.has_eval)
      r.eval_data = train::prepare_qa_data(data::read_squad(o.eval_data.path).questions, *tokenizer, eval_length,
                                           o.doc_stride, false, pad_id, types);
    return;
  }
  r.data =
      train::prepare_train_data(r.train_set, *tokenizer, r.labels, r.problem_type, o.max_length, fixed, pad_id, types);
  if (!r.has_eval) return;
  r.eval_data = train::prepare_train_data(read_dataset(data_source(r, o.eval_data)), *tokenizer, r.labels,
                                          r.problem_type, eval_length, false, pad_id, types);
}

// The step: its execution, dropout and optimizer.
void make_step(TrainRun& r) {
  const TrainOptions& o = r.o;
  train::StepSettings s;
  s.fused = o.exec == "fused";
  s.gradient_checkpointing = o.gradient_checkpointing;
  s.dropout = o.dropout ? r.src.dropout(r.task) : train::DropoutRates{};
  s.dropout.seed = o.seed;
  if (o.dropout && r.model->lora) s.dropout.lora = float(o.lora_dropout);
  s.grad_accumulation = o.grad_accumulation;
  s.adam.beta1 = float(o.adam_beta1);
  s.adam.beta2 = float(o.adam_beta2);
  s.adam.eps = float(o.adam_eps);
  s.adam.weight_decay = float(o.weight_decay);
  s.decay_scope = o.decay_scope == "all" ? train::DecayScope::all : train::DecayScope::trainer;
  s.max_grad_norm = o.max_grad_norm;
  s.problem_type = r.problem_type;
  if (r.world() > 1) {
    r.dp = std::make_unique<train::DataParallel>(*r.comm, r.model->params, int64_t(o.bucket_mb * 1e6));
    s.data_parallel = r.dp.get();
  }
  r.step = std::make_unique<train::TrainingStep>(*r.model, s);
}

// A new run's directory and its config.json, by rank 0.
void write_new_run_dir(TrainRun& r) {
  TrainOptions& o = r.o;
  r.run_dir = claim_run_dir(o.runs_dir, o.model, o.run_id);
  announce_run_dir(r.run_dir);
  o.run_id = fs::path(r.run_dir).filename().string();
  const SystemInfo sys = system_info();
  const train::TrainableModel& m = *r.model;
  nlohmann::json cfg = {
      {"schema", "tach.train_config/1"},
      {"options", train::options_to_json(o)},
      {"model",
       {{"source", r.src.source},
        {"architecture", m.architecture()},
        {"labels", r.labels},
        {"problem_type", r.problem_type},
        {"parameters", m.params.count(false)},
        {"trainable_parameters", m.params.count(true)},
        {"nf4_weight_bytes", m.params.nf4_bytes()},
        {"notes", r.head_notes}}},
      {"data",
       {{"train_examples", r.plan.examples},
        {"eval_examples", r.eval_data.size()},
        {"batches_per_epoch", r.plan.batches_per_epoch},
        {"steps_per_epoch", r.plan.steps_per_epoch},
        {"total_steps", r.plan.total_steps},
        {"warmup_steps", r.plan.warmup_steps}}},
      {"precision",
       {{"dtype", o.dtype},
        {"gemm", o.dtype == "f32"                ? "f32"
                 : cpu::bf16_train_gemm_onednn() ? "bf16 inputs, f32 accumulation (oneDNN bf16 matmul)"
                                                 : "bf16 emulated: inputs rounded to bf16, f32 GEMM"}}},
      {"machine",
       {{"cpu", sys.cpu_model},
        {"threads", core::num_threads()},
        {"isa", sys.isa.summary()},
        {"gemm", sys.gemm_library}}},
      {"distributed",
       {{"world_size", r.world()},
        {"backend", r.world() > 1 ? "mpi" : "none"},
        {"batch_per_rank", o.batch_size},
        {"global_batch", r.plan.batch},
        {"sharding", "rank r takes rows r, r+N, ... of each global batch; losses weighted by each rank's rows"},
        {"gradient_buckets", r.dp ? r.dp->reducer().bucket_count() : 0},
        {"bucket_mb", o.bucket_mb},
        {"timeout_s", o.dist_timeout}}}};
  model::write_file_atomically(r.run_dir + "/config.json", cfg.dump(2) + "\n");
}

// The run's directory: a new one claimed by rank 0 and told to the others, or the resumed one.
void create_run_dir(TrainRun& r) {
  if (r.run_dir.empty()) {
    if (r.lead()) write_new_run_dir(r);
    // Every rank works in the directory rank 0 claimed.
    if (r.world() > 1) r.run_dir = r.comm->broadcast(r.run_dir, "broadcast of the run directory");
  }
  if (r.world() > 1) r.comm->set_heartbeat_dir(r.run_dir + "/ranks");
}

// A resumed run: the checkpoint's weights, moments and counters; the log lines after it dropped.
void restore_checkpoint(TrainRun& r) {
  r.steps_path = r.run_dir + "/steps.jsonl";
  r.epochs_path = r.run_dir + "/epoch_results.csv";
  if (!r.resume_checkpoint.empty()) {
    const nlohmann::json state = train::load_run_checkpoint(r.resume_checkpoint, r.model->params, r.step->optimizer());
    r.start_step = state.at("step").get<int64_t>();
    r.train_seconds_before = state.value("train_seconds", 0.0);
    r.epoch = EpochTotals::from_json(state);
    r.result.resumed_from = r.start_step;
    // Steps logged after the checkpoint are done again: drop them, and epochs that ended after it.
    // Each rank trims its own log; rank 0 the run's.
    const auto before_checkpoint = [&](const std::string& line, size_t) {
      try {
        return nlohmann::json::parse(line).at("step").get<int64_t>() < r.start_step;
      } catch (const std::exception&) {
        return false;  // a line cut short by the kill
      }
    };
    if (r.world() > 1) keep_lines(r.rank_dir() + "/steps.jsonl", before_checkpoint);
    if (!r.lead()) return;
    keep_lines(r.steps_path, before_checkpoint);
    const int64_t epochs_done = r.start_step / r.plan.steps_per_epoch;  // epochs 0 .. epochs_done - 1 are complete
    keep_lines(r.epochs_path, [&](const std::string& line, size_t i) {
      return i == 0 || std::atoll(line.c_str()) < epochs_done;  // epochs that ended by the checkpoint
    });
    r.note("resuming " + r.run_dir + " after step " + std::to_string(r.start_step) + " (" + r.resume_checkpoint + ")");
  } else if (!r.o.resume.empty()) {
    r.note("no checkpoint in " + r.run_dir + " yet: starting it from step 0");
    std::error_code ec;
    if (r.world() > 1) fs::remove(r.rank_dir() + "/steps.jsonl", ec);
    if (!r.lead()) return;
    fs::remove(r.steps_path, ec);
    fs::remove(r.epochs_path, ec);
  }
  if (!r.lead()) return;
  if (!fs::exists(r.epochs_path)) model::write_file_atomically(r.epochs_path, std::string(kEpochHeader) + "\n");
}

// A new event file for this process; a resumed run tells TensorBoard to drop the steps it redoes.
void open_tensorboard(TrainRun& r) {
  if (!r.o.tensorboard || !r.lead()) return;
  r.tensorboard = std::make_unique<TensorBoardWriter>(r.run_dir + "/tensorboard");
  // Resumed, even from step 0 (no checkpoint yet): the steps from here on replace earlier files' ones.
  if (!r.o.resume.empty()) r.tensorboard->restart_at(r.start_step);
  std::ifstream in(r.run_dir + "/config.json");
  std::stringstream config;
  config << in.rdbuf();
  // Four spaces make it a code block in TensorBoard's Markdown.
  std::string text = "    ";
  for (char c : config.str()) text += c == '\n' ? std::string("\n    ") : std::string(1, c);
  r.tensorboard->text("config", text, r.start_step);
}

// steps.jsonl's line for one step.
void log_step(TrainRun& r, TrainingLogger& logger, int64_t step, const train::StepOutcome& s, bool profiled) {
  const double t = s.seconds.total;
  const MemoryStats mem = memory_stats(Device::cpu());
  const int64_t epoch = step / r.plan.steps_per_epoch;  // whole epochs done before this step
  std::map<std::string, double> m = {{"epoch", double(epoch)},
                                     {"loss", s.loss},
                                     {"lr", r.plan.schedule.lr(step)},
                                     {"grad_norm", s.grad_norm},
                                     {"step_ms", t * 1e3},
                                     {"data_ms", s.seconds.data * 1e3},
                                     {"forward_ms", s.seconds.forward * 1e3},
                                     {"backward_ms", s.seconds.backward * 1e3},
                                     {"optimizer_ms", s.seconds.optimizer * 1e3},
                                     {"samples", double(s.samples)},
                                     {"tokens", double(s.tokens)},
                                     {"tokens_per_s", double(s.tokens) / t},
                                     {"samples_per_s", double(s.samples) / t},
                                     {"profiled", profiled ? 1.0 : 0.0},
                                     {"memory_total_bytes", double(mem.total.current)},
                                     {"memory_peak_bytes", double(mem.total.peak)}};
  for (int c = 0; c < kMemoryCategoryCount; ++c)
    m[std::string("memory_") + std::string(memory_category_name(MemoryCategory(c))) + "_bytes"] =
        double(mem.by_category[size_t(c)].current);
  if (r.o.memory_logging && step % r.o.memory_log_steps == 0) m["rss_bytes"] = double(read_process_memory().rss_bytes);
  if (r.world() > 1) {
    m["communication_ms"] = s.seconds.communication * 1e3;
    m["communication_exposed_ms"] = s.seconds.communication_exposed * 1e3;
  }
  logger.log_step(step, m);
}

// ranks/rank-R/steps.jsonl: this rank's own times and rows, for the stragglers and the overlap.
void log_rank_step(TrainingLogger& logger, int64_t step, const train::StepOutcome& s) {
  logger.log_step(step, {{"step_ms", s.seconds.total * 1e3},
                         {"data_ms", s.seconds.data * 1e3},
                         {"forward_ms", s.seconds.forward * 1e3},
                         {"backward_ms", s.seconds.backward * 1e3},
                         {"optimizer_ms", s.seconds.optimizer * 1e3},
                         {"communication_ms", s.seconds.communication * 1e3},
                         {"communication_exposed_ms", s.seconds.communication_exposed * 1e3},
                         {"samples", double(s.rank_samples)},
                         {"tokens", double(s.rank_tokens)}});
}

// Evaluation when due: every eval_every steps, or at each epoch's end.
std::optional<train::EvalScores> evaluate_if_due(TrainRun& r, TrainingLogger& logger, int64_t step, bool epoch_end) {
  const TrainOptions& o = r.o;
  if (!r.has_eval || !((o.eval_every > 0 && (step + 1) % o.eval_every == 0) || (o.eval_every == 0 && epoch_end)))
    return std::nullopt;
  const train::EvalScores scores =
      train::evaluate_trainable(*r.model, r.eval_data, std::max<int64_t>(o.batch_size, 32), r.problem_type, r.dp.get());
  if (!r.lead()) return scores;
  // A score the task has not (-1: accuracy after a masked LM or question answering, macro-F1
  // after token classification) is left out, as epoch_results.csv leaves it blank.
  std::map<std::string, double> logged = {{"eval_loss", scores.loss}, {"eval_seconds", scores.seconds}};
  if (scores.accuracy >= 0) logged["eval_accuracy"] = scores.accuracy;
  if (scores.macro_f1 >= 0) logged["eval_macro_f1"] = scores.macro_f1;
  if (scores.perplexity >= 0) logged["eval_perplexity"] = scores.perplexity;
  logger.log_step(step, logged);
  r.note("step " + std::to_string(step + 1) + ": eval loss " + std::to_string(scores.loss) +
         (scores.perplexity >= 0 ? ", perplexity " + std::to_string(scores.perplexity) : std::string()) +
         (scores.accuracy >= 0 ? ", accuracy " + std::to_string(scores.accuracy) : std::string()));
  return scores;
}

// The epoch's row of epoch_results.csv; its totals and the allocator's peaks start again.
void end_epoch(TrainRun& r, int64_t epoch, const std::optional<train::EvalScores>& scores) {
  TrainEpochReport er;
  er.epoch = epoch;
  er.train_loss = r.epoch.loss_sum / double(std::max<int64_t>(1, r.epoch.loss_count));
  er.evaluated = scores.has_value();
  if (scores) {
    er.eval_loss = scores->loss;
    er.eval_accuracy = scores->accuracy;
    er.eval_macro_f1 = scores->macro_f1;
    er.eval_perplexity = scores->perplexity;
  }
  er.seconds = r.epoch.seconds;
  er.tokens_per_s = double(r.epoch.tokens) / r.epoch.seconds;
  er.samples_per_s = double(r.epoch.samples) / r.epoch.seconds;
  er.peak_bytes = memory_stats(Device::cpu()).total.peak;
  er.load = r.epoch.load;
  r.result.epochs.push_back(er);
  if (!r.lead()) {
    r.epoch = EpochTotals{};
    return;
  }
  std::ifstream in(r.epochs_path);
  std::stringstream rows;
  rows << in.rdbuf();
  const bool e = er.evaluated;
  rows << er.epoch << "," << csv_number(er.train_loss) << "," << (e ? csv_number(er.eval_loss) : "") << ","
       << (e && er.eval_accuracy >= 0 ? csv_number(er.eval_accuracy) : "") << ","
       << (e && er.eval_macro_f1 >= 0 ? csv_number(er.eval_macro_f1) : "") << "," << csv_number(er.seconds) << ","
       << csv_number(er.tokens_per_s) << "," << csv_number(er.samples_per_s) << "," << er.peak_bytes << "\n";
  model::write_file_atomically(r.epochs_path, rows.str());
  r.epoch = EpochTotals{};
  r.peaks.fold();
  reset_memory_peaks(Device::cpu());
}

// The resume checkpoint after `step` when due: every save_every steps, or at each epoch's end.
// A stop request (Ctrl-C) saves one whatever the schedule, so that --resume loses no step.
void checkpoint_if_due(TrainRun& r, int64_t step, bool epoch_end, Clock::time_point run_start, bool stopping) {
  const TrainOptions& o = r.o;
  // The last step always: the work after training (saving the model) may be interrupted, and its
  // resume needs the final weights.
  const bool due = (o.save_every > 0 && (step + 1) % o.save_every == 0) || (o.save_every == 0 && epoch_end) ||
                   step + 1 == r.plan.total_steps;
  if ((!due && !stopping) || !r.lead()) return;  // the weights are the same on every rank: rank 0 saves them
  nlohmann::json state = r.epoch.to_json();
  state["step"] = step + 1;
  state["optimizer_steps"] = r.step->optimizer().steps();
  state["train_seconds"] = r.train_seconds_before + seconds_since(run_start);
  train::save_run_checkpoint(r.run_dir, step + 1, r.model->params, r.step->optimizer(), state);
}

// A micro-batch's rows for step `step`: the epoch's order, cut by the batch size.
train::MicroBatchSource micro_batches_of(const TrainRun& r, const std::vector<int64_t>& order, int64_t first_batch,
                                         int64_t epoch) {
  return [&r, &order, first_batch, epoch](int64_t micro, TokenBatch* batch, train::Targets* targets) {
    const int64_t b = first_batch + micro, B = r.plan.batch;
    std::vector<int64_t> idx(order.begin() + b * B, order.begin() + std::min(r.plan.examples, (b + 1) * B));
    if (r.dp) idx = train::rank_rows(idx, r.dp->rank(), r.dp->size());
    if (!idx.empty()) train::make_batch(r.data, idx, batch, targets, epoch);  // none: this rank sits the batch out
  };
}

// The steps from start_step to the end (or to a divergence). Returns the step reached.
int64_t train_loop(TrainRun& r, Profiler& profiler, const TrainObserver& observer) {
  const StepPlan& p = r.plan;
  TrainingLogger logger(r.lead() ? r.steps_path : "", r.start_step > 0);
  logger.mirror_to(r.tensorboard.get());
  std::unique_ptr<TrainingLogger> rank_logger;
  if (r.world() > 1) {
    fs::create_directories(r.rank_dir());
    rank_logger = std::make_unique<TrainingLogger>(r.rank_dir() + "/steps.jsonl", r.start_step > 0);
  }
  std::vector<int64_t> order;
  int64_t cached_epoch = -1;
  const auto run_start = Clock::now();
  reset_memory_peaks(Device::cpu());
  profiler.start();
  int64_t step = r.start_step;
  const StopScope stoppable;  // Ctrl-C ends training after the step in flight, checkpointed
  for (; step < p.total_steps; ++step) {
    const int64_t epoch = step / p.steps_per_epoch, in_epoch = step % p.steps_per_epoch;
    if (epoch != cached_epoch)
      order = train::epoch_order(p.examples, r.o.seed, epoch, r.o.shuffle), cached_epoch = epoch;
    const int64_t first_batch = in_epoch * p.accumulation;
    const int64_t micro = std::min(p.batches_per_epoch, first_batch + p.accumulation) - first_batch;
    if (!r.load_window) r.load_window.emplace();
    const train::StepOutcome s =
        r.step->run(step, micro, micro_batches_of(r, order, first_batch, epoch), p.schedule.lr(step));
    r.load_window->sample();
    if (!s.updated) {
      r.result.diverged = true;
      r.result.divergence = "step " + std::to_string(step) + ": the " +
                            (!std::isfinite(s.loss) ? "loss is " + std::to_string(s.loss)
                                                    : "gradient norm is " + std::to_string(s.grad_norm)) +
                            "; training stopped before the update, the weights of step " + std::to_string(step) +
                            " are kept, and the last checkpoint in " + r.run_dir + " is untouched";
      break;
    }
    const bool profiled = profiler.recording();
    profiler.step();
    if (r.lead()) log_step(r, logger, step, s, profiled);
    if (rank_logger) log_rank_step(*rank_logger, step, s);
    if (r.comm) r.comm->heartbeat("step " + std::to_string(step + 1));
    r.series.add(s);
    r.epoch.loss_sum += s.loss, ++r.epoch.loss_count;
    r.epoch.tokens += s.tokens, r.epoch.samples += s.samples, r.epoch.seconds += s.seconds.total;
    if (observer.on_step && r.lead()) {
      const double elapsed = seconds_since(run_start), done = double(step - r.start_step + 1);
      observer.on_step({step + 1, p.total_steps, epoch, s.loss, p.schedule.lr(step), s.grad_norm,
                        double(s.tokens) / s.seconds.total, elapsed / done * double(p.total_steps - step - 1)});
    }
    const bool epoch_end = in_epoch == p.steps_per_epoch - 1 || step == p.total_steps - 1;
    // The load is read at the end of the epoch whose steps bring its window to half a second, or
    // the run's last (extended by waiting, as a bench point's is): never once per short epoch,
    // where a few ticks say nothing and the waits would add up (400 epochs, 200 s).
    const bool last_step = step == p.total_steps - 1;
    if (epoch_end && (last_step || r.load_window->elapsed_s() >= kMinLoadWindowS)) {
      r.epoch.load = r.load_window->finish(core::num_threads(), last_step ? kMinLoadWindowS : 0.0);
      r.load_window.reset();
    }
    const auto scores = evaluate_if_due(r, logger, step, epoch_end);
    if (epoch_end) end_epoch(r, epoch, scores);
    // Every rank stops after the same step, or the others would wait for it in the next one.
    const bool stop = r.dp ? r.dp->any(stop_requested()) : stop_requested();
    const bool stopping = stop && step + 1 < p.total_steps;
    checkpoint_if_due(r, step, epoch_end, run_start, stopping);
    if (stopping)
      throw Stopped("stopped after step " + std::to_string(step + 1) + " of " + std::to_string(p.total_steps) +
                    "; its checkpoint is in " + r.run_dir + ": continue with tach train --resume " + r.run_dir);
  }
  profiler.stop();
  r.result.train_seconds = r.train_seconds_before + seconds_since(run_start);
  return step;
}

// The top ops of the profiled steps for the summary; with --profile, the trace and op tables too.
nlohmann::json top_ops(const TrainRun& r, const Profiler& profiler) {
  ProfileData pdata = profiler.data();
  pdata.distributed = {r.comm ? r.comm->backend() : "none", r.comm ? r.comm->rank() : 0, r.world()};
  nlohmann::json top = nlohmann::json::array();
  if (pdata.events.empty()) return top;
  const MachineCeilings ceilings = machine_ceilings(false);
  const auto rows = op_table(pdata, "op", "self", ceilings);
  for (size_t i = 0; i < rows.size() && i < 12; ++i)
    top.push_back({{"op", rows[i].key},
                   {"calls", rows[i].calls},
                   {"self_ms", rows[i].self_ns / 1e6},
                   {"percent_of_steps", rows[i].percent_of_steps},
                   {"bound", bound_name(rows[i].verdict.bound)},
                   {"achieved_fraction", rows[i].verdict.achieved_fraction}});
  if (r.o.profile) {
    const std::string dir = r.o.profiler_output_dir.empty() ? r.run_dir + "/traces" : r.o.profiler_output_dir;
    fs::create_directories(dir);
    // Data-parallel: one trace per rank in one directory, as Holistic Trace Analysis reads them.
    const std::string rank = r.world() > 1 ? "rank-" + std::to_string(r.comm->rank()) + "." : "";
    write_chrome_trace(pdata, dir + "/" + rank + "train_steps.trace.json.gz");
    model::write_file_atomically(
        dir + "/" + rank + "op_table.txt",
        op_table_text(rows, 40) + "\n" + op_table_text(op_table(pdata, "module", "self", ceilings), 40));
  }
  return top;
}

void save_trained_model(TrainRun& r) {
  if (r.result.diverged || !r.lead()) return;
  r.result.saved_model = r.o.save_dir.empty() ? r.run_dir + "/model" : r.o.save_dir;
  if (r.model->lora)
    train::save_peft_adapter(r.result.saved_model, *r.model,
                             r.src.location.dir.empty() ? r.o.model : fs::absolute(r.src.location.dir).string());
  else train::save_hf_model(r.result.saved_model, *r.model, r.src.config_json, r.problem_type, r.tokenizer_path);
}

// The distributed section of summary.json: every rank's medians (a collective: every rank calls
// it), the stragglers, the communication's share and how much of it the backward hid, and the
// scaling against a one-process run of the same job when --scaling-reference names one.
nlohmann::json distributed_summary(TrainRun& r) {
  if (r.world() == 1) return {{"world_size", 1}};
  const StepSeries& s = r.series;
  constexpr int kFields = 8;
  std::vector<double> all(size_t(r.world() * kFields), 0.0);
  double* mine = all.data() + r.comm->rank() * kFields;
  const double bytes_per_step = r.dp ? r.dp->reducer().bucket_bytes() : 0;
  const double values[kFields] = {median(s.step_ms), median(s.data_ms), median(s.fwd_ms),     median(s.bwd_ms),
                                  median(s.opt_ms),  median(s.comm_ms), median(s.exposed_ms), bytes_per_step};
  std::copy(values, values + kFields, mine);
  r.comm->sum(all.data(), int(all.size()), "all_reduce of every rank's step medians");
  nlohmann::json ranks = nlohmann::json::array();
  std::vector<double> step_medians;
  int slowest = 0;
  for (int k = 0; k < r.world(); ++k) {
    const double* v = all.data() + k * kFields;
    ranks.push_back({{"rank", k},
                     {"step_ms_median", v[0]},
                     {"data_ms_median", v[1]},
                     {"forward_ms_median", v[2]},
                     {"backward_ms_median", v[3]},
                     {"optimizer_ms_median", v[4]},
                     {"communication_ms_median", v[5]},
                     {"communication_exposed_ms_median", v[6]}});
    step_medians.push_back(v[0]);
    if (v[0] > all[size_t(slowest * kFields)]) slowest = k;
  }
  const double step = median(s.step_ms), comm = median(s.comm_ms), exposed = median(s.exposed_ms);
  nlohmann::json out = {
      {"world_size", r.world()},
      {"backend", "mpi"},
      {"ranks", ranks},
      {"stragglers",
       {{"slowest_rank", slowest},
        {"slowest_over_median", all[size_t(slowest * kFields)] / std::max(1e-9, median(step_medians))},
        {"method", "each rank's median step time; the slowest against the median over the ranks"}}},
      {"communication_share", comm / std::max(1e-9, step)},
      {"communication_exposed_share", exposed / std::max(1e-9, step)},
      {"overlap_share", comm > 0 ? 1.0 - std::min(1.0, exposed / comm) : 0.0},
      {"all_reduce_bytes_per_step", bytes_per_step},
      {"all_reduce_gb_per_s", comm > 0 ? bytes_per_step / (comm * 1e-3) / 1e9 : 0.0},
      {"method",
       "rank 0's medians over its steps: communication is the gradient all-reduces' time on the communication "
       "thread; exposed is what the step waited for them after its backward; overlap is the rest's share of it. "
       "Bandwidth: gradient bytes per rank over that time (MPI_Allreduce, in place)"}};
  if (!r.o.scaling_reference.empty()) {
    const nlohmann::json ref = read_json(r.o.scaling_reference + "/summary.json");
    const nlohmann::json ref_config = read_json(r.o.scaling_reference + "/config.json");
    check(ref_config.value("distributed", nlohmann::json::object()).value("world_size", 1) == 1,
          "--scaling-reference " + r.o.scaling_reference + " is not a one-process run");
    const double one = ref.at("samples_per_s_median").get<double>();
    out["scaling"] = {{"reference", r.o.scaling_reference},
                      {"reference_samples_per_s", one},
                      {"samples_per_s", median(s.sample_rates)},
                      {"efficiency", median(s.sample_rates) / std::max(1e-9, one)},
                      {"method",
                       "this run's median samples/s over the reference's, a one-process run on the same machine "
                       "with the same cores; 1.0 is perfect scaling"}};
  }
  return out;
}

// What tach estimate plans for this run's step (its batch at --max-length, method, checkpointing
// and precision): the activations it keeps and the whole peak, beside the measured peak. Null
// where there is no estimate for the model.
nlohmann::json planned_memory(const TrainRun& r) {
  EstimateInput in;
  in.model = r.o.model;
  in.dtype = r.o.dtype;
  in.batch = r.o.batch_size;
  in.seq_len = r.o.max_length;
  in.mode = "train-" + r.o.method;
  in.lora_rank = r.o.lora_r;  // on the default targets, as the run's unless --lora-target-modules named others
  in.gradient_checkpointing = r.o.gradient_checkpointing;
  try {
    const MemoryEstimate e = estimate_memory(in);
    int64_t activations = 0;
    for (const auto& l : e.lines)
      if (l.name.find("activations") != std::string::npos) activations += l.bytes;
    return {{"planned_activation_bytes", activations},
            {"estimate_bytes", e.total_bytes},
            {"method",
             "tach estimate for one micro-batch of --batch-size rows at --max-length tokens (padding to the "
             "longest row uses fewer): its activation lines and its whole peak"}};
  } catch (const Error&) { return nullptr; }
}

// summary.json's figures from this process's steps (a collective under mpirun: every rank calls
// it). r.peaks must be folded already (run_training does, before the ceilings may be measured).
nlohmann::json measured_summary(TrainRun& r, const std::string& profiled_steps) {
  TrainResult& res = r.result;
  const StepSeries& s = r.series;
  nlohmann::json by_cat = nlohmann::json::object();
  for (int c = 0; c < kMemoryCategoryCount; ++c) {
    const std::string name(memory_category_name(MemoryCategory(c)));
    by_cat[name] = res.peak_bytes_by_category[name] = r.peaks.by_category[size_t(c)];
  }
  res.peak_bytes = r.peaks.total;
  res.step_ms_median = median(s.step_ms);
  res.step_ms_p90 = p90(s.step_ms);
  res.tokens_per_s_median = median(s.tok_rates);
  res.samples_per_s_median = median(s.sample_rates);
  res.trainable_parameters = r.model->params.count(true);
  res.total_parameters = r.model->params.count(false);
  nlohmann::json epochs = nlohmann::json::array();
  const auto or_null = [](bool has, double v) { return has ? nlohmann::json(v) : nlohmann::json(nullptr); };
  for (const auto& e : res.epochs)
    epochs.push_back({{"epoch", e.epoch},
                      {"train_loss", e.train_loss},
                      {"eval_loss", or_null(e.evaluated, e.eval_loss)},
                      {"eval_accuracy", or_null(e.evaluated && e.eval_accuracy >= 0, e.eval_accuracy)},
                      {"eval_macro_f1", or_null(e.evaluated && e.eval_macro_f1 >= 0, e.eval_macro_f1)},
                      {"eval_perplexity", or_null(e.evaluated && e.eval_perplexity >= 0, e.eval_perplexity)},
                      {"seconds", e.seconds},
                      {"tokens_per_s", e.tokens_per_s},
                      {"load", e.load.measured ? bench::load_json(bench::load_of(e.load)) : nlohmann::json(nullptr)}});
  return {{"schema", "tach.train_summary/1"},
          {"run_dir", r.run_dir},
          {"steps", res.steps},
          {"total_steps", r.plan.total_steps},
          {"resumed_from_step", res.resumed_from},
          {"exec", r.o.exec},
          {"diverged", res.diverged},
          {"divergence", res.divergence},
          {"train_seconds", res.train_seconds},
          {"note_on_timings",
           "medians over the steps this process ran (a resumed run: after the resume); wall time, "
           "steady clock; tokens are real (unpadded) tokens"},
          {"method", r.o.method},
          {"step_ms_median", res.step_ms_median},
          {"step_ms_p90", res.step_ms_p90},
          {"samples_per_s_median", res.samples_per_s_median},
          {"phase_ms_median",
           {{"data", median(s.data_ms)},
            {"forward", median(s.fwd_ms)},
            {"backward", median(s.bwd_ms)},
            {"optimizer", median(s.opt_ms)}}},
          {"tokens_per_s_median", res.tokens_per_s_median},
          {"epochs", epochs},
          {"memory_peak_bytes",
           {{"total", r.peaks.total},
            {"by_category", by_cat},
            {"method",
             "tach's allocator, exact bytes, from the first step to the end (evaluation "
             "included); the model's own weights, gradients and AdamW moments are f32"}}},
          {"optimizer_state_bytes", r.step->optimizer().state_bytes()},
          {"parameters", res.total_parameters},
          {"trainable_parameters", res.trainable_parameters},
          {"nf4_weight_bytes", r.model->params.nf4_bytes()},
          {"memory_plan", planned_memory(r)},
          {"top_ops", nlohmann::json::array()},
          {"distributed", distributed_summary(r)},
          {"profiled_steps", profiled_steps},
          {"saved_model", ""}};
}

void write_summary(const TrainRun& r, const nlohmann::json& summary) {
  if (r.lead()) model::write_file_atomically(r.run_dir + "/summary.json", summary.dump(2) + "\n");
}

// The work after the last step that --resume can still do (a stop before it leaves it listed in
// summary.json's post_training_pending); the op verdicts need the profiled steps, which only the
// process that ran them holds.
constexpr const char* kSaveModel = "saving the model";
constexpr const char* kNoOpVerdicts =
    "not judged: the run was stopped before its profiled steps' ops were (tach profile --train judges a step's)";

// Before a piece of that work: a Ctrl-C (held by the StopScope) ends the run there, with
// summary.json written. One during the last piece lets it end.
void stop_if_asked(TrainRun& r, const nlohmann::json& summary, const std::string& before) {
  const bool stop = r.dp ? r.dp->any(stop_requested()) : stop_requested();
  if (!stop) return;
  write_summary(r, summary);
  const bool model_left = !summary.at("post_training_pending").empty();
  throw Stopped("after training's " + std::to_string(r.result.steps) + " steps, before " + before +
                ": summary.json in " + r.run_dir + " has the measured steps" +
                (model_left ? "; tach train --resume " + r.run_dir + " saves the model" : std::string()));
}

// For tests that stop a run at one piece of the work after training: TACH_TEST_HOLD_AT=save-model
// or op-verdicts makes the run wait there (its note printed) for a Ctrl-C, up to a minute.
void hold_for_test(const char* piece) {
  const char* at = std::getenv("TACH_TEST_HOLD_AT");
  if (!at || std::string(at) != piece) return;
  for (int i = 0; i < 6000 && !stop_requested(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
}

// The summary of a run resumed after its last step: what the process that trained wrote (it was
// stopped in the work after training), or, without one, the medians of every step in steps.jsonl.
nlohmann::json summary_of_finished_training(TrainRun& r, const std::string& profiled_steps) {
  if (fs::exists(r.run_dir + "/summary.json")) {
    const nlohmann::json s = read_json(r.run_dir + "/summary.json");
    result_from_summary(s, r.result);
    r.result.resumed_from = r.start_step;
    return s;
  }
  std::ifstream in(r.steps_path);
  for (std::string line; std::getline(in, line);) {
    nlohmann::json j;  // {"metrics": {...}, "step": N}
    try {
      j = nlohmann::json::parse(line).at("metrics");
    } catch (const std::exception&) { continue; }  // a line cut short by a kill
    if (!j.contains("step_ms")) continue;          // an evaluation's line
    const double ms = j["step_ms"], t = ms / 1e3;
    r.series.step_ms.push_back(ms);
    r.series.data_ms.push_back(j.value("data_ms", 0.0));
    r.series.fwd_ms.push_back(j.value("forward_ms", 0.0));
    r.series.bwd_ms.push_back(j.value("backward_ms", 0.0));
    r.series.opt_ms.push_back(j.value("optimizer_ms", 0.0));
    r.series.tok_rates.push_back(j.value("tokens", 0.0) / t);
    r.series.sample_rates.push_back(j.value("samples", 0.0) / t);
    r.peaks.total = std::max(r.peaks.total, int64_t(j.value("memory_peak_bytes", 0.0)));
  }
  r.note("no summary.json in " + r.run_dir + ": its figures are the medians of the " +
         std::to_string(r.series.step_ms.size()) + " steps in steps.jsonl");
  nlohmann::json s = measured_summary(r, profiled_steps);
  s["note_on_timings"] = "medians over every step in steps.jsonl; wall time, steady clock; tokens are real (unpadded)";
  s["top_ops_note"] = kNoOpVerdicts;
  return s;
}

// After the last step: summary.json from the measured steps at once, then the model saved and the
// profiled ops judged against this machine's ceilings (measured first when none are cached: a
// few seconds), each announced; a Ctrl-C in them keeps summary.json (stop_if_asked).
void after_training(TrainRun& r, const Profiler& profiler, const std::string& profiled_steps) {
  const bool trained_before = r.start_step > 0 && r.start_step >= r.plan.total_steps;
  // The run's memory peaks end here: judging the ops may measure this machine's ceilings, whose
  // buffers go through the same allocator and are tach's own work, not the run's memory.
  r.peaks.fold();
  nlohmann::json summary =
      trained_before ? summary_of_finished_training(r, profiled_steps) : measured_summary(r, profiled_steps);
  summary["post_training_pending"] = r.result.diverged ? nlohmann::json::array() : nlohmann::json::array({kSaveModel});
  if (!trained_before) summary["top_ops_note"] = kNoOpVerdicts;  // until they are
  const StopScope stoppable;                                     // Ctrl-C ends the run before the next piece of work
  write_summary(r, summary);
  if (!r.result.diverged) {
    r.note("training done, summary.json written; saving the model to " +
           (r.o.save_dir.empty() ? r.run_dir + "/model" : r.o.save_dir));
    hold_for_test("save-model");
    stop_if_asked(r, summary, kSaveModel);
    save_trained_model(r);
    summary["saved_model"] = r.result.saved_model;
    summary["post_training_pending"] = nlohmann::json::array();
  }
  if (!trained_before) {
    r.note(cached_machine_ceilings() ? "judging the profiled steps' ops against this machine's ceilings"
                                     : "measuring this machine's ceilings (a few seconds) to judge the profiled "
                                       "steps' ops");
    hold_for_test("op-verdicts");
    stop_if_asked(r, summary, "judging the profiled steps' ops");
    try {
      summary["top_ops"] = top_ops(r, profiler);
    } catch (const Stopped& e) {  // a Ctrl-C while the ceilings were measured: keep what was done
      write_summary(r, summary);
      throw Stopped("after training's " + std::to_string(r.result.steps) + " steps, " + e.what() +
                    ": summary.json in " + r.run_dir + " has the measured steps");
    }
    summary.erase("top_ops_note");
  }
  write_summary(r, summary);
}

// Data-parallel set-up: this rank's communicator, its deadline, and the threads it may use
// (under mpirun, the machine's cores shared among the ranks on it, unless --threads says).
void join_ranks(TrainRun& r) {
  dist::Communicator& comm = dist::Communicator::world();
  if (!comm.distributed()) return;
  r.comm = &comm;
  comm.set_timeout(r.o.dist_timeout);
  r.result.world_size = comm.size();
  r.result.rank = comm.rank();
  if (r.o.threads == 0) {
    const int cores = core::num_threads();
    core::set_num_threads(std::max(1, cores / comm.local_size()));
  }
  if (comm.rank() != 0) set_progress_style(ProgressStyle::Quiet);  // rank 0 speaks for the job
}

TrainResult train_this_rank(TrainRun& r, const TrainObserver& observer) {
  resume_options(r);
  if (r.result.finished_already) return r.result;
  train::validate_options(r.o);
  if (r.o.threads > 0) set_threads(r.o.threads);  // warns when above the cores
  // Mixed precision for this run's GEMMs (cpu/train_gemm.h); restored when the run ends.
  const cpu::TrainPrecisionScope precision(r.o.dtype == "bf16" ? cpu::TrainPrecision::bf16 : cpu::TrainPrecision::f32);
  if (r.o.dtype == "bf16") r.note(train::bf16_training_note());
  if (r.world() > 1)
    r.note(std::to_string(r.world()) + " ranks (MPI), " + std::to_string(core::num_threads()) +
           " thread(s) each, batch " + std::to_string(r.o.batch_size) + " per rank: global batch " +
           std::to_string(r.o.batch_size * r.world()));

  r.src = train::open_training_model(r.o.model, r.o.seed);
  r.task = r.o.task == "mlm"                    ? Head::masked_lm
           : r.o.task == "token-classification" ? Head::token_classification
           : r.o.task == "question-answering"   ? Head::question_answering
                                                : Head::sequence_classification;
  if (r.task == Head::token_classification) {
    r.tagged = read_tagged(r, r.o.data);
    if (r.o.max_samples > 0 && int64_t(r.tagged.size()) > r.o.max_samples) r.tagged.resize(size_t(r.o.max_samples));
  } else if (r.task == Head::question_answering) {
    r.questions = data::read_squad(r.o.data.path).questions;
    if (r.o.max_samples > 0 && int64_t(r.questions.size()) > r.o.max_samples)
      r.questions.resize(size_t(r.o.max_samples));
  } else {
    // JSON split files: train on "train", not "test".
    r.train_set = read_dataset(data_source(r, r.o.data));
    if (r.o.max_samples > 0 && int64_t(r.train_set.examples.size()) > r.o.max_samples)
      r.train_set.examples.resize(size_t(r.o.max_samples));
  }
  resolve_head(r);
  build_model(r);
  prepare_data(r);
  r.plan = plan_steps(r.o, r.data.size(), r.world());
  make_step(r);
  create_run_dir(r);
  r.result.run_dir = r.run_dir;
  restore_checkpoint(r);
  open_tensorboard(r);

  // The profiler records the schedule's active steps always (for the summary's top ops); traces
  // are written only with --profile.
  ProfilerOptions popts;
  popts.schedule.skip_first = int(r.o.profiler_skip_first);
  popts.schedule.wait = int(r.o.profiler_wait);
  popts.schedule.warmup = int(r.o.profiler_warmup);
  popts.schedule.active = int(r.o.profiler_active);
  popts.schedule.repeat = int(r.o.profiler_repeat);
  popts.memory_logging = true;
  popts.memory_log_steps = r.o.memory_logging ? int(r.o.memory_log_steps) : 1;
  Profiler profiler(popts);
  r.result.steps = train_loop(r, profiler, observer);
  after_training(r, profiler, popts.schedule.describe());
  if (r.comm) r.comm->barrier("barrier at the end of training");  // rank 0's files are complete for every rank
  return r.result;
}

}  // namespace

TrainResult run_training(TrainOptions options, const TrainObserver& observer) {
  TrainRun r;
  r.o = std::move(options);
  join_ranks(r);
  r.note = [&](const std::string& m) {
    if (observer.on_note && r.lead()) observer.on_note(m);
  };
  if (!r.comm) return train_this_rank(r, observer);
  try {
    return train_this_rank(r, observer);
  } catch (const Stopped&) {
    throw;  // every rank stopped after the same step (a collective decision), checkpointed
  } catch (const std::exception& e) {
    // The other ranks would wait for this one until their deadline: end the job now, saying why.
    r.comm->abort_job(e.what(), 1);
  }
}

}  // namespace tach
