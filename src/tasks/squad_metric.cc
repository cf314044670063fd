#include "tasks/squad_metric.h"

#include <algorithm>
#include <map>

#include "tach/error.h"
#include "tach/tokenizer.h"
#include "tokenizer/unicode.h"

namespace tach::tasks {

namespace {

namespace tk = tach::tokenizer;

// Python's str.isspace: White_Space, and the separators \x1c-\x1f it counts too.
bool python_space(char32_t c) { return tk::is_whitespace(c) || (c >= 0x1c && c <= 0x1f); }
// A character of a word for re's \b on str patterns: alphanumeric or underscore.
bool word_char(char32_t c) { return c == U'_' || tk::is_alphabetic(c) || tk::is_numeric(c); }

std::u32string decode(const std::string& s) {
  std::u32string out;
  for (size_t i = 0; i < s.size();) out.push_back(tk::next_codepoint(s, i));
  return out;
}

std::vector<std::string> split_words(const std::string& s) {
  std::vector<std::string> words;
  std::string cur;
  for (size_t i = 0; i < s.size();) {
    const size_t start = i;
    const char32_t c = tk::next_codepoint(s, i);
    if (python_space(c)) {
      if (!cur.empty()) words.push_back(std::move(cur));
      cur.clear();
    } else {
      cur.append(s, start, i - start);
    }
  }
  if (!cur.empty()) words.push_back(std::move(cur));
  return words;
}

// re.sub(r"\b(a|an|the)\b", " ", text): the alternatives tried in order at each position, a
// match needing a word boundary on both sides (judged on the text as given).
std::u32string remove_articles(const std::u32string& t) {
  std::u32string out;
  const size_t n = t.size();
  for (size_t i = 0; i < n;) {
    const bool boundary_before = i == 0 || !word_char(t[i - 1]);
    size_t matched = 0;
    if (boundary_before && word_char(t[i]))
      for (const std::u32string w : {U"a", U"an", U"the"})
        if (t.compare(i, w.size(), w) == 0 && (i + w.size() == n || !word_char(t[i + w.size()]))) {
          matched = w.size();
          break;
        }
    if (matched) {
      out.push_back(U' ');
      i += matched;
    } else {
      out.push_back(t[i++]);
    }
  }
  return out;
}

// The tokens F1 counts: v2's get_tokens (nothing for an empty text), v1's split of the
// normalised text (the same words).
double f1_of(const std::vector<std::string>& gold, const std::vector<std::string>& pred, SquadVersion version) {
  if (version == SquadVersion::v2 && (gold.empty() || pred.empty())) return gold == pred ? 1 : 0;
  std::map<std::string, int64_t> counts;
  for (const auto& w : gold) ++counts[w];
  int64_t same = 0;
  for (const auto& w : pred) {
    auto it = counts.find(w);
    if (it != counts.end() && it->second > 0) {
      --it->second;
      ++same;
    }
  }
  if (same == 0) return 0;
  const double precision = double(same) / double(pred.size()), recall = double(same) / double(gold.size());
  return 2 * precision * recall / (precision + recall);
}

}  // namespace

std::string normalize_answer(const std::string& text) {
  std::u32string lowered = decode(lowercase_text(text));
  std::u32string kept;
  for (char32_t c : lowered)
    if (!tk::is_ascii_punctuation(c)) kept.push_back(c);
  std::string spaced;
  for (char32_t c : remove_articles(kept)) tk::append_utf8(spaced, c);
  std::string out;
  for (const auto& w : split_words(spaced)) {
    if (!out.empty()) out += ' ';
    out += w;
  }
  return out;
}

QuestionScore score_question(const std::vector<std::string>& gold, const std::string& prediction,
                             SquadVersion version) {
  std::vector<std::string> answers;
  for (const auto& g : gold)
    if (version == SquadVersion::v1 || !normalize_answer(g).empty()) answers.push_back(g);
  // v2: a question whose answers all normalise to nothing is scored against the empty answer.
  if (version == SquadVersion::v2 && answers.empty()) answers.push_back("");
  QuestionScore best;
  const std::string pred_norm = normalize_answer(prediction);
  const std::vector<std::string> pred_words = split_words(pred_norm);
  for (const auto& a : answers) {
    const std::string gold_norm = normalize_answer(a);
    best.exact = std::max(best.exact, gold_norm == pred_norm ? 1.0 : 0.0);
    best.f1 = std::max(best.f1, f1_of(split_words(gold_norm), pred_words, version));
  }
  return best;
}

}  // namespace tach::tasks

namespace tach {

SquadScores squad_scores(const std::vector<std::vector<std::string>>& gold, const std::vector<std::string>& predictions,
                         SquadVersion version) {
  using tasks::QuestionScore;
  using tasks::score_question;
  check(gold.size() == predictions.size(), "SQuAD scores: " + std::to_string(gold.size()) + " questions but " +
                                               std::to_string(predictions.size()) + " predictions");
  SquadScores s;
  for (size_t i = 0; i < gold.size(); ++i) {
    const QuestionScore q = score_question(gold[i], predictions[i], version);
    ++s.total;
    s.exact += q.exact;
    s.f1 += q.f1;
    if (!gold[i].empty()) {
      ++s.has_answer_total;
      s.has_answer_exact += q.exact;
      s.has_answer_f1 += q.f1;
    } else {
      ++s.no_answer_total;
      s.no_answer_exact += q.exact;
      s.no_answer_f1 += q.f1;
    }
  }
  auto percent = [](double sum, int64_t n) { return n > 0 ? 100.0 * sum / double(n) : 0.0; };
  s.exact = percent(s.exact, s.total);
  s.f1 = percent(s.f1, s.total);
  s.has_answer_exact = percent(s.has_answer_exact, s.has_answer_total);
  s.has_answer_f1 = percent(s.has_answer_f1, s.has_answer_total);
  s.no_answer_exact = percent(s.no_answer_exact, s.no_answer_total);
  s.no_answer_f1 = percent(s.no_answer_f1, s.no_answer_total);
  return s;
}

}  // namespace tach
