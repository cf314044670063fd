// Extractive question answering as transformers' question-answering pipeline (4.57, the last with one) does it, apart from
// the model: the (question, context) pair cut into strided windows, then each window's start and
// end logits turned into answer spans (select_starts_ends, decode_spans), then the spans into
// character offsets and text of the context, aligned to whole words.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tach/question_answering.h"
#include "tach/tokenizer.h"

namespace tach::tasks {

using tach::Answer;
using tach::AnswerOptions;

// One window the model reads: the question, then part of the context.
struct AnswerWindow {
  Encoding encoding;  // offsets are bytes of the context (or of the question, for its tokens)
  // [T] 1 where an answer may start or end: the context's tokens and the CLS token (the pipeline's
  // 1 - p_mask); 0 for the question's tokens and the other special tokens.
  std::vector<uint8_t> candidate;
};

// The question and context tokenized as the pipeline does (a pair, truncation only_second to
// max_length with stride doc_stride, the overflowing windows after the first; no padding).
// cls_id: the tokenizer's CLS token, kept as a candidate wherever it appears (nullopt: none).
// Errors: an option out of range; a question that leaves the context no room in a window; a doc
// stride that leaves no new context in each window.
std::vector<AnswerWindow> answer_windows(const Tokenizer& tokenizer, const std::string& question,
                                         const std::string& context, const AnswerOptions& options,
                                         std::optional<int32_t> cls_id);

// A span of one window's tokens [start, end] (end included), and its probability.
struct TokenSpan {
  int64_t start = 0, end = 0;
  float score = 0;
};

// select_starts_ends + decode_spans over one window. start_logits, end_logits, candidate: [T].
// Softmax over the candidates' logits (the others at -10000), the null score (CLS's start times
// end probability, min'ed into min_null_score when handle_impossible_answer), then the top_k
// spans start <= end < start + max_answer_len by start times end probability, position 0
// excluded, both ends candidates.
std::vector<TokenSpan> best_spans(const float* start_logits, const float* end_logits,
                                  const std::vector<uint8_t>& candidate, int64_t top_k, int64_t max_answer_len,
                                  bool handle_impossible_answer, float& min_null_score);

// The pipeline's postprocess (transformers 4.57): every window's best 2 top_k + 10 spans widened
// to whole words, an answer whose text equals an earlier one's (ignoring case) adding its score to
// that one, the empty answer when handle_impossible_answer, sorted by score (stable), the top_k. start_logits, end_logits: one
// [T] row per window, T its tokens.
std::vector<Answer> answers_from_logits(const std::vector<AnswerWindow>& windows,
                                        const std::vector<std::vector<float>>& start_logits,
                                        const std::vector<std::vector<float>>& end_logits, const std::string& context,
                                        const AnswerOptions& options);

// Code points in utf8[0, byte): Python's index of the character at that byte.
int64_t char_index(const std::string& utf8, size_t byte);

}  // namespace tach::tasks
