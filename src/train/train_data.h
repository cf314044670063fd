// A labelled dataset made ready for training: every example tokenized once, its target checked
// against the head, and batches cut in a seeded order that a resumed run reproduces exactly.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tach/dataset.h"
#include "tach/model.h"
#include "tach/tokenizer.h"
#include "train/classifier_loss.h"
#include "train/mlm_masking.h"

namespace tach::train {

struct TrainData {
  std::vector<std::vector<int32_t>> ids, types;  // per example, truncated to max_length
  std::vector<int32_t> classes;                  // single-label targets (ids into the head's labels)
  std::vector<float> values;                     // regression targets
  std::vector<std::vector<int32_t>> label_sets;  // multi-label targets (ids into the head's labels)
  bool regression = false;
  bool multi_label = false;
  int64_t num_labels = 0;   // the head's outputs
  bool with_types = false;  // BERT: token_type_ids go to the model
  int64_t max_length = 0;
  bool pad_to_max_length = false;
  int32_t pad_id = 0;
  int64_t size() const { return int64_t(ids.size()); }

  // The per-token heads (train/task_data.h prepares them).
  Head head = Head::sequence_classification;
  // Per example, one entry per token as ids: masked LM, 1 where special (never chosen); token
  // classification, the aligned labels (-100: no loss).
  std::vector<std::vector<int32_t>> special, token_labels;
  std::vector<int32_t> start_positions, end_positions;  // question answering: per window
  MlmMasking masking;                                   // masked LM: the collator's rule,
  uint64_t mask_seed = 0;                               // drawn per (seed, epoch, example)
};

// labels: the head's labels (id order); problem_type as the model's.
TrainData prepare_train_data(const Dataset& dataset, const Tokenizer& tokenizer, const std::vector<std::string>& labels,
                             const std::string& problem_type, int64_t max_length, bool pad_to_max_length,
                             int32_t pad_id, bool with_types);

// The examples of one epoch, in order: file order, or a permutation seeded by (seed, epoch).
std::vector<int64_t> epoch_order(int64_t n, uint64_t seed, int64_t epoch, bool shuffle);

// One batch of the given examples: padded on the right (to the longest, or to max_length). A
// masked LM's rows are masked afresh for each epoch (dynamic masking, as the collator does).
void make_batch(const TrainData& data, const std::vector<int64_t>& examples, TokenBatch* batch, Targets* targets,
                int64_t epoch = 0);

// The labels a new head gets from the data: 0..n-1 as LABEL_0.. when every label is such an
// integer (transformers' default names), else the distinct labels sorted. multi_label: the labels
// of every example's set (split_label_set), pooled.
std::vector<std::string> labels_from_data(const Dataset& dataset, bool multi_label = false);

// Refused (a usage error) before any row runs: a tokenizer whose ids reach past the model's
// embeddings (another model's tokenizer given with -k). Left unchecked, the first row holding such
// an id stops the run mid-way. given: the -k value (empty: the model's own tokenizer); model: the
// model as named; vocab_size: its embeddings' rows (config.json's vocab_size).
void check_tokenizer_fits(const Tokenizer& tokenizer, const std::string& given, const std::string& model,
                          int64_t vocab_size);

}  // namespace tach::train
