#include "train/train_data.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "tach/error.h"
#include "train/loss.h"

namespace tach::train {

namespace {

bool parse_int(const std::string& s, int64_t* v) {
  if (s.empty() || s.size() > 9) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  *v = std::stoll(s);
  return true;
}

uint64_t mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

}  // namespace

TrainData prepare_train_data(const Dataset& dataset, const Tokenizer& tokenizer, const std::vector<std::string>& labels,
                             const std::string& problem_type, int64_t max_length, bool pad_to_max_length,
                             int32_t pad_id, bool with_types) {
  check(max_length >= 2,
        "--max-length must be at least 2 (the special tokens alone take 2), got " + std::to_string(max_length));
  TrainData d;
  d.max_length = max_length;
  d.pad_to_max_length = pad_to_max_length;
  d.pad_id = pad_id;
  d.with_types = with_types;
  d.regression = problem_type == "regression";
  d.multi_label = problem_type == "multi_label_classification";
  d.num_labels = int64_t(labels.size());
  EncodeOptions eo;
  Truncation tr;
  tr.max_length = size_t(max_length);
  eo.truncation = tr;
  for (const Example& e : dataset.examples) {
    Encoding enc = e.text_pair.empty() ? tokenizer.encode(e.text, eo) : tokenizer.encode_pair(e.text, e.text_pair, eo);
    d.ids.push_back(enc.ids);
    d.types.push_back(with_types ? enc.type_ids : std::vector<int32_t>{});
  }
  if (d.regression) {
    for (const Example& e : dataset.examples) {
      char* end = nullptr;
      const float v = std::strtof(e.label.c_str(), &end);
      check(!e.label.empty() && end && *end == '\0' && std::isfinite(v),
            dataset.path + ": record " + std::to_string(e.source_row) + ": label \"" + e.label +
                "\" is not a number, and this model is a regression head (problem_type regression)");
      d.values.push_back(v);
    }
  } else if (d.multi_label) {
    d.label_sets = LabelMap(labels).label_sets_of(dataset.examples, dataset.path);
  } else {
    d.classes = LabelMap(labels).ids_of(dataset.examples, dataset.path);
  }
  return d;
}

std::vector<int64_t> epoch_order(int64_t n, uint64_t seed, int64_t epoch, bool shuffle) {
  std::vector<int64_t> order(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) order[size_t(i)] = i;
  if (!shuffle) return order;
  // Fisher-Yates with a counter-based generator: the same order on every platform and library.
  uint64_t state = mix(seed * 0x9e3779b97f4a7c15ull + uint64_t(epoch) + 1);
  for (int64_t i = n - 1; i > 0; --i) {
    state = mix(state + 0x9e3779b97f4a7c15ull);
    const int64_t j = int64_t(state % uint64_t(i + 1));
    std::swap(order[size_t(i)], order[size_t(j)]);
  }
  return order;
}

void make_batch(const TrainData& d, const std::vector<int64_t>& examples, TokenBatch* batch, Targets* targets,
                int64_t epoch) {
  std::vector<std::vector<int32_t>> rows, type_rows, label_rows;
  *targets = Targets{};
  size_t longest = 0;
  for (int64_t i : examples) {
    rows.push_back(d.ids[size_t(i)]);
    if (d.with_types) type_rows.push_back(d.types[size_t(i)]);
    longest = std::max(longest, rows.back().size());
    switch (d.head) {
      case Head::masked_lm: {
        std::vector<int32_t>& row = rows.back();
        label_rows.emplace_back(row.size());
        mask_tokens(row.data(), label_rows.back().data(), d.special[size_t(i)].data(), int64_t(row.size()), d.masking,
                    mlm_mask_key(d.mask_seed, epoch, i));
        continue;
      }
      case Head::token_classification: label_rows.push_back(d.token_labels[size_t(i)]); continue;
      case Head::question_answering:
        targets->start_positions.push_back(d.start_positions[size_t(i)]);
        targets->end_positions.push_back(d.end_positions[size_t(i)]);
        continue;
      default: break;
    }
    if (d.regression) {
      targets->values.push_back(d.values[size_t(i)]);
    } else if (d.multi_label) {
      // Multi-hot [L] per row, as transformers' BCEWithLogitsLoss takes float targets.
      const size_t row = targets->values.size();
      targets->values.resize(row + size_t(d.num_labels), 0.f);
      for (int32_t id : d.label_sets[size_t(i)]) targets->values[row + size_t(id)] = 1.f;
    } else {
      targets->classes.push_back(d.classes[size_t(i)]);
    }
  }
  *batch = TokenBatch::from_rows(rows, d.pad_id, type_rows);
  if (d.pad_to_max_length && int64_t(longest) < d.max_length) {
    // Fixed-length padding: widen to max_length with pad ids and a zero mask.
    const int64_t B = int64_t(rows.size()), T = d.max_length, T0 = batch->seq_len();
    TokenBatch wide;
    wide.input_ids = Tensor::empty({B, T}, DType::i32);
    wide.attention_mask = Tensor::zeros({B, T}, DType::i32);
    if (d.with_types) wide.token_type_ids = Tensor::zeros({B, T}, DType::i32);
    for (int64_t b = 0; b < B; ++b)
      for (int64_t t = 0; t < T; ++t) {
        const bool in = t < T0;
        wide.input_ids.data<int32_t>()[b * T + t] = in ? batch->input_ids.data<int32_t>()[b * T0 + t] : d.pad_id;
        wide.attention_mask.data<int32_t>()[b * T + t] = in ? batch->attention_mask.data<int32_t>()[b * T0 + t] : 0;
        if (d.with_types && in)
          wide.token_type_ids.data<int32_t>()[b * T + t] = batch->token_type_ids.data<int32_t>()[b * T0 + t];
      }
    *batch = wide;
  }
  if (label_rows.empty()) return;
  // Per-token labels [B * T], -100 over the padding.
  const int64_t T = batch->seq_len();
  for (const auto& row : label_rows) {
    targets->token_labels.insert(targets->token_labels.end(), row.begin(), row.end());
    targets->token_labels.resize(targets->token_labels.size() + size_t(T) - row.size(), kIgnoreIndex);
  }
}

std::vector<std::string> labels_from_data(const Dataset& dataset, bool multi_label) {
  std::set<std::string> distinct;
  for (const auto& e : dataset.examples) {
    if (!multi_label) {
      distinct.insert(e.label);
      continue;
    }
    for (auto& l : split_label_set(e.label, dataset.path + ": record " + std::to_string(e.source_row)))
      distinct.insert(l);
  }
  check(!distinct.empty(), dataset.path + ": no labels in the data to make a head from");
  int64_t max_id = -1;
  bool all_ints = true;
  for (const auto& l : distinct) {
    int64_t v = 0;
    if (!parse_int(l, &v)) {
      all_ints = false;
      break;
    }
    max_id = std::max(max_id, v);
  }
  std::vector<std::string> labels;
  // A ClassLabel feature's names (a Parquet dataset from the Hub) name the ids they cover.
  if (all_ints && !multi_label && !dataset.label_names.empty() && max_id < int64_t(dataset.label_names.size()))
    return dataset.label_names;
  if (all_ints && max_id < 10000) {
    for (int64_t i = 0; i <= std::max<int64_t>(max_id, 1); ++i) labels.push_back("LABEL_" + std::to_string(i));
    return labels;
  }
  labels.assign(distinct.begin(), distinct.end());
  return labels;
}

void check_tokenizer_fits(const Tokenizer& tokenizer, const std::string& given, const std::string& model,
                          int64_t vocab_size) {
  // The tokenizer's ids run from 0 to its size - 1 (added tokens included).
  const int64_t size = int64_t(tokenizer.vocab_size());
  if (vocab_size <= 0 || size <= vocab_size) return;
  const std::string which = given.empty() ? model + "'s own tokenizer" : "-k " + given;
  throw UsageError(which + " has " + std::to_string(size) + " tokens (ids up to " + std::to_string(size - 1) +
                   "), but " + model + " has embeddings for " + std::to_string(vocab_size) +
                   " (config.json's vocab_size): its ids would fall outside them. " +
                   (given.empty() ? std::string("Give -k the tokenizer the model was trained with")
                                  : std::string("Give -k the tokenizer the model was trained with (or leave -k out "
                                                "to use the one in the model's directory)")));
}

}  // namespace tach::train
