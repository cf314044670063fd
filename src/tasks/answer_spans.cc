#include "tasks/answer_spans.h"

#include <algorithm>
#include <cmath>

#include "tach/error.h"

namespace tach::tasks {

namespace {

// The pipeline's softmax over one window: candidates' logits, the others at -10000 (exp gives 0
// for them in f32), in f32 as numpy computes it on the model's f32 outputs.
std::vector<float> masked_softmax(const float* logits, const std::vector<uint8_t>& candidate) {
  const size_t n = candidate.size();
  std::vector<float> p(n);
  float max = -INFINITY;
  for (size_t i = 0; i < n; ++i) {
    p[i] = candidate[i] ? logits[i] : -10000.0f;
    max = std::max(max, p[i]);
  }
  double sum = 0;
  for (size_t i = 0; i < n; ++i) {
    p[i] = std::exp(p[i] - max);
    sum += p[i];
  }
  for (auto& v : p) v = float(v / sum);
  return p;
}

// The characters [start, end) of the word a token belongs to, as tokenizers' word_to_chars: from
// the first to the last token of that word in the context (sequence 1) of this window.
std::optional<std::pair<size_t, size_t>> word_bytes(const Encoding& e, int32_t word) {
  std::optional<size_t> first, last;
  for (size_t i = 0; i < e.size(); ++i) {
    if (e.sequence_ids[i] != 1 || e.word_ids[i] != word) continue;
    if (!first) first = i;
    last = i;
  }
  if (!first) return std::nullopt;
  return std::pair<size_t, size_t>{e.offsets[*first].first, e.offsets[*last].second};
}

}  // namespace

int64_t char_index(const std::string& utf8, size_t byte) {
  int64_t n = 0;
  for (size_t i = 0; i < byte && i < utf8.size(); ++i)
    if ((static_cast<unsigned char>(utf8[i]) & 0xc0) != 0x80) ++n;
  return n;
}

std::vector<AnswerWindow> answer_windows(const Tokenizer& tokenizer, const std::string& question,
                                         const std::string& context, const AnswerOptions& options,
                                         std::optional<int32_t> cls_id) {
  usage_check(options.top_k >= 1, "--top-k must be at least 1 (got " + std::to_string(options.top_k) + ")");
  usage_check(options.max_answer_len >= 1,
              "--max-answer-len must be at least 1 (got " + std::to_string(options.max_answer_len) + ")");
  usage_check(options.max_length >= 1,
              "--max-length must be at least 1 (got " + std::to_string(options.max_length) + ")");
  usage_check(options.doc_stride >= 0 && options.doc_stride <= options.max_length,
              "--doc-stride (" + std::to_string(options.doc_stride) + ") must be between 0 and --max-length (" +
                  std::to_string(options.max_length) + ")");
  check(!question.empty(), "the question is empty");
  check(!context.empty(), "the context is empty");  // the pipeline refuses it too

  // What a window holds besides the context: the question's tokens and the special tokens.
  const int64_t question_tokens = int64_t(tokenizer.encode(question, false).size());
  const int64_t context_tokens = int64_t(tokenizer.encode(context, false).size());
  const int64_t specials =
      int64_t(tokenizer.encode_pair(question, context, true).size()) - question_tokens - context_tokens;
  const int64_t room = options.max_length - question_tokens - specials;
  if (room <= 0) {
    const int64_t positions = options.model_positions;
    const std::string advice =
        positions > 0 && options.max_length >= positions
            ? "shorten the question (to under " + std::to_string(positions - specials) +
                  " tokens): the window is already the model's " + std::to_string(positions) +
                  " positions, so --max-length cannot be raised"
            : "shorten the question or raise --max-length" +
                  (positions > 0 ? " (up to " + std::to_string(positions) + ", the model's positions)" : std::string());
    throw Error("the question is longer than the window: its " + std::to_string(question_tokens) + " tokens and " +
                std::to_string(specials) + " special tokens leave no room for the context in " +
                std::to_string(options.max_length) + " tokens (--max-length); " + advice);
  }
  if (context_tokens > room && options.doc_stride >= room)
    throw UsageError("--doc-stride " + std::to_string(options.doc_stride) +
                     (options.doc_stride_default ? " (not given: the default, half of --max-length " +
                                                       std::to_string(options.max_length) + " up to 128)"
                                                 : std::string()) +
                     " leaves no new context in each window: beside the question's " + std::to_string(question_tokens) +
                     " tokens a window of " + std::to_string(options.max_length) + " tokens holds " +
                     std::to_string(room) + " context tokens; give --doc-stride under " + std::to_string(room));

  EncodeOptions eo;
  eo.add_special_tokens = true;
  Truncation t;
  t.max_length = size_t(options.max_length);
  t.strategy = Truncation::Strategy::only_second;
  t.stride = size_t(options.doc_stride);
  eo.truncation = t;
  Encoding first = tokenizer.encode_pair(question, context, eo);
  std::vector<Encoding> encodings;
  std::vector<Encoding> overflowing = std::move(first.overflowing);
  first.overflowing.clear();
  encodings.push_back(std::move(first));
  for (auto& o : overflowing) encodings.push_back(std::move(o));

  std::vector<AnswerWindow> windows;
  for (auto& e : encodings) {
    AnswerWindow w;
    w.candidate.resize(e.size());
    for (size_t i = 0; i < e.size(); ++i)
      w.candidate[i] = (e.sequence_ids[i] == 1 || (cls_id && e.ids[i] == *cls_id)) && e.attention_mask[i] ? 1 : 0;
    w.encoding = std::move(e);
    windows.push_back(std::move(w));
  }
  return windows;
}

std::vector<TokenSpan> best_spans(const float* start_logits, const float* end_logits,
                                  const std::vector<uint8_t>& candidate, int64_t top_k, int64_t max_answer_len,
                                  bool handle_impossible_answer, float& min_null_score) {
  const int64_t n = int64_t(candidate.size());
  if (n == 0) return {};
  std::vector<float> start = masked_softmax(start_logits, candidate);
  std::vector<float> end = masked_softmax(end_logits, candidate);
  if (handle_impossible_answer) min_null_score = std::min(min_null_score, start[0] * end[0]);
  start[0] = end[0] = 0;  // the pipeline masks position 0 (CLS) out of the spans

  // Scores of the band start <= end < start + max_answer_len; everything outside is 0. numpy
  // ranks all n * n products; ties at 0 come last, in row-major order (a stable sort's).
  struct Scored {
    float score;
    int64_t flat;
  };
  std::vector<Scored> positive;
  for (int64_t s = 0; s < n; ++s)
    for (int64_t e = s; e < std::min(n, s + max_answer_len); ++e) {
      const float p = start[size_t(s)] * end[size_t(e)];
      if (p > 0) positive.push_back({p, s * n + e});
    }
  auto better = [](const Scored& a, const Scored& b) {
    return a.score != b.score ? a.score > b.score : a.flat < b.flat;
  };
  const size_t k = size_t(std::min<int64_t>(top_k, n * n));
  std::vector<Scored> chosen;
  if (positive.size() >= k) {
    std::partial_sort(positive.begin(), positive.begin() + long(k), positive.end(), better);
    chosen.assign(positive.begin(), positive.begin() + long(k));
  } else {
    std::sort(positive.begin(), positive.end(), better);
    chosen = positive;
    for (int64_t flat = 0; flat < n * n && chosen.size() < k; ++flat) {
      const int64_t s = flat / n, e = flat % n;
      const bool in_band = e >= s && e < s + max_answer_len;
      if (!in_band || !(start[size_t(s)] * end[size_t(e)] > 0)) chosen.push_back({0, flat});
    }
  }
  std::vector<TokenSpan> spans;
  for (const auto& c : chosen) {
    const int64_t s = c.flat / n, e = c.flat % n;
    if (candidate[size_t(s)] && candidate[size_t(e)]) spans.push_back({s, e, c.score});
  }
  return spans;
}

std::vector<Answer> answers_from_logits(const std::vector<AnswerWindow>& windows,
                                        const std::vector<std::vector<float>>& start_logits,
                                        const std::vector<std::vector<float>>& end_logits, const std::string& context,
                                        const AnswerOptions& options) {
  check(start_logits.size() == windows.size() && end_logits.size() == windows.size(),
        "answer spans: " + std::to_string(windows.size()) + " windows but " + std::to_string(start_logits.size()) +
            " rows of logits");
  float min_null_score = 1000000;
  std::vector<Answer> answers;
  // Each window's best 2k + 10 spans: widening to whole words can make several the same answer,
  // whose scores then add up (transformers 4.57's pipeline).
  const int64_t per_window = options.top_k * 2 + 10;
  for (size_t w = 0; w < windows.size(); ++w) {
    const AnswerWindow& win = windows[w];
    const Encoding& e = win.encoding;
    check(start_logits[w].size() == e.size() && end_logits[w].size() == e.size(),
          "answer spans: window " + std::to_string(w) + " has " + std::to_string(e.size()) + " tokens but " +
              std::to_string(start_logits[w].size()) + " logits");
    for (const TokenSpan& span : best_spans(start_logits[w].data(), end_logits[w].data(), win.candidate, per_window,
                                            options.max_answer_len, options.handle_impossible_answer, min_null_score)) {
      // Whole words (align_to_words); a special token (CLS) has no word: its offsets then.
      const int32_t ws = e.word_ids[size_t(span.start)], we = e.word_ids[size_t(span.end)];
      std::optional<std::pair<size_t, size_t>> a, b;
      if (ws >= 0 && we >= 0) {
        a = word_bytes(e, ws);
        b = word_bytes(e, we);
      }
      size_t start_byte, end_byte;
      if (a && b) {
        start_byte = a->first;
        end_byte = b->second;
      } else {
        start_byte = e.offsets[size_t(span.start)].first;
        end_byte = e.offsets[size_t(span.end)].second;
      }
      end_byte = std::min(end_byte, context.size());
      start_byte = std::min(start_byte, end_byte);
      // An answer whose text equals an earlier one's, ignoring case, adds its score to that one.
      const std::string text = context.substr(start_byte, end_byte - start_byte);
      const std::string lowered = lowercase_text(text);
      auto same = std::find_if(answers.begin(), answers.end(),
                               [&](const Answer& a) { return lowercase_text(a.text) == lowered; });
      if (same != answers.end()) {
        same->score += double(span.score);
        continue;
      }
      Answer ans;
      ans.score = span.score;
      ans.start_byte = start_byte;
      ans.end_byte = end_byte;
      ans.start = char_index(context, start_byte);
      ans.end = char_index(context, end_byte);
      ans.text = text;
      answers.push_back(std::move(ans));
    }
  }
  if (options.handle_impossible_answer) {
    Answer null;
    null.score = min_null_score;
    answers.push_back(null);
  }
  std::stable_sort(answers.begin(), answers.end(), [](const Answer& x, const Answer& y) { return x.score > y.score; });
  if (answers.size() > size_t(options.top_k)) answers.resize(size_t(options.top_k));
  return answers;
}

}  // namespace tach::tasks
