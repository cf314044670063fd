// Token classification (NER) for a user. What a token classifier's logits become, as transformers'
// token-classification pipeline gives them: each token's label and softmax score
// (aggregation_strategy="none"), and entity groups (aggregation_strategy="simple"): adjacent tokens
// of one entity type joined, a B- tag starting a new group, with the mean score, the words joined
// as the tokenizer joins tokens, and character offsets into the text (or, for first/average/max,
// words joined first). Tokens and groups labelled 'O' are what the pipeline leaves out
// (ignore_labels). And tach eval on a token classifier: seqeval's entity-level metrics over tagged
// words (src/bench/token_eval.cc).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "tach/bench.h"
#include "tach/tokenizer.h"

namespace tach {

// One token's prediction (the pipeline's entity with aggregation "none").
struct TokenEntity {
  std::string entity;  // the label of the highest score (id2label)
  float score = 0;     // its softmax probability, in f32 as numpy computes it
  int64_t index = 0;   // the token's position in the encoded text, special tokens counted
  std::string word;    // the token as the vocabulary writes it ("##ing"); the text's own piece for [UNK]
  int64_t start = 0;   // character (code point) offsets into the text, [start, end)
  int64_t end = 0;
  std::vector<float> scores;  // every label's softmax probability [labels]
  // Whether the token continues the word before it, as the pipeline decides: for a tokenizer
  // that marks continuations ("##"), when the token's text and the text it covers differ in
  // length; otherwise when no space is on either side of its start.
  bool is_subword = false;
};

// An entity group (aggregation "simple").
struct EntityGroup {
  std::string entity_group;  // the first token's label without its B-/I- prefix
  float score = 0;           // the mean of the tokens' scores
  std::string word;          // the tokens joined by the tokenizer's decoder
  int64_t start = 0, end = 0;
};

// Tokens joined into text as the tokenizer's decoder joins them (transformers'
// convert_tokens_to_string).
using TokensToString = std::function<std::string(const std::vector<std::string>&)>;

// text: what was encoded; encoding: its tokens (ids, tokens, byte offsets, special-token mask) [T];
// logits: [T, labels.size()] f32, the classifier's row for this text. Special tokens are left
// out; every other token is returned, 'O' included, in order. unk_id: the tokenizer's unknown
// token, whose word is the text it stands for.
// marks_subwords: the tokenizer's model has a continuing-subword prefix (tokenizer_marks_subwords).
std::vector<TokenEntity> token_entities(const std::string& text, const Encoding& encoding, const float* logits,
                                        const std::vector<std::string>& labels, std::optional<int32_t> unk_id,
                                        bool marks_subwords = true);

// The pipeline's aggregation_strategy: none (each token), simple (tokens grouped by their labels),
// or first, average, max (tokens joined into words first, each word labelled by its first token,
// its tokens' mean scores, or its best-scored token, so that a word never splits between groups).
enum class Aggregation { none, simple, first, average, max };
Aggregation parse_aggregation(const std::string& name);  // a UsageError naming the choices otherwise
const char* aggregation_name(Aggregation a);

// first/average/max: the words, each a TokenEntity with the word's label, score, joined text and
// offsets (index: its first token's).
std::vector<TokenEntity> word_entities(const std::vector<TokenEntity>& tokens, Aggregation strategy,
                                       const std::vector<std::string>& labels, const TokensToString& join);

// The pipeline's group_entities over every token entity ('O' included): a token joins the group
// before it when it has the same type and is not a B- tag.
std::vector<EntityGroup> group_entities(const std::vector<TokenEntity>& tokens, const TokensToString& join);

// The pipeline's output: tokens or groups not labelled 'O'.
std::vector<TokenEntity> without_outside(const std::vector<TokenEntity>& tokens);
std::vector<EntityGroup> without_outside(const std::vector<EntityGroup>& groups);

// Whether the tokenizer's model marks a word's continuing pieces (WordPiece's "##", a BPE's
// continuing_subword_prefix), which the pipeline's is_subword relies on; read from tokenizer.json.
bool tokenizer_marks_subwords(const std::string& tokenizer_path);

// The tokenizer's unknown token, as transformers reads it: tokenizer_config.json's (or
// special_tokens_map.json's) unk_token, else the model's in tokenizer.json; none when no file
// names one. tokenizer_path: the tokenizer.json or directory `tokenizer` was loaded from.
std::optional<int32_t> unknown_token_id(const std::string& tokenizer_path, const Tokenizer& tokenizer);

// ---- tach eval on a token classifier: seqeval's entity-level metrics ----

struct TokenEvalOptions {
  // conlleval (seqeval's default, lenient) or a strict scheme: IOB1, IOB2, IOE1, IOE2, IOBES, BILOU
  std::string tag_scheme = "conlleval";
  int tag_column = -1;  // CoNLL files: the tag's column from 0, or negative from the end
  // Sub-tokens per sentence, special tokens included (-s); 0: the model's positions, as run_ner
  // truncates by default (its max_seq_length None: the tokenizer's model_max_length).
  int64_t max_length = 0;
  // Names of integer tags in id order (the dataset's label list, e.g. conll2003's ClassLabel
  // names); empty: the model's id2label, which orders its labels as it was trained (often not as
  // the dataset does).
  std::vector<std::string> tag_names;
};

struct EntityScores {
  std::string type;  // empty for an average
  double precision = 0, recall = 0, f1 = 0;
  int64_t support = 0, predicted = 0, correct = 0;  // entities: true, predicted, predicted exactly
};

// One pass of the model (a device and dtype) over the tagged sentences.
struct TokenEvalPass {
  std::string device, dtype;
  int64_t sentences = 0, words = 0;
  // Words past the model's positions (or --max-length) have no prediction; they are left out of
  // both sides, as transformers' run_ner leaves out the labels it truncated away.
  int64_t words_cut = 0;
  std::string scheme;
  std::vector<EntityScores> per_type;
  EntityScores micro;            // evaluate's overall_precision, overall_recall, overall_f1
  EntityScores macro, weighted;  // NaN scores where there are no entity types
  double word_accuracy = 0;      // evaluate's overall_accuracy
  double tokenize_s = 0, model_s = 0, total_s = 0, sentences_per_s = 0;
  PointResult::Load load;  // other processes' CPU use over the timed pass (contended: the rate is theirs too)
};

struct TokenEvalOutcome {
  std::string run_dir, dataset, model, architecture;
  std::vector<std::string> labels, notes;
  std::vector<TokenEvalPass> passes;
};

// Whether tach eval runs the token-classification pass for this config: --head
// token-classification, or (--head auto) a checkpoint published as *ForTokenClassification.
// Reads config.json only.
bool evaluates_token_classification(const BenchConfig& config);

// tach eval on a token classifier: reads the tagged sentences (CoNLL text, or JSON records with
// config.dataset.text_column's words and label_column's tags, "tokens" and "ner_tags" when those
// are left at text and label), splits each sentence's words into sub-tokens as
// is_split_into_words=True does, takes each word's first sub-token's label, and scores them with
// seqeval; one pass per device and dtype. Writes RUN_DIR/config.json, token_classification.json
// and summary.txt.
TokenEvalOutcome run_token_eval(const BenchConfig& config, const TokenEvalOptions& options);
std::string token_eval_text(const TokenEvalOutcome& outcome);
std::string token_eval_json(const TokenEvalOutcome& outcome);  // schema tach.eval.token_classification/1

}  // namespace tach
