// The passes of a per-token head (token classification, extractive question answering) that tach
// eval and tach bench --accuracy share, for tach's model and every other engine alike: the data
// read once, then passes whose forward is a function (tach's model, or another engine's worker fed
// the same token ids), so that every engine's logits become predictions and scores through the one
// implementation of the alignment, the answer spans and the metrics.
#pragma once

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "data/conll.h"
#include "tach/question_answering.h"
#include "tach/token_classification.h"
#include "tasks/seqeval.h"
#include "tasks/split_words.h"

namespace tach::bench {

// A pass's forward: a batch of token ids in, the head's f32 logits out on the host: [B, T, labels]
// for a token classifier, [B, T, 2] (start, end) for a question-answering head.
using TokenLogitsForward = std::function<Tensor(const TokenBatch&)>;

// ---- token classification ----

struct TaggedEvalData {
  std::string dataset;                          // the file, for messages and the outcome
  std::vector<data::TaggedSentence> sentences;  // the first --sample-sizes / --limit of the file
  tasks::TagScheme scheme = tasks::TagScheme::conlleval;
  int64_t max_length = 0;  // sub-tokens per sentence, special tokens included: -s or the model's positions
  std::unique_ptr<Tokenizer> tokenizer;
  std::unique_ptr<tasks::WordSplitter> splitter;  // words to sub-tokens as is_split_into_words=True splits them
};

// config.dataset's tagged sentences read for a model whose labels are `info`'s, as tach eval reads
// them: the sample, a note naming tags the model never predicts, a strict scheme checked on the
// data and the labels, the tokenizer. Notes for the user are appended to `notes`.
TaggedEvalData read_tagged_eval_data(const BenchConfig& config, const TokenEvalOptions& options, const ModelInfo& info,
                                     std::vector<std::string>& notes);

// One pass of `forward` over the sentences (batches of similar lengths, each word labelled by its
// first sub-token's argmax, seqeval's scores). warm_up: one untimed forward of the first batch
// first. predicted (optional): each sentence's tags, for the words that have a prediction.
TokenEvalPass token_eval_pass(const TaggedEvalData& data, const ModelInfo& info, int64_t batch_size,
                              const TokenLogitsForward& forward, bool warm_up,
                              std::vector<tasks::TagSequence>* predicted = nullptr);

// What a pass's words past the maximum length mean for its scores (words_cut of them).
std::string words_cut_note(int64_t words_cut);

// ---- extractive question answering ----

struct SquadEvalData {
  SquadData squad;  // the questions of the sample
  std::vector<Question> questions;
  std::vector<std::vector<std::string>> gold;  // each question's answers
  AnswerOptions options;                       // as the passes answer: v2.0's empty answer, windows the model holds
  std::unique_ptr<Tokenizer> tokenizer;
};

// config.dataset's SQuAD questions for a model described by `info`, as tach eval reads them.
SquadEvalData read_squad_eval_data(const BenchConfig& config, AnswerOptions options, const ModelInfo& info,
                                   std::vector<std::string>& notes);

// One pass of `forward` over the questions (windows of batch_size rows, the pipeline's best span of
// each question, the official scores). warm_up: one untimed question first. best (optional): each
// question's best answer ("" for none).
QaEvalPass qa_eval_pass(const SquadEvalData& data, const ModelInfo& info, int64_t batch_size,
                        const TokenLogitsForward& forward, bool warm_up, std::vector<std::string>* best = nullptr);

// ---- tach bench --accuracy on a per-token head ----

// What the accuracy pass scores for this config: "" (a sequence classifier's labels),
// "token-classification" or "question-answering"; from --head or config.json's architecture.
std::string accuracy_task(const BenchConfig& config);

// A per-token head's accuracy data, read once for tach's passes and every other engine's, with tach
// eval's default options (conlleval tags, the model's positions; SQuAD windows of 384 tokens or the
// positions, half of them shared up to 128).
struct TaskAccuracyData {
  std::string task;  // accuracy_task's
  std::vector<std::string> notes;
  TaggedEvalData tagged;  // token classification
  SquadEvalData squad;    // question answering
};
TaskAccuracyData read_task_accuracy_data(const BenchConfig& config, const ModelInfo& info);

// read_task_accuracy_data with the first device and dtype's model: what cannot be read is an error
// before a run directory is made.
void check_task_accuracy_inputs(const BenchConfig& config);

// One pass of `forward` as an AccuracyResult (task, scores, every prediction: each word's tag,
// sentence after sentence, or each question's answer) and as tach eval records it.
struct TaskPass {
  AccuracyResult result;
  TokenEvalPass token;
  QaEvalPass qa;
};
TaskPass task_accuracy_pass(const TaskAccuracyData& data, const ModelInfo& info, const BenchConfig& config,
                            const TokenLogitsForward& forward, bool warm_up);

// A pass's "metrics" object (accuracy.json, its engines) read back in accuracy_metric_names'
// order, a null as NaN; errors name `where`.
std::vector<std::pair<std::string, double>> metrics_from_json(const nlohmann::json& metrics, const std::string& task,
                                                              const std::string& where);

// tach eval's file of tach's passes (token_classification.json or question_answering.json, whose
// name is set in *name), so that tach report and tach compare read a bench run's as an eval's.
std::string task_eval_file(const TaskAccuracyData& data, const ModelInfo& info, const BenchConfig& config,
                           const std::vector<TaskPass>& passes, std::string* name);

}  // namespace tach::bench
