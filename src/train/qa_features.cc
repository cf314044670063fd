#include "train/qa_features.h"

#include "tach/error.h"
#include "tasks/answer_question.h"
#include "tasks/answer_spans.h"

namespace tach::train {

namespace {

// The byte where code point `chars` of UTF-8 text starts (its size at or past the end).
size_t byte_of_char(const std::string& text, int64_t chars) {
  size_t i = 0;
  for (int64_t c = 0; c < chars && i < text.size(); ++c) {
    ++i;
    while (i < text.size() && (static_cast<unsigned char>(text[i]) & 0xC0) == 0x80) ++i;
  }
  return i;
}

int64_t chars_of(const std::string& text) {
  int64_t n = 0;
  for (const char ch : text) n += (static_cast<unsigned char>(ch) & 0xC0) != 0x80;
  return n;
}

}  // namespace

std::pair<size_t, size_t> answer_bytes(const std::string& context, int64_t answer_start, const std::string& text) {
  return {byte_of_char(context, answer_start), byte_of_char(context, answer_start + chars_of(text))};
}

AnswerPositions answer_positions(const Encoding& w, int32_t cls_index,
                                 const std::optional<std::pair<size_t, size_t>>& answer) {
  if (!answer) return {cls_index, cls_index};
  const auto [start_char, end_char] = *answer;
  const int64_t n = int64_t(w.size());
  // The window's context tokens: from the first to the last of sequence 1.
  int64_t first = 0, last = n - 1;
  while (first < n && w.sequence_ids[size_t(first)] != 1) ++first;
  while (last >= 0 && w.sequence_ids[size_t(last)] != 1) --last;
  if (first >= n || !(w.offsets[size_t(first)].first <= start_char && w.offsets[size_t(last)].second >= end_char))
    return {cls_index, cls_index};
  // run_qa's walks, as written: past the last token starting at or before the answer's start,
  // and before the first token ending at or after its end, from either end.
  while (first < n && w.offsets[size_t(first)].first <= start_char) ++first;
  while (w.offsets[size_t(last)].second >= end_char) --last;
  return {int32_t(first - 1), int32_t(last + 1)};
}

TrainData prepare_qa_data(const std::vector<data::SquadQuestion>& questions, const Tokenizer& tokenizer,
                          int64_t max_length, int64_t doc_stride, bool pad_to_max_length, int32_t pad_id,
                          bool with_types) {
  check(!questions.empty(), "no questions to train on");
  TrainData d;
  d.head = Head::question_answering;
  d.max_length = max_length;
  d.pad_to_max_length = pad_to_max_length;
  d.pad_id = pad_id;
  d.with_types = with_types;
  tasks::AnswerOptions o;
  o.max_length = max_length;
  o.doc_stride = doc_stride;
  const std::optional<int32_t> cls = tasks::cls_token_id(tokenizer);
  for (const data::SquadQuestion& q : questions) {
    // run_qa strips the question's leading whitespace (it would take room from the context).
    const std::string question =
        q.question.substr(std::min(q.question.size(), q.question.find_first_not_of(" \t\n\r")));
    std::vector<tasks::AnswerWindow> windows;
    try {
      windows = tasks::answer_windows(tokenizer, question, q.context, o, cls);
    } catch (const Error& e) { throw Error(q.where + ": " + e.what()); }
    std::optional<std::pair<size_t, size_t>> answer;
    if (!q.answers.empty()) answer = answer_bytes(q.context, q.answer_starts[0], q.answers[0]);
    for (const tasks::AnswerWindow& window : windows) {
      const Encoding& e = window.encoding;
      int32_t cls_index = 0;
      for (size_t i = 0; i < e.size(); ++i)
        if (cls && e.ids[i] == *cls) {
          cls_index = int32_t(i);
          break;
        }
      const AnswerPositions p = answer_positions(e, cls_index, answer);
      d.ids.push_back(e.ids);
      d.types.push_back(with_types ? e.type_ids : std::vector<int32_t>{});
      d.start_positions.push_back(p.start);
      d.end_positions.push_back(p.end);
    }
  }
  return d;
}

}  // namespace tach::train
