#include "prune/calibration.h"

#include <algorithm>

#include "tach/error.h"
#include "tach/tokenizer.h"
#include "train/train_run.h"
#include "train/trainable_decoder.h"

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

// What goes wrong reading -d (and tokenizing it as the head reads it) is the data's: a
// CalibrationDataError, with the reader's message. A usage error (an option's value) stays one.
template <class Read>
auto reading_data(Read read) -> decltype(read()) {
  try {
    return read();
  } catch (const UsageError&) { throw; } catch (const CalibrationDataError&) {
    throw;
  } catch (const Error& e) { throw CalibrationDataError(e.what()); }
}

// The sequence classifier's examples with their labels. A file without the label column names the
// columns there are; any other problem is the reader's own error.
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
    throw CalibrationDataError("--by importance needs labelled calibration data: " + d.path + " has no label column '" +
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
    throw CalibrationDataError(context + e.what());
  }
  const size_t read = r.task == Head::token_classification ? r.tagged.size()
                      : r.task == Head::question_answering ? r.questions.size()
                                                           : r.train_set.examples.size();
  if (read == 0) throw CalibrationDataError(context + "it holds no examples");
}

// Whether config.json publishes a causal LM (…ForCausalLM): its loss is the next token's.
bool is_causal_lm(const train::TrainingModelSource& s) {
  const nlohmann::json& a = s.config_json.contains("architectures") ? s.config_json["architectures"] : nlohmann::json();
  if (!s.is_decoder() || !a.is_array() || a.empty() || !a[0].is_string()) return false;
  const std::string arch = a[0].get<std::string>(), tail = "ForCausalLM";
  return arch.size() > tail.size() && arch.compare(arch.size() - tail.size(), tail.size(), tail) == 0;
}

// A causal LM's next-token loss, L = mean over t of CE(logits[t], id[t + 1]), is a token
// classifier's over the vocabulary: the final norm's output times the LM head on every token
// (no bias), with each token labelled by the next one (the last by none). The trainable decoder's
// token classifier computes exactly that once its score is the LM head (lm_head.weight, or the
// embeddings where tied) and its bias zero; the training backward then gives the gates' gradients.
CalibrationSet causal_lm_set(const PruneOptions& o, train::TrainingModelSource src) {
  const std::string& embed = src.family->decoder->names.embed;
  std::string head_name;
  for (const std::string& n :
       {std::string("lm_head.weight"), src.family->body_prefix + embed + ".weight", embed + ".weight"})
    if (head_name.empty() && src.store && src.store->find(n)) head_name = n;
  check(!head_name.empty(), o.model + ": a causal LM without lm_head.weight or " + embed + ".weight");
  const Tensor lm_head = src.store->find(head_name)->load().to(DType::f32, MemoryCategory::weights).contiguous();
  const int64_t V = lm_head.size(0);

  DatasetOptions d = o.data;
  d.label_column.clear(), d.text_pair_column.clear();
  if (d.split.empty()) d.split = "train";
  Dataset texts = reading_data([&] { return read_dataset(d); });
  if (int64_t(texts.examples.size()) > o.calibration_samples) texts.examples.resize(size_t(o.calibration_samples));
  if (texts.examples.empty()) throw CalibrationDataError("--by importance: -d " + o.data.path + " holds no texts");

  CalibrationSet s;
  s.head = Head::token_classification;
  s.head_label = "causal-lm";
  s.examples = int64_t(texts.examples.size());
  s.split = texts.split;
  std::vector<std::string> vocabulary(static_cast<size_t>(V));
  for (int64_t i = 0; i < V; ++i) vocabulary[size_t(i)] = std::to_string(i);
  std::vector<std::string> notes;  // the score "initialised": it is the LM head, set below
  try {
    s.model = train::build_trainable_model(src, vocabulary, "", 0, &notes, Head::token_classification, Device::cpu());
  } catch (const Error& e) {
    throw Error(
        "--by importance scores a causal LM through its family's token classifier, which tach does not "
        "train for " +
        std::string(src.family->name) + " (" + e.what() + "): rank it --by magnitude");
  }
  auto& decoder = dynamic_cast<train::TrainableDecoder&>(*s.model);
  check(decoder.score && decoder.score->value.numel() == lm_head.numel(),
        o.model + ": the LM head " + head_name + " does not fit the token classifier's score");
  std::copy_n(lm_head.data<float>(), lm_head.numel(), decoder.score->value.data<float>());
  if (decoder.score_bias) std::fill_n(decoder.score_bias->value.data<float>(), decoder.score_bias->value.numel(), 0.f);

  const std::string tokenizer_path = o.tokenizer.empty() ? src.location.dir : o.tokenizer;
  check(!tokenizer_path.empty(), missing_tokenizer_message(o.model, src.family->tokenizer_hint));
  const std::unique_ptr<Tokenizer> tokenizer = Tokenizer::load(tokenizer_path);
  train::check_tokenizer_fits(*tokenizer, o.tokenizer, o.model, src.vocab_size());
  s.max_length = std::min(o.max_length, s.model->max_tokens());
  Truncation cut;
  cut.max_length = size_t(s.max_length);
  train::TrainData& data = s.data;
  data.head = Head::token_classification;
  data.num_labels = V;
  data.max_length = s.max_length;
  data.pad_id = int32_t(std::max<int64_t>(0, src.pad_token_id()));
  for (const auto& e : texts.examples) {
    std::vector<int32_t> ids = tokenizer->encode(e.text, EncodeOptions{true, cut, std::nullopt}).ids;
    if (ids.empty()) continue;
    std::vector<int32_t> next(ids.size(), -100);  // the last token predicts nothing
    for (size_t t = 0; t + 1 < ids.size(); ++t) next[t] = ids[t + 1];
    data.ids.push_back(std::move(ids));
    data.token_labels.push_back(std::move(next));
  }
  for (train::Parameter& p : s.model->params.entries()) {
    p.trainable = false;
    p.grad = Tensor();
  }
  s.model->release_frozen_grads();
  return s;
}

}  // namespace

CalibrationSet calibration_set(const PruneOptions& o, train::TrainingModelSource src) {
  if (src.checkpoint_head == Head::none && is_causal_lm(src)) return causal_lm_set(o, std::move(src));
  const Head head = src.checkpoint_head;
  check(head == Head::sequence_classification || head == Head::token_classification ||
            head == Head::question_answering || head == Head::masked_lm,
        "--by importance ranks units by the loss of the model's own head (a sequence or token classifier, question "
        "answering, a masked LM, a causal LM); " +
            o.model + " has none (" + published_as(src) +
            "): rank it --by magnitude, or train a head on it first (tach train)");

  train::TrainRun r;
  r.note = [](const std::string&) {};  // what the binder left over: the head is the checkpoint's own
  r.o.model = o.model;
  r.o.tokenizer = o.tokenizer;
  r.o.data = o.data;
  r.o.task = task_of(head);
  r.task_flag.clear();  // tach prune has no --task: the head is the model's own
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
    r.train_set = reading_data([&] { return read_labelled(d); });
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
  reading_data([&] { train::prepare_data(r); });
  if (r.data.size() == 0)
    throw CalibrationDataError("--by importance: -d " + o.data.path + " gave no calibration rows");

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
