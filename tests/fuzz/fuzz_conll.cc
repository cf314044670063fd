// Any bytes given to the tagged-word readers (CoNLL text with either tag column, JSONL and JSON
// records with names or integer tags) yield sentences with one tag per word, or a tach::Error.
// The sentences then go through seqeval's entity readers, lenient and strict.
#include <cstddef>
#include <cstdint>
#include <string>

#include "data/conll.h"
#include "tach/error.h"
#include "tasks/seqeval.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  // The first byte picks the reader (and the scheme), so that one corpus covers them all.
  const std::string bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  tach::data::TaggedJsonOptions options;
  options.tag_names = {"O", "B-PER", "I-PER", "E-LOC", "S-LOC"};
  try {
    std::vector<tach::data::TaggedSentence> sentences;
    switch (data[0] % 4) {
      case 0: sentences = tach::data::read_conll("fuzz.conll", bytes, -1); break;
      case 1: sentences = tach::data::read_conll("fuzz.conll", bytes, 1); break;
      case 2: sentences = tach::data::read_tagged_json("fuzz.jsonl", bytes, true, options); break;
      default: sentences = tach::data::read_tagged_json("fuzz.json", bytes, false, options); break;
    }
    std::vector<tach::tasks::TagSequence> tags;
    for (const auto& s : sentences) {
      if (s.words.size() != s.tags.size()) __builtin_trap();
      tags.push_back(s.tags);
    }
    const auto scheme = static_cast<tach::tasks::TagScheme>((data[0] / 4) % 7);
    const auto r = tach::tasks::seqeval_scores(tags, tags, scheme);
    if (r.micro.correct != r.micro.support || r.micro.predicted != r.micro.support) __builtin_trap();
  } catch (const tach::Error&) {}
  return 0;
}
