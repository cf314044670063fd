#include "train/distill.h"

#include <cmath>
#include <cstring>
#include <filesystem>

#include "model/checkpoint.h"
#include "model/family.h"
#include "ops/kl_distill.h"
#include "tach/error.h"
#include "tach/plain_number.h"
#include "tach/tokenizer.h"

namespace tach::train {

namespace {

// transformers' names for labels nobody named: LABEL_0, LABEL_1, ...
bool default_names(const std::vector<std::string>& labels) {
  for (size_t i = 0; i < labels.size(); ++i)
    if (labels[i] != "LABEL_" + std::to_string(i)) return false;
  return true;
}

std::string listed(const std::vector<std::string>& labels) {
  std::string s;
  for (size_t i = 0; i < labels.size() && i < 8; ++i) s += (i ? ", " : "") + labels[i];
  if (labels.size() > 8) s += ", ... (" + std::to_string(labels.size()) + ")";
  return s;
}

// The same labels in the same order; unnamed labels (LABEL_i) on either side match by count.
void check_labels(const std::string& spec, const ModelInfo& t, const StudentShape& s) {
  const std::string their = spec + "'s labels (" + listed(t.labels) + ")";
  const std::string ours = s.model + "'s (" + listed(s.labels) + ")";
  usage_check(t.labels.size() == s.labels.size(), "--distill-from " + their + " are not " + ours +
                                                      ": a teacher teaches over the student's labels, the same "
                                                      "number in the same order");
  usage_check(t.labels == s.labels || default_names(t.labels) || default_names(s.labels),
              "--distill-from " + their + " are not " + ours + ": the same labels in the same order are needed");
}

// The architecture the checkpoint was published as ("BertForQuestionAnswering"), not the one built
// for the student's head: what the teacher was trained to do.
std::string published_architecture(const ModelInfo& t) {
  try {
    return model::architecture_for_head(model::model_family(t.model_type), t.checkpoint_head);
  } catch (const Error&) { return t.model_type + " with a " + head_name(t.checkpoint_head) + " head"; }
}

// Whether a model directory ships a tokenizer (one of the files Tokenizer::load reads).
bool has_tokenizer(const std::filesystem::path& dir) {
  for (const char* file : {"tokenizer.json", "vocab.txt", "vocab.json"})
    if (std::filesystem::is_regular_file(dir / file)) return true;
  return false;
}

// The teacher reads the student's token ids, so each id must be the same token on both sides: two
// tokenizers of one size but other vocabularies (another model's WordPiece, a retrained BPE) would
// pass a size check and teach with the wrong tokens. A teacher without a tokenizer of its own
// (a preset, a bare checkpoint) has only its embeddings' size to compare.
void check_vocabularies(const std::string& spec, const StudentShape& s) {
  // A student directory without tokenizer files (its ids given with -k elsewhere) has none to compare.
  if (s.tokenizer.empty() || (std::filesystem::is_directory(s.tokenizer) && !has_tokenizer(s.tokenizer))) return;
  const model::ModelLocation loc = model::resolve_model(spec);
  if (loc.dir.empty() || !has_tokenizer(loc.dir)) return;
  const std::unique_ptr<Tokenizer> ours = Tokenizer::load(s.tokenizer), theirs = Tokenizer::load(loc.dir);
  const std::string sides =
      "--distill-from " + spec + "'s tokenizer (" + loc.dir + ") and " + s.model + "'s (" + s.tokenizer + ")";
  const std::string why =
      ": the teacher reads the student's token ids, so both need the same vocabulary (a teacher "
      "trained with the student's tokenizer)";
  usage_check(ours->vocab_size() == theirs->vocab_size(), sides + " have " + std::to_string(theirs->vocab_size()) +
                                                              " and " + std::to_string(ours->vocab_size()) + " tokens" +
                                                              why);
  int64_t differ = 0, first = -1;
  for (int32_t id = 0; id < int32_t(ours->vocab_size()); ++id)
    if (ours->id_to_token(id) != theirs->id_to_token(id)) {
      if (first < 0) first = id;
      ++differ;
    }
  if (differ == 0) return;
  const auto token = [](const Tokenizer& t, int32_t id) {
    const std::optional<std::string> s = t.id_to_token(id);
    return s ? "'" + *s + "'" : std::string("no token");
  };
  throw UsageError(sides + " have the same size, " + std::to_string(ours->vocab_size()) + " tokens, but " +
                   std::to_string(differ) + " of the ids name other tokens (id " + std::to_string(first) + " is " +
                   token(*theirs, int32_t(first)) + " in the teacher's, " + token(*ours, int32_t(first)) +
                   " in the student's)" + why);
}

}  // namespace

void validate_distill_settings(double temperature, double alpha) {
  usage_check(std::isfinite(temperature) && temperature > 0,
              "--distill-temperature " + plain_number(temperature) +
                  ": the temperature must be a positive number (1 leaves the teacher's distribution as it is; 2 "
                  "to 4 soften it)");
  usage_check(std::isfinite(alpha) && alpha >= 0 && alpha <= 1,
              "--distill-alpha " + plain_number(alpha) +
                  ": the teacher's weight must be in [0, 1] (1: the teacher alone, 0: the task loss alone)");
}

DistillTeacher::DistillTeacher(const std::string& spec, const std::string& dtype, double temperature, double alpha,
                               const StudentShape& student, Device device)
    : head_(student.head), device_(device), temperature_(float(temperature)), alpha_(float(alpha)) {
  validate_distill_settings(temperature, alpha);
  usage_check(student.head != Head::sequence_classification || student.problem_type.empty() ||
                  student.problem_type == "single_label_classification",
              "--distill-from: " + student.model + " is a " + student.problem_type +
                  " head; distillation softens a distribution over labels, which only a single-label classifier "
                  "has");
  check_vocabularies(spec, student);  // before the teacher's weights are read
  LoadOptions lo;
  lo.device = device;
  lo.compute = parse_compute_dtype(dtype);
  lo.head = student.head;
  model_ = load_model(spec, lo);
  const ModelInfo& t = model_->info();
  usage_check(t.checkpoint_head == student.head,
              "--distill-from " + spec + " (" + published_architecture(t) + ") has no trained " +
                  head_name(student.head) +
                  " head: a teacher teaches with the head it was trained with, and a new one would know nothing");
  usage_check(t.vocab_size == student.vocab_size,
              "--distill-from " + spec + " has a vocabulary of " + std::to_string(t.vocab_size) + " tokens and " +
                  student.model + " one of " + std::to_string(student.vocab_size) +
                  ": the teacher reads the student's token ids, so both need the same tokenizer");
  if (student.head == Head::sequence_classification) {
    usage_check(t.problem_type.empty() || t.problem_type == "single_label_classification",
                "--distill-from " + spec + " is a " + t.problem_type +
                    " head; distillation needs a single-label classifier's distribution over its labels");
    check_labels(spec, t, student);
  } else if (student.head == Head::token_classification) {
    check_labels(spec, t, student);
  }
}

Tensor DistillTeacher::logits(const TokenBatch& batch, const std::vector<int32_t>& predicted_rows) const {
  if (head_ == Head::sequence_classification) return model_->classify(batch).on(device_);
  const Tensor all = model_->token_logits(batch);  // [B, T, outputs] on the host
  const int64_t rows = batch.batch() * batch.seq_len(), outputs = all.size(2);
  const Tensor flat = all.contiguous().reshape({rows, outputs});
  if (head_ != Head::masked_lm || predicted_rows.empty()) return flat.on(device_);
  // The student's masked-LM head ran on the chosen tokens alone: the teacher's rows there.
  Tensor picked =
      Tensor::empty({int64_t(predicted_rows.size()), outputs}, DType::f32, Device::cpu(), MemoryCategory::activations);
  const float* src = flat.data<float>();
  float* dst = picked.data<float>();
  for (size_t i = 0; i < predicted_rows.size(); ++i)
    std::memcpy(dst + int64_t(i) * outputs, src + int64_t(predicted_rows[i]) * outputs,
                size_t(outputs) * sizeof(float));
  return picked.on(device_);
}

QueuedLoss DistillTeacher::queue_loss(const Tensor& student, const Tensor& teacher, const LossTargets& t,
                                      const Tensor& dstudent, float scale) const {
  const int64_t R = student.size(0), C = student.size(1);
  ops::SoftmaxGroups g{R, C, 1};
  Tensor labels;  // the groups that count: every one but a token classifier's (and masked LM's) -100s
  if (head_ == Head::token_classification || head_ == Head::masked_lm) labels = t.token_labels;
  if (head_ == Head::question_answering) {
    // [B * T, 2]: the start logits over each row's T tokens, and the end logits.
    const int64_t B = t.start_positions.defined() ? t.start_positions.numel() : 0;
    check(B > 0 && R % B == 0, "distillation: question answering's " + std::to_string(R) + " tokens are not rows of " +
                                   std::to_string(B) + " questions");
    g = ops::SoftmaxGroups{B, R / B, 2};
  }
  QueuedLoss loss;
  if (student.device().kind == DeviceKind::cpu) {
    loss.value = ops::kl_distill_forward(student, teacher, labels, g, temperature_);
  } else {
    loss.slots = Tensor::empty({1}, DType::f64, student.device(), MemoryCategory::workspace);
    ops::kl_distill_forward(loss.slots, student, teacher, labels, g, temperature_);
  }
  if (dstudent.defined()) ops::kl_distill_backward(dstudent, student, teacher, labels, g, temperature_, alpha_ * scale);
  return loss;
}

}  // namespace tach::train
