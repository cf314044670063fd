// seqeval 1.2's rules, transcribed: get_entities/end_of_chunk/start_of_chunk (the default,
// conlleval-compatible mode) and scheme.py's Tokens/patterns (strict mode); the averages as
// numpy computes them (pairwise sums), so that results equal the package's to the last bit.
#include "tasks/seqeval.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include "tach/error.h"
#include "tasks/numpy_sum.h"

namespace tach::tasks {

namespace {

// Python indexes strings by code point: tag[0] is the first code point of a UTF-8 string.
size_t first_code_point_bytes(const std::string& s) {
  if (s.empty()) return 0;
  const auto lead = static_cast<unsigned char>(s[0]);
  size_t n = lead < 0x80 ? 1 : (lead >> 5) == 0x6 ? 2 : (lead >> 4) == 0xE ? 3 : (lead >> 3) == 0x1E ? 4 : 1;
  return std::min(n, s.size());
}

// ---- conlleval mode (seqeval.metrics.sequence_labeling) ----

struct SplitTag {
  std::string prefix;  // "B", "I", "E", "S", "O", or whatever the first character is
  std::string type;
};

SplitTag split_lenient(const std::string& chunk, int64_t index) {
  check(!chunk.empty(),
        "an empty tag at token " + std::to_string(index) + ": every token needs a tag such as O or B-PER");
  const size_t n = first_code_point_bytes(chunk);
  SplitTag t{chunk.substr(0, n), chunk.substr(n)};
  // type_ = chunk[1:].split('-', maxsplit=1)[-1] or '_'
  const size_t dash = t.type.find('-');
  if (dash != std::string::npos) t.type = t.type.substr(dash + 1);
  if (t.type.empty()) t.type = "_";
  return t;
}

bool end_of_chunk(const std::string& prev_tag, const std::string& tag, const std::string& prev_type,
                  const std::string& type) {
  if (prev_tag == "E" || prev_tag == "S") return true;
  if ((prev_tag == "B" || prev_tag == "I") && (tag == "B" || tag == "S" || tag == "O")) return true;
  return prev_tag != "O" && prev_tag != "." && prev_type != type;
}

bool start_of_chunk(const std::string& prev_tag, const std::string& tag, const std::string& prev_type,
                    const std::string& type) {
  if (tag == "B" || tag == "S") return true;
  if ((prev_tag == "E" || prev_tag == "S" || prev_tag == "O") && (tag == "E" || tag == "I")) return true;
  return tag != "O" && tag != "." && prev_type != type;
}

// ---- strict mode (seqeval.scheme) ----

enum Prefix : unsigned { kI = 1, kO = 2, kB = 4, kE = 8, kS = 16, kU = 32, kL = 64, kAny = 127 };
enum class TagCond { same, diff, any };

struct Pattern {
  unsigned prev, current;
  TagCond cond;
};

struct SchemeRules {
  unsigned allowed;
  const char* prefixes;  // for messages
  std::vector<Pattern> start, inside, end;
};

const SchemeRules& rules_of(TagScheme scheme) {
  using C = TagCond;
  static const SchemeRules iob1{
      kI | kO | kB,
      "I, O and B",
      {{kO, kI, C::any}, {kI, kI, C::diff}, {kB, kI, C::any}, {kI, kB, C::same}, {kB, kB, C::same}},
      {{kB, kI, C::same}, {kI, kI, C::same}},
      {{kI, kI, C::diff}, {kI, kO, C::any}, {kI, kB, C::any}, {kB, kO, C::any}, {kB, kI, C::diff}, {kB, kB, C::same}}};
  static const SchemeRules ioe1{
      kI | kO | kE,
      "I, O and E",
      {{kO, kI, C::any}, {kI, kI, C::diff}, {kE, kI, C::any}, {kE, kE, C::same}},
      {{kI, kI, C::same}, {kI, kE, C::same}},
      {{kI, kI, C::diff}, {kI, kO, C::any}, {kI, kE, C::diff}, {kE, kI, C::same}, {kE, kE, C::same}}};
  static const SchemeRules iob2{
      kI | kO | kB,
      "I, O and B",
      {{kAny, kB, C::any}},
      {{kB, kI, C::same}, {kI, kI, C::same}},
      {{kI, kO, C::any}, {kI, kI, C::diff}, {kI, kB, C::any}, {kB, kO, C::any}, {kB, kI, C::diff}, {kB, kB, C::any}}};
  static const SchemeRules ioe2{
      kI | kO | kE,
      "I, O and E",
      {{kO, kI, C::any}, {kO, kE, C::any}, {kE, kI, C::any}, {kE, kE, C::any}, {kI, kI, C::diff}, {kI, kE, C::diff}},
      {{kI, kE, C::same}, {kI, kI, C::same}},
      {{kE, kAny, C::any}}};
  static const SchemeRules iobes{kI | kO | kB | kE | kS,
                                 "I, O, B, E and S",
                                 {{kAny, kB, C::any}, {kAny, kS, C::any}},
                                 {{kB, kI, C::same}, {kB, kE, C::same}, {kI, kI, C::same}, {kI, kE, C::same}},
                                 {{kS, kAny, C::any}, {kE, kAny, C::any}}};
  static const SchemeRules bilou{kB | kI | kL | kO | kU,
                                 "B, I, L, O and U",
                                 {{kAny, kB, C::any}, {kAny, kU, C::any}},
                                 {{kB, kI, C::same}, {kB, kL, C::same}, {kI, kI, C::same}, {kI, kL, C::same}},
                                 {{kU, kAny, C::any}, {kL, kAny, C::any}}};
  switch (scheme) {
    case TagScheme::iob1: return iob1;
    case TagScheme::ioe1: return ioe1;
    case TagScheme::iob2: return iob2;
    case TagScheme::ioe2: return ioe2;
    case TagScheme::iobes: return iobes;
    case TagScheme::bilou: return bilou;
    case TagScheme::conlleval: break;
  }
  throw Error("strict entities need a scheme (IOB1, IOB2, IOE1, IOE2, IOBES or BILOU), not conlleval");
}

struct StrictToken {
  unsigned prefix;
  std::string tag;
};

StrictToken strict_token(const std::string& token, const SchemeRules& rules, TagScheme scheme,
                         const std::string& where) {
  const auto bad = [&](const std::string& why) {
    return Error(where + ": tag '" + token + "' " + why + "; " + tag_scheme_name(scheme) + " tags begin with " +
                 rules.prefixes + " (--tag-scheme conlleval reads any tags)");
  };
  if (token.empty()) throw bad("is empty");
  const size_t n = first_code_point_bytes(token);
  static const std::map<std::string, unsigned> prefixes{{"I", kI}, {"O", kO}, {"B", kB}, {"E", kE},
                                                        {"S", kS}, {"U", kU}, {"L", kL}};
  const auto it = prefixes.find(token.substr(0, n));
  if (it == prefixes.end() || !(it->second & rules.allowed))
    throw bad("does not fit the " + std::string(tag_scheme_name(scheme)) + " scheme");
  // tag = token[1:].strip('-') or '_'
  std::string tag = token.substr(n);
  const size_t b = tag.find_first_not_of('-');
  tag = b == std::string::npos ? "" : tag.substr(b, tag.find_last_not_of('-') - b + 1);
  return {it->second, tag.empty() ? "_" : tag};
}

bool matches(const StrictToken& prev, const StrictToken& cur, const std::vector<Pattern>& patterns) {
  for (const Pattern& p : patterns) {
    if (!(prev.prefix & p.prev) || !(cur.prefix & p.current)) continue;
    if (p.cond == TagCond::any || (p.cond == TagCond::same) == (prev.tag == cur.tag)) return true;
  }
  return false;
}

double divide_or_zero(int64_t num, int64_t den) { return den == 0 ? 0.0 : double(num) / double(den); }

void fill_scores(EntityTypeScores& s) {
  s.precision = divide_or_zero(s.correct, s.predicted);
  s.recall = divide_or_zero(s.correct, s.support);
  // (1 + beta²)·p·r / (beta²·p + r), beta = 1; 0 when p + r is 0
  const double denom = s.precision + s.recall;
  s.f1 = 2.0 * s.precision * s.recall / (denom == 0.0 ? 1.0 : denom);
}

// Entities as comparable keys per type: (sentence, start, end) in strict mode, (first, last) of
// the flattened sequence in conlleval mode (sentence 0).
using EntityKey = std::tuple<int64_t, int64_t, int64_t>;
using EntitiesByType = std::map<std::string, std::set<EntityKey>>;

EntitiesByType entities_by_type(const std::vector<TagSequence>& sentences, TagScheme scheme, const char* side) {
  EntitiesByType out;
  if (scheme == TagScheme::conlleval) {
    // seqeval flattens the sentences with an 'O' after each, and reads one sequence.
    TagSequence flat;
    for (const auto& s : sentences) {
      flat.insert(flat.end(), s.begin(), s.end());
      flat.push_back("O");
    }
    try {
      for (const Chunk& c : conlleval_chunks(flat)) out[c.type].insert({0, c.first, c.last});
    } catch (const Error& e) { throw Error(std::string("the ") + side + " tags: " + e.what()); }
    return out;
  }
  for (size_t i = 0; i < sentences.size(); ++i)
    for (const TaggedEntity& e :
         strict_entities(sentences[i], scheme, int64_t(i),
                         std::string("the ") + side + " tags of sentence " + std::to_string(i + 1)))
      out[e.type].insert({e.sentence, e.start, e.end});
  return out;
}

}  // namespace

TagScheme parse_tag_scheme(const std::string& name) {
  std::string upper;
  for (char c : name) upper += char(std::toupper(static_cast<unsigned char>(c)));
  if (upper == "CONLLEVAL" || upper == "DEFAULT") return TagScheme::conlleval;
  for (TagScheme s :
       {TagScheme::iob1, TagScheme::iob2, TagScheme::ioe1, TagScheme::ioe2, TagScheme::iobes, TagScheme::bilou})
    if (upper == tag_scheme_name(s)) return s;
  throw UsageError("tag scheme '" + name +
                   "' is not one of: conlleval (lenient, as conlleval.pl), IOB1, IOB2, IOE1, IOE2, IOBES, BILOU");
}

const char* tag_scheme_name(TagScheme scheme) {
  switch (scheme) {
    case TagScheme::conlleval: return "conlleval";
    case TagScheme::iob1: return "IOB1";
    case TagScheme::iob2: return "IOB2";
    case TagScheme::ioe1: return "IOE1";
    case TagScheme::ioe2: return "IOE2";
    case TagScheme::iobes: return "IOBES";
    case TagScheme::bilou: return "BILOU";
  }
  return "?";
}

std::vector<Chunk> conlleval_chunks(const TagSequence& tags) {
  std::vector<Chunk> chunks;
  std::string prev_tag = "O", prev_type;
  int64_t begin = 0;
  const auto n = int64_t(tags.size());
  for (int64_t i = 0; i <= n; ++i) {  // one 'O' past the end closes the last entity
    const SplitTag t = i < n ? split_lenient(tags[size_t(i)], i) : SplitTag{"O", "_"};
    if (end_of_chunk(prev_tag, t.prefix, prev_type, t.type)) chunks.push_back({prev_type, begin, i - 1});
    if (start_of_chunk(prev_tag, t.prefix, prev_type, t.type)) begin = i;
    prev_tag = t.prefix;
    prev_type = t.type;
  }
  return chunks;
}

std::vector<TaggedEntity> strict_entities(const TagSequence& tags, TagScheme scheme, int64_t sentence,
                                          const std::string& where) {
  const SchemeRules& rules = rules_of(scheme);
  // seqeval.scheme.Tokens: the tokens and one 'O' past the end.
  std::vector<StrictToken> ext;
  ext.reserve(tags.size() + 1);
  for (size_t i = 0; i < tags.size(); ++i)
    ext.push_back(strict_token(tags[i], rules, scheme, where + ", token " + std::to_string(i + 1)));
  const StrictToken outside{kO, "_"};
  ext.push_back(outside);
  std::vector<TaggedEntity> out;
  size_t i = 0;
  StrictToken prev = outside;
  while (i < ext.size()) {
    const StrictToken& token = ext[i];
    if (matches(prev, token, rules.start)) {
      // _forward: the tokens inside the entity
      size_t end = ext.size() - 1;
      StrictToken p = token;
      for (size_t k = i + 1; k < ext.size(); ++k) {
        if (matches(p, ext[k], rules.inside)) {
          p = ext[k];
        } else {
          end = k;
          break;
        }
      }
      if (matches(ext[end - 1], ext[end], rules.end)) out.push_back({token.tag, sentence, int64_t(i), int64_t(end)});
      i = end;
    } else {
      ++i;
    }
    prev = ext[i - 1];
  }
  return out;
}

SeqevalResult seqeval_scores(const std::vector<TagSequence>& truth, const std::vector<TagSequence>& predicted,
                             TagScheme scheme) {
  check(truth.size() == predicted.size(), "seqeval: " + std::to_string(truth.size()) + " true sentences but " +
                                              std::to_string(predicted.size()) + " predicted");
  SeqevalResult r;
  r.scheme = scheme;
  r.sentences = int64_t(truth.size());
  int64_t same = 0;
  for (size_t i = 0; i < truth.size(); ++i) {
    check(truth[i].size() == predicted[i].size(), "seqeval: sentence " + std::to_string(i + 1) + " has " +
                                                      std::to_string(truth[i].size()) + " true tags but " +
                                                      std::to_string(predicted[i].size()) + " predicted");
    for (size_t k = 0; k < truth[i].size(); ++k) same += truth[i][k] == predicted[i][k];
    r.tokens += int64_t(truth[i].size());
  }
  r.token_accuracy = r.tokens ? double(same) / double(r.tokens) : 0.0;

  const EntitiesByType true_entities = entities_by_type(truth, scheme, "true");
  const EntitiesByType predicted_entities = entities_by_type(predicted, scheme, "predicted");
  std::set<std::string> types;
  for (const auto& [type, _] : true_entities) types.insert(type);
  for (const auto& [type, _] : predicted_entities) types.insert(type);
  static const std::set<EntityKey> none;
  for (const std::string& type : types) {
    const auto t = true_entities.find(type), p = predicted_entities.find(type);
    const std::set<EntityKey>& ts = t == true_entities.end() ? none : t->second;
    const std::set<EntityKey>& ps = p == predicted_entities.end() ? none : p->second;
    EntityTypeScores s;
    s.type = type;
    s.support = int64_t(ts.size());
    s.predicted = int64_t(ps.size());
    for (const EntityKey& k : ps) s.correct += ts.count(k) ? 1 : 0;
    fill_scores(s);
    r.micro.support += s.support;
    r.micro.predicted += s.predicted;
    r.micro.correct += s.correct;
    r.per_type.push_back(s);
  }
  fill_scores(r.micro);

  // np.average over the types, plain and weighted by support.
  const size_t n = r.per_type.size();
  r.macro.support = r.weighted.support = r.micro.support;
  r.macro.predicted = r.weighted.predicted = r.micro.predicted;
  r.macro.correct = r.weighted.correct = r.micro.correct;
  const double nan = std::nan("");
  r.macro.precision = r.macro.recall = r.macro.f1 = nan;
  // seqeval returns zero_division's value (0) for the weighted average when no type has true
  // entities (so also without types), and numpy's mean of nothing (NaN) for the macro average.
  r.weighted.precision = r.weighted.recall = r.weighted.f1 = 0.0;
  if (n == 0) return r;
  std::vector<double> p(n), rc(n), f(n), w(n);
  for (size_t i = 0; i < n; ++i) {
    p[i] = r.per_type[i].precision;
    rc[i] = r.per_type[i].recall;
    f[i] = r.per_type[i].f1;
    w[i] = double(r.per_type[i].support);
  }
  r.macro.precision = numpy_sum(p.data(), n) / double(n);
  r.macro.recall = numpy_sum(rc.data(), n) / double(n);
  r.macro.f1 = numpy_sum(f.data(), n) / double(n);
  const double weight_sum = numpy_sum(w.data(), n);
  if (weight_sum == 0) return r;
  const auto weighted_mean = [&](const std::vector<double>& v) {
    std::vector<double> prod(n);
    for (size_t i = 0; i < n; ++i) prod[i] = v[i] * w[i];
    return numpy_sum(prod.data(), n) / weight_sum;
  };
  r.weighted.precision = weighted_mean(p);
  r.weighted.recall = weighted_mean(rc);
  r.weighted.f1 = weighted_mean(f);
  return r;
}

}  // namespace tach::tasks
