// Any bytes given to the SQuAD reader (official v1.1/v2.0 JSON, flat JSON lists, JSONL) yield
// questions with one start per answer, or a tach::Error. The questions then go through the
// official scores: each question's first gold answer as its prediction scores 100 exact match.
#include <cstddef>
#include <cstdint>
#include <string>

#include "data/squad.h"
#include "tach/error.h"
#include "tasks/squad_metric.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  try {
    const tach::data::SquadData d = tach::data::parse_squad("fuzz.json", bytes);
    std::vector<std::vector<std::string>> gold;
    std::vector<std::string> predictions;
    for (const auto& q : d.questions) {
      if (q.answers.size() != q.answer_starts.size()) __builtin_trap();
      if (!d.v2 && q.answers.empty()) __builtin_trap();
      gold.push_back(q.answers);
      predictions.push_back(q.answers.empty() ? "" : q.answers[0]);
    }
    const auto version = d.v2 ? tach::tasks::SquadVersion::v2 : tach::tasks::SquadVersion::v1;
    const auto s = tach::tasks::squad_scores(gold, predictions, version);
    if (s.total != int64_t(d.questions.size()) || s.exact < 99.999) __builtin_trap();
  } catch (const tach::Error&) {}
  return 0;
}
