// seqeval's entity-level metrics for sequence labelling (NER): entities read from tag sequences,
// then precision, recall and F1 per entity type and averaged, as the `seqeval` package computes
// them (its classification_report, which `evaluate`'s seqeval metric reports).
//
// Two ways to read entities, as seqeval has them:
//  - conlleval (seqeval's default mode): lenient, compatible with conlleval.pl. Any tag is read
//    (its first character is the prefix, the rest after the first '-' the type); an I- after O
//    or after another type starts an entity.
//  - strict (seqeval's mode="strict" with a scheme): an entity counts only when it is well formed
//    in the scheme (IOB1, IOB2, IOE1, IOE2, IOBES, BILOU); a tag whose prefix the scheme does not
//    have is an error.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tach::tasks {

enum class TagScheme { conlleval, iob1, iob2, ioe1, ioe2, iobes, bilou };

// "conlleval" (also "default"), "IOB1", "IOB2", "IOE1", "IOE2", "IOBES", "BILOU"; any case.
// Anything else is a UsageError that lists the choices.
TagScheme parse_tag_scheme(const std::string& name);
const char* tag_scheme_name(TagScheme scheme);  // "conlleval", "IOB1", ...

using TagSequence = std::vector<std::string>;

// An entity of a tag sequence: tokens [start, end) of one sentence.
struct TaggedEntity {
  std::string type;
  int64_t sentence = 0;
  int64_t start = 0;
  int64_t end = 0;
};

// seqeval's get_entities over one flat sequence (conlleval mode): (type, first, last) with `last`
// inclusive, in seqeval's order. An empty tag is an error (seqeval fails on it).
struct Chunk {
  std::string type;
  int64_t first = 0;
  int64_t last = 0;
};
std::vector<Chunk> conlleval_chunks(const TagSequence& tags);

// seqeval's strict entities of one sentence in `scheme` (not conlleval). A tag that does not
// begin with one of the scheme's prefixes is an error naming it, its position (`where`, e.g.
// "sentence 3") and the scheme's prefixes.
std::vector<TaggedEntity> strict_entities(const TagSequence& tags, TagScheme scheme, int64_t sentence,
                                          const std::string& where);

struct EntityTypeScores {
  std::string type;  // empty for an average
  double precision = 0, recall = 0, f1 = 0;
  int64_t support = 0;    // entities of this type in the truth
  int64_t predicted = 0;  // entities of this type predicted
  int64_t correct = 0;    // predicted with the right type and the same tokens
};

struct SeqevalResult {
  TagScheme scheme = TagScheme::conlleval;
  std::vector<EntityTypeScores> per_type;  // sorted by type name (byte order, as Python sorts)
  EntityTypeScores micro;                  // from the summed counts ("overall" in evaluate's seqeval)
  // The mean of the per-type scores, plain (macro) and weighted by support; NaN without types.
  EntityTypeScores macro, weighted;
  double token_accuracy = 0;  // tags equal to the truth's, over all tokens (seqeval's accuracy_score)
  int64_t sentences = 0, tokens = 0;
};

// truth and predicted: one tag sequence per sentence, of equal lengths (an error otherwise).
// A zero denominator gives 0, as seqeval's default zero_division.
SeqevalResult seqeval_scores(const std::vector<TagSequence>& truth, const std::vector<TagSequence>& predicted,
                             TagScheme scheme);

}  // namespace tach::tasks
