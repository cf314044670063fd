// What the per-token heads' training golden tests share (test_train_tasks, test_train_task_lora):
// a task model transformers saved (tests/fixtures/train_tasks/<case>/model), its four batches
// with the task's labels, and one forward and backward as tach train runs it.
#pragma once

#include <cmath>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tach/model.h"
#include "test_util.h"
#include "train/head_loss.h"
#include "train/training_model.h"
#include "train_fixtures.h"

namespace tach::test {

struct TaskCase {
  train::TrainingModelSource source;
  std::unique_ptr<train::TrainableModel> model;
  std::vector<TokenBatch> batches;
  std::vector<train::Targets> targets;
  nlohmann::json expected;  // DIR/expected.json
  std::string dir;
};

inline Head task_head(const std::string& task) {
  return task == "mlm"                    ? Head::masked_lm
         : task == "token-classification" ? Head::token_classification
                                          : Head::question_answering;
}

// batches.json: [{input_ids, attention_mask, token_type_ids, labels [B][T] | start_positions,
// end_positions [B]}, ...]; token types only for BERT (the others' models take none).
inline void load_task_batches(const std::string& path, bool types, std::vector<TokenBatch>* batches,
                              std::vector<train::Targets>* targets) {
  std::ifstream b(path);
  for (const auto& j : nlohmann::json::parse(b)) {
    TokenBatch batch;
    batch.input_ids = i32_matrix(j["input_ids"]);
    batch.attention_mask = i32_matrix(j["attention_mask"]);
    if (types) batch.token_type_ids = i32_matrix(j["token_type_ids"]);
    train::Targets t;
    if (j.contains("labels"))
      for (const auto& row : j["labels"])
        for (const auto& l : row) t.token_labels.push_back(l.get<int32_t>());
    if (j.contains("start_positions")) {
      for (const auto& p : j["start_positions"]) t.start_positions.push_back(p.get<int32_t>());
      for (const auto& p : j["end_positions"]) t.end_positions.push_back(p.get<int32_t>());
    }
    batches->push_back(batch);
    targets->push_back(t);
  }
}

// The model of tests/fixtures/train_tasks/<name> built with its task's head; `dir` is where
// expected.json is read (the case's own directory unless another golden set is named).
inline TaskCase load_task_case(const std::string& name, const std::string& dir = "") {
  TaskCase c;
  const std::string task_dir = fixtures_dir() + "/train_tasks/" + name;
  c.dir = dir.empty() ? task_dir : dir;
  std::ifstream e(c.dir + "/expected.json");
  c.expected = nlohmann::json::parse(e);
  c.source = train::open_training_model(task_dir + "/model", 0);
  const Head head = task_head(c.expected["task"].get<std::string>());
  EXPECT_TRUE(c.source.has_head(head)) << "the checkpoint was published with its head";
  c.model = train::build_trainable_model(c.source, c.source.id2label(), c.source.problem_type(), 0, nullptr, head);
  load_task_batches(task_dir + "/batches.json", c.source.model_type == "bert", &c.batches, &c.targets);
  return c;
}

// QA's qa_outputs.bias (ModernBERT's classifier.bias) gradient is zero in exact arithmetic (a
// softmax over a row's tokens has gradients that sum to zero, and the bias adds to every token):
// rounding noise in both engines.
inline bool zero_in_exact_arithmetic(const std::string& name, Head head) {
  return head == Head::question_answering && (name == "qa_outputs.bias" || name == "classifier.bias");
}

// One forward and backward (dropout off) as tach train runs it: the masked LM's head on the
// chosen tokens only. Gradients accumulate; returns the loss.
inline double task_forward_backward(TaskCase& c, train::ForwardState& state, size_t i) {
  const train::DropoutRates off;
  if (c.model->head() == Head::masked_lm) state.predicted_rows = train::labelled_rows(c.targets[i]);
  c.model->forward(state, c.batches[i], off);
  const TokenBatch& b = c.batches[i];
  const Tensor dlogits = Tensor::zeros(state.logits.shape(), DType::f32, c.model->device);
  const double loss = train::head_loss(
      c.model->head(), "", state.logits,
      train::loss_targets(c.targets[i], c.model->head(), b.seq_len(), c.model->device, &state.predicted_rows), dlogits,
      1.f);
  c.model->backward(state, b, dlogits.data<float>(), off);
  return loss;
}

}  // namespace tach::test
