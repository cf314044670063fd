#include "tasks/answer_question.h"

#include <algorithm>

#include "tach/error.h"

namespace tach::tasks {

std::optional<int32_t> cls_token_id(const Tokenizer& tokenizer) {
  // The special token the post-processor puts first ([CLS], <s>): a vocabulary can hold both
  // names (MPNet's has [CLS] and uses <s>).
  const Encoding e = tokenizer.encode("", true);
  if (e.size() > 0 && e.special_tokens_mask[0] == 1) return e.ids[0];
  for (const char* name : {"[CLS]", "<s>", "<cls>"})
    if (auto id = tokenizer.token_to_id(name)) return id;
  return std::nullopt;
}

}  // namespace tach::tasks

namespace tach {

std::vector<std::vector<Answer>> answer_questions(const Model& model, const Tokenizer& tokenizer,
                                                  const std::vector<Question>& questions, const AnswerOptions& options,
                                                  size_t batch_windows) {
  return answer_questions(
      model.info(), [&model](const TokenBatch& batch) { return model.token_logits(batch); }, tokenizer, questions,
      options, batch_windows);
}

std::vector<std::vector<Answer>> answer_questions(const ModelInfo& info,
                                                  const std::function<Tensor(const TokenBatch&)>& token_logits,
                                                  const Tokenizer& tokenizer, const std::vector<Question>& questions,
                                                  const AnswerOptions& options, size_t batch_windows) {
  using namespace tasks;
  if (info.head != Head::question_answering)
    throw Error(
        info.spec + " (" + info.architecture + ") has " +
        (info.head == Head::none ? std::string("no head") : "a " + std::string(head_name(info.head)) + " head") +
        ": answering questions needs a question-answering head (a *ForQuestionAnswering checkpoint, or "
        "--head question-answering for a new, untrained one)");
  if (info.max_positions > 0)
    usage_check(options.max_length <= info.max_positions,
                "--max-length " + std::to_string(options.max_length) + " is longer than the " +
                    std::to_string(info.max_positions) + " positions " + info.spec + " holds");
  AnswerOptions windowed = options;
  windowed.model_positions = info.max_positions;
  const std::optional<int32_t> cls = cls_token_id(tokenizer);
  batch_windows = std::max<size_t>(batch_windows, 1);

  // Every question's windows in one list, then the model over batches of them.
  std::vector<std::vector<AnswerWindow>> windows;
  struct Row {
    size_t question, window;
  };
  std::vector<Row> rows;
  for (size_t q = 0; q < questions.size(); ++q) {
    windows.push_back(answer_windows(tokenizer, questions[q].question, questions[q].context, windowed, cls));
    for (size_t w = 0; w < windows.back().size(); ++w) rows.push_back({q, w});
  }
  std::vector<std::vector<std::vector<float>>> starts(questions.size()), ends(questions.size());
  for (size_t q = 0; q < questions.size(); ++q) {
    starts[q].resize(windows[q].size());
    ends[q].resize(windows[q].size());
  }
  for (size_t first = 0; first < rows.size(); first += batch_windows) {
    const size_t last = std::min(rows.size(), first + batch_windows);
    std::vector<std::vector<int32_t>> ids, types;
    for (size_t r = first; r < last; ++r) {
      const Encoding& e = windows[rows[r].question][rows[r].window].encoding;
      ids.push_back(e.ids);
      types.push_back(e.type_ids);
    }
    // Type ids only for a model with several types (BERT's 2), as transformers' tokenizers give
    // them: RoBERTa's one type reads zeros, whatever a tokenizer's template says for the context.
    const TokenBatch batch =
        TokenBatch::from_rows(ids, info.pad_token_id, info.type_vocab_size > 1 ? types : decltype(types){});
    // logits: [B, T, 2] (start, end)
    const Tensor logits = token_logits(batch);
    const int64_t T = batch.seq_len();
    check(logits.shape().size() == 3 && logits.size(0) == batch.batch() && logits.size(1) == T && logits.size(2) == 2,
          "the question-answering head gave logits of shape " + shape_str(logits.shape()) + ", not [" +
              std::to_string(batch.batch()) + ", " + std::to_string(T) + ", 2]");
    const float* l = logits.data<float>();
    for (size_t r = first; r < last; ++r) {
      const Row& row = rows[r];
      const size_t n = windows[row.question][row.window].encoding.size();
      const float* base = l + int64_t(r - first) * T * 2;
      auto& s = starts[row.question][row.window];
      auto& e = ends[row.question][row.window];
      s.resize(n);
      e.resize(n);
      for (size_t t = 0; t < n; ++t) {
        s[t] = base[t * 2];
        e[t] = base[t * 2 + 1];
      }
    }
  }
  std::vector<std::vector<Answer>> answers;
  for (size_t q = 0; q < questions.size(); ++q)
    answers.push_back(answers_from_logits(windows[q], starts[q], ends[q], questions[q].context, options));
  return answers;
}

}  // namespace tach
