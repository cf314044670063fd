#include "prune/calibration.h"

#include <algorithm>

#include "tach/error.h"
#include "train/train_run.h"

namespace tach::prune {

namespace {

// How a checkpoint was published: config.json's architecture, else its head.
std::string published_as(const train::TrainingModelSource& s) {
  const nlohmann::json& a = s.config_json.contains("architectures") ? s.config_json["architectures"] : nlohmann::json();
  if (a.is_array() && !a.empty() && a[0].is_string()) return "config.json's architecture: " + a[0].get<std::string>();
  return s.checkpoint_head == Head::none ? "a bare model" : std::string("a ") + head_name(s.checkpoint_head) + " model";
}

// tach train's --task for the head (the data each reads is documented under it).
const char* task_of(Head h) {
  switch (h) {
    case Head::token_classification: return "token-classification";
    case Head::question_answering: return "question-answering";
    case Head::masked_lm: return "mlm";
    default: return "sequence-classification";
  }
}

// The sequence classifier's examples with their labels. A file without the label column is a
// usage error naming the columns there are; any other problem is the reader's own error.
Dataset read_labelled(const DatasetOptions& d) {
  try {
    return read_dataset(d);
  } catch (const UsageError&) { throw; } catch (const Error&) {
    DatasetOptions texts = d;
    texts.label_column.clear();
    const Dataset unlabelled = read_dataset(texts);  // throws itself where the texts are the problem
    const auto& cols = unlabelled.columns;
    if (std::find(cols.begin(), cols.end(), d.label_column) != cols.end()) throw;
    std::string names;
    for (const auto& c : cols) names += (names.empty() ? "" : ", ") + c;
    throw UsageError("--by importance needs labelled calibration data: " + d.path + " has no label column '" +
                     d.label_column + "' (its columns: " + names + "); name it with --label-column");
  }
}

// A per-token head's examples, read by tach train's readers. Their messages name --task (another
// task's file is recognised and its task named); prefixed, they say which head read the file.
void read_task_examples(train::TrainRun& r) {
  const std::string head = head_name(r.task);
  const std::string context = "--by importance scores " + r.o.model + "'s " + head + " head on -d " + r.o.data.path +
                              ", read as tach train --task " + task_of(r.task) + " reads it: ";
  try {
    train::read_training_examples(r);
  } catch (const UsageError& e) { throw UsageError(context + e.what()); } catch (const Error& e) {
    throw UsageError(context + e.what());
  }
  const size_t read = r.task == Head::token_classification ? r.tagged.size()
                      : r.task == Head::question_answering ? r.questions.size()
                                                           : r.train_set.examples.size();
  usage_check(read > 0, context + "it holds no examples");
}

}  // namespace

CalibrationSet calibration_set(const PruneOptions& o, train::TrainingModelSource src) {
  const Head head = src.checkpoint_head;
  check(head == Head::sequence_classification || head == Head::token_classification ||
            head == Head::question_answering || head == Head::masked_lm,
        "--by importance ranks units by the loss of the model's own head (a sequence or token classifier, question "
        "answering or a masked LM); " +
            o.model + " has none (" + published_as(src) +
            "): rank it --by magnitude, or train a head on it first (tach train)");
  for (int64_t l = 0; l < src.config.num_layers; ++l)
    check(src.config.heads_in_layer(l) == src.config.num_heads,
          "--by importance: " + o.model +
              " already has pruned_heads (config.json), which tach's backward does not build; rank it --by magnitude");

  train::TrainRun r;
  r.note = [](const std::string&) {};  // what the binder left over: the head is the checkpoint's own
  r.o.model = o.model;
  r.o.tokenizer = o.tokenizer;
  r.o.data = o.data;
  r.o.task = task_of(head);
  r.o.max_samples = o.calibration_samples;
  r.o.max_length = o.max_length;
  r.o.seed = kMaskSeed;
  // Without a pad token, padded rows could not be told apart: one example at a time.
  r.o.batch_size = src.pad_token_id() >= 0 ? 8 : 1;
  r.task = head;
  r.src = std::move(src);

  CalibrationSet s;
  s.head = head;
  if (head == Head::sequence_classification) {
    // The first N labelled examples in file order (a JSON split file's "train" split, as tach train reads it).
    DatasetOptions d = o.data;
    if (d.split.empty()) d.split = "train";
    r.train_set = read_labelled(d);
    if (int64_t(r.train_set.examples.size()) > o.calibration_samples)
      r.train_set.examples.resize(size_t(o.calibration_samples));
    s.examples = int64_t(r.train_set.examples.size());
    s.split = r.train_set.split;
  } else {
    read_task_examples(r);
    s.examples = int64_t(r.tagged.size() + r.questions.size() + r.train_set.examples.size());
    s.split = r.o.data.split;
  }
  train::resolve_head(r);
  train::build_model(r);
  // -s is capped by the model's positions rather than refused; question answering's windows
  // overlap by --doc-stride, by default run_qa's 128 or half the window when that is less.
  r.o.max_length = std::min(r.o.max_length, r.model->max_tokens());
  r.o.doc_stride = o.doc_stride > 0 ? o.doc_stride : std::min<int64_t>(128, r.o.max_length / 2);
  train::fit_windows_to_model(r);
  train::prepare_data(r);
  usage_check(r.data.size() > 0, "--by importance: -d " + o.data.path + " gave no calibration rows");

  // Only activations' gradients are wanted: every weight frozen, so the backward computes none.
  for (train::Parameter& p : r.model->params.entries()) {
    p.trainable = false;
    p.grad = Tensor();
  }
  r.model->release_frozen_grads();
  s.model = std::move(r.model);
  s.data = std::move(r.data);
  s.problem_type = r.problem_type;
  s.max_length = r.o.max_length;
  s.doc_stride = head == Head::question_answering ? r.o.doc_stride : 0;
  return s;
}

}  // namespace tach::prune
