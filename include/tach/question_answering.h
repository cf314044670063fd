// Extractive question answering (tach answer, tach eval on SQuAD data): the answer spans a model's
// question-answering head gives, as transformers' question-answering pipeline finds them, the
// SQuAD files, and the official SQuAD scores (exact match, F1).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tach/bench.h"
#include "tach/model.h"
#include "tach/tokenizer.h"

namespace tach {

struct AnswerOptions {
  int64_t top_k = 1;         // answers returned, best first (fewer when there are not as many)
  int64_t max_length = 384;  // tokens of a window: question, context and special tokens
  int64_t doc_stride = 128;  // context tokens consecutive windows share
  // doc_stride was not given but is the pipeline's default, half the window up to 128 (as
  // transformers keeps it even where it leaves no new context): errors name it as the default
  bool doc_stride_default = false;
  int64_t max_answer_len = 15;            // tokens of an answer at most
  bool handle_impossible_answer = false;  // the empty answer competes, scored by CLS's start and end
  // The model's positions, the longest window it takes (0: not known): where max_length is already
  // that, a question too long for the window cannot be helped by raising --max-length.
  int64_t model_positions = 0;
};

struct Answer {
  std::string text;                     // context[start, end)
  double score = 0;                     // the start probability times the end probability (softmax in each window)
  int64_t start = 0, end = 0;           // characters (Unicode code points) of the context, as Python counts
  size_t start_byte = 0, end_byte = 0;  // the same span in bytes
};

struct Question {
  std::string question;
  std::string context;
};

// The answers to each question (best first, at most options.top_k), as transformers'
// question-answering pipeline gives them: the question and context in windows of max_length
// tokens sharing doc_stride context tokens, each window's start and end logits from the model's
// question-answering head (Model::token_logits), spans widened to whole words. Windows of several
// questions share batches of up to `batch_windows` rows. Errors: a model without a
// question-answering head, a window longer than the model's positions, a question that leaves the
// context no room in a window, options out of range.
std::vector<std::vector<Answer>> answer_questions(const Model& model, const Tokenizer& tokenizer,
                                                  const std::vector<Question>& questions, const AnswerOptions& options,
                                                  size_t batch_windows = 8);

// SQuAD data: the official files (v1.1: data[].paragraphs[].{context, qas[].{id, question,
// answers[].{text, answer_start}}}; v2.0 adds is_impossible and plausible_answers) and the flat
// layout of Hugging Face datasets (id, title, context, question, answers{text[], answer_start[]})
// as a JSON list (or {"data": [...]}), JSONL or Parquet (the Hub's files, answers a struct of lists).
struct SquadQuestion {
  std::string id;
  std::string title;
  std::string context;
  std::string question;
  std::vector<std::string> answers;    // gold texts; empty for a question without an answer (v2)
  std::vector<int64_t> answer_starts;  // characters (code points) into the context, one per answer
  std::string where;  // "data[0].paragraphs[2].qas[1]", "record 7", "line 7", "row 7" (Parquet): for messages
};

struct SquadData {
  std::vector<SquadQuestion> questions;
  // v2.0: the file says so (version "v2.0", is_impossible fields) or, in the flat layout, a
  // question has no answer. v1.1 data must give every question an answer found in its context.
  bool v2 = false;
  std::string layout;  // "SQuAD v1.1 JSON", "SQuAD v2.0 JSON", "flat JSON", "flat JSONL", "flat Parquet"
};

// Errors name the file and the record: not JSON, a missing or mistyped field, answers and
// answer_start of different lengths, and in v1.1 data a question without an answer or an answer
// whose text is not at its answer_start in the context.
SquadData read_squad(const std::string& path);

// The official scores: v1.1 scores every question against its answers; v2.0 adds questions
// without an answer (the empty prediction is right for those) and drops gold answers that
// normalise to nothing.
enum class SquadVersion { v1, v2 };

// Totals in percent, as the official scripts report them. The HasAns/NoAns split is v2's:
// questions with and without gold answers.
struct SquadScores {
  int64_t total = 0;
  double exact = 0, f1 = 0;
  int64_t has_answer_total = 0, no_answer_total = 0;
  double has_answer_exact = 0, has_answer_f1 = 0, no_answer_exact = 0, no_answer_f1 = 0;
};

// gold[i] and predictions[i] belong to the same question.
SquadScores squad_scores(const std::vector<std::vector<std::string>>& gold, const std::vector<std::string>& predictions,
                         SquadVersion version);

// ---- tach eval on a question-answering model: the official SQuAD scores ----

// One pass of the model (a device and dtype) over the questions.
struct QaEvalPass {
  std::string device, dtype;
  int64_t questions = 0;
  SquadScores scores;  // percentages (0-100), as the official scripts give them
  double total_s = 0, questions_per_s = 0;
  PointResult::Load load;  // other processes' CPU use over the timed questions (contended: the rate is theirs too)
};

struct QaEvalOutcome {
  std::string run_dir, dataset, layout, model, architecture;
  bool v2 = false;  // scored by SQuAD v2.0's rules (questions without an answer)
  AnswerOptions options;
  std::vector<std::string> notes;
  std::vector<QaEvalPass> passes;
};

// Whether tach eval runs the question-answering pass for this config: --head question-answering,
// or (--head auto) a checkpoint published as *ForQuestionAnswering. Reads config.json only.
bool evaluates_question_answering(const BenchConfig& config);

// tach bench's length for a question-answering model when none is given: MLPerf's BERT shape, 384
// tokens, or the model's positions when it has fewer; 0 for another model. Reads config.json only.
int64_t question_answering_bench_length(const BenchConfig& config);

// tach eval on a question-answering model: reads the SQuAD file (config.dataset.path), answers
// each question as tach answer does (options; handle_impossible_answer is set for v2.0 data) and
// scores the best answers with the official script's rules; one pass per device and dtype.
// Writes RUN_DIR/config.json, question_answering.json, predictions.json (the official scripts'
// input: id -> answer text, of the first pass) and summary.txt.
QaEvalOutcome run_qa_eval(const BenchConfig& config, AnswerOptions options);
std::string qa_eval_text(const QaEvalOutcome& outcome);
std::string qa_eval_json(const QaEvalOutcome& outcome);  // schema tach.eval.question_answering/1

}  // namespace tach
