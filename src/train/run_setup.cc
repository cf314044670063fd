// Setting a run up: this rank's place among the others, the options (a resumed run's own), the
// head's labels and problem type, the model with its method, and the step that trains it.
#include <algorithm>
#include <filesystem>

#include "core/parallel.h"
#include "tach/error.h"
#include "tach/runtime.h"
#include "train/run_checkpoint.h"
#include "train/run_files.h"
#include "train/task_data.h"
#include "train/train_options.h"
#include "train/train_run.h"
#include "train/training_method.h"

namespace tach::train {

namespace fs = std::filesystem;

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

// A resumed run continues with the options it started with; nothing given now overrides them.
// A finished one is left as it is: not even run.log is appended to.
void resume_options(TrainRun& r) {
  if (r.o.resume.empty()) return;
  r.run_dir = r.o.resume;
  // Finished, and resumed with its number of ranks (another number is refused below, as always).
  if (fs::exists(r.run_dir + "/summary.json")) {
    const nlohmann::json summary = read_json(r.run_dir + "/summary.json");
    if (summary_says_finished(summary) &&
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
  // What this invocation says and config.json does not: the directory, and where to run it.
  const std::string resume = r.o.resume;
  const Device device = r.o.device;
  r.o = options_from_json(config.at("options"), r.run_dir + "/config.json");
  r.o.resume = resume;
  r.o.device = device;
  const int trained_with = config.value("distributed", nlohmann::json::object()).value("world_size", 1);
  check(trained_with == r.world(),
        r.run_dir + " was trained with " + std::to_string(trained_with) + " rank(s) and this is " +
            std::to_string(r.world()) + ": the global batch and the data each rank takes depend on it; resume with " +
            (trained_with == 1 ? std::string("one process") : "mpirun -np " + std::to_string(trained_with)));
  r.resume_checkpoint = latest_run_checkpoint(r.run_dir);
}

namespace {

// A token classifier's labels: the checkpoint's own head's, else --labels, else the data's tags sorted.
void resolve_token_labels(TrainRun& r) {
  if (r.src.has_head(Head::token_classification)) {
    r.labels = r.src.id2label();
    check(r.o.labels.empty() || r.o.labels == r.labels, "--labels names a new head, but " + r.o.model +
                                                            " already has a token classifier (" +
                                                            std::to_string(r.labels.size()) + " labels)");
  } else {
    r.labels = r.o.labels.empty() ? tag_labels(r.tagged) : r.o.labels;
  }
}

// A sequence classifier's: the checkpoint's head, a continued adapter's, or a new head's from
// --labels or the data.
void resolve_classifier_head(TrainRun& r) {
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
    r.labels =
        r.o.labels.empty() ? labels_from_data(r.train_set, r.problem_type == "multi_label_classification") : r.o.labels;
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

Head head_of_task(const std::string& task) {
  return task == "mlm"                    ? Head::masked_lm
         : task == "token-classification" ? Head::token_classification
         : task == "question-answering"   ? Head::question_answering
                                          : Head::sequence_classification;
}

std::string task_of_head(Head h) { return h == Head::masked_lm ? "mlm" : head_name(h); }

// "config.json's architecture: BertForTokenClassification", else where the head was found.
std::string published_with(const TrainingModelSource& s) {
  const nlohmann::json& a = s.config_json.contains("architectures") ? s.config_json["architectures"] : nlohmann::json();
  if (a.is_array() && !a.empty() && a[0].is_string()) return "config.json's architecture: " + a[0].get<std::string>();
  return "its weights";
}

}  // namespace

void choose_task(TrainRun& r) {
  const Head own = r.src.checkpoint_head;
  // A fine-tuned per-token head: the default would drop it for a new sequence classifier. A masked
  // LM keeps the default (a pre-trained encoder is published with it, and fine-tuning it to classify
  // is the usual run; --task mlm continues its pre-training).
  if (r.o.task_default && (own == Head::token_classification || own == Head::question_answering)) {
    r.o.task = task_of_head(own);
    if (own == Head::question_answering && !r.o.max_length_given) r.o.max_length = 384;  // run_qa.py's
    const std::string note = "--task " + r.o.task + ", from " + r.o.model + "'s own head (" + published_with(r.src) +
                             "), which trains; --task sequence-classification trains a new sequence classifier "
                             "instead";
    r.head_notes.push_back(note);
    r.note(note);
  }
  r.task = head_of_task(r.o.task);
  // A checkpoint's task-trained head the task does not train: said, with what becomes of it. (A
  // preset's synthetic weights hold every head: nothing trained is lost.)
  const bool task_head =
      own == Head::sequence_classification || own == Head::token_classification || own == Head::question_answering;
  if (task_head && own != r.task && r.src.store) {
    const std::string note = "--task " + r.o.task + " on " + r.o.model + ", published with a " + head_name(own) +
                             " head (" + published_with(r.src) +
                             "): that head is left out (not trained, not saved) and a new " + head_name(r.task) +
                             " head is initialised from --seed " + std::to_string(r.o.seed);
    r.head_notes.push_back(note);
    r.note(note);
  }
}

void resolve_head(TrainRun& r) {
  if (r.task == Head::sequence_classification) return resolve_classifier_head(r);
  r.problem_type.clear();
  r.labels.clear();
  // Question answering: start, end; the masked LM: no labels.
  if (r.task == Head::token_classification) resolve_token_labels(r);
}

// The trainable model with its method (LoRA, QLoRA) applied; the checkpoint's bytes released.
void build_model(TrainRun& r) {
  // The gradient all-reduce sums host buffers: ranks train on the CPU.
  check(r.world() == 1 || r.o.device.kind == DeviceKind::cpu,
        "--device " + r.o.device.str() +
            " under mpirun: data-parallel training sums its gradients in host memory, "
            "so each rank trains on the CPU in this version; run one process on the GPU, or drop --device");
  // choose_task's notes were said when made: only the ones made here are said below.
  const size_t said = r.head_notes.size();
  r.model = build_trainable_model(r.src, r.labels, r.problem_type, r.o.seed, &r.head_notes, r.task, r.o.device);
  MethodOptions mo;
  mo.method = r.o.method;
  mo.lora.r = r.o.lora_r;
  mo.lora.alpha = float(r.o.lora_alpha);
  mo.lora.dropout = float(r.o.lora_dropout);
  mo.lora.target_modules = r.o.lora_target_modules;
  mo.lora.modules_to_save = r.o.modules_to_save;
  mo.adapter = r.adapter.get();
  mo.adapter_dir = r.o.adapter;
  for (auto& n : apply_training_method(*r.model, *r.src.family, mo, r.o.seed)) r.head_notes.push_back(n);
  r.src.store.reset();  // every weight is an f32 master copy (or NF4) now
  for (size_t i = said; i < r.head_notes.size(); ++i) r.note(r.head_notes[i]);
}

void fit_windows_to_model(TrainRun& r) {
  TrainOptions& o = r.o;
  const int64_t positions = r.model->max_tokens();
  // RoBERTa's and MPNet's positions start after padding_idx: fewer tokens than max_position_embeddings.
  const std::string limit = o.model + "'s " + std::to_string(positions) + " positions (the tokens a row can hold)";
  const bool qa = r.task == Head::question_answering;
  if (o.max_length > positions && !o.max_length_given) {
    // A length not given (128; question answering: run_qa.py's max_seq_length = min(384, the
    // tokenizer's model_max_length)) follows the model; the stride as the question-answering
    // pipeline fits it, half the window at most.
    const std::string default_length = std::to_string(o.max_length);
    o.max_length = positions;
    if (qa && o.doc_stride_default) o.doc_stride = std::min(o.doc_stride, positions / 2);
    const std::string note =
        qa ? "question-answering windows of " + std::to_string(positions) + " tokens, " + limit + ", not the default " +
                 default_length +
                 (o.doc_stride_default ? "; --doc-stride " + std::to_string(o.doc_stride) : std::string())
           : "rows of at most " + std::to_string(positions) + " tokens, " + limit + ", not the default " +
                 default_length;
    r.head_notes.push_back(note);
    r.note(note);
  }
  // Refused here, before the run directory: past them, the first long row would stop the run mid-way.
  usage_check(o.max_length <= positions, "--max-length " + std::to_string(o.max_length) + " is past " + limit +
                                             ": give --max-length " + std::to_string(positions) +
                                             " or less (or leave it out: the default then fits the model)");
  usage_check(o.eval_max_length <= positions, "--eval-max-length " + std::to_string(o.eval_max_length) + " is past " +
                                                  limit + ": give " + std::to_string(positions) + " or less");
  if (!qa) return;
  usage_check(o.doc_stride < o.max_length, "--doc-stride " + std::to_string(o.doc_stride) +
                                               " must be smaller than the windows, " + std::to_string(o.max_length) +
                                               " tokens (" + limit + ")");
}

// The step: its execution, dropout, GEMM precision and optimizer.
void make_step(TrainRun& r) {
  const TrainOptions& o = r.o;
  StepSettings s;
  s.fused = o.exec == "fused";
  s.gradient_checkpointing = o.gradient_checkpointing;
  s.dropout = o.dropout ? r.src.dropout(r.task) : DropoutRates{};
  s.dropout.seed = o.seed;
  if (o.dropout && r.model->lora) s.dropout.lora = float(o.lora_dropout);
  s.grad_accumulation = o.grad_accumulation;
  s.adam.beta1 = float(o.adam_beta1);
  s.adam.beta2 = float(o.adam_beta2);
  s.adam.eps = float(o.adam_eps);
  s.adam.weight_decay = float(o.weight_decay);
  s.decay_scope = o.decay_scope == "all" ? DecayScope::all : DecayScope::trainer;
  s.max_grad_norm = o.max_grad_norm;
  s.problem_type = r.problem_type;
  s.precision = o.dtype == "bf16" ? DType::bf16 : DType::f32;
  if (r.world() > 1) {
    r.dp = std::make_unique<DataParallel>(*r.comm, r.model->params, int64_t(o.bucket_mb * 1e6));
    s.data_parallel = r.dp.get();
  }
  r.teacher = open_teacher(r);
  s.teacher = r.teacher.get();
  r.step = std::make_unique<TrainingStep>(*r.model, s);
}

}  // namespace tach::train
