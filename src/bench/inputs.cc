// What a point feeds the model: synthetic ids at exactly the requested length, or dataset texts
// through the model's tokenizer.
#include <algorithm>
#include <random>

#include "bench/bench_internal.h"
#include "model/checkpoint.h"
#include "model/family.h"
#include "tach/error.h"
#include "train/train_data.h"

namespace tach::bench {

namespace {

// rows padded on the right with pad_id to exactly T. ids: [B, T]  mask: [B, T]
TokenBatch padded(const std::vector<const Encoding*>& rows, int64_t T, const ModelInfo& info) {
  const auto B = static_cast<int64_t>(rows.size());
  TokenBatch b;
  b.input_ids = Tensor::empty({B, T}, DType::i32);
  b.attention_mask = Tensor::zeros({B, T}, DType::i32);
  const bool types = info.type_vocab_size > 0;
  if (types) b.token_type_ids = Tensor::zeros({B, T}, DType::i32);
  for (int64_t r = 0; r < B; ++r) {
    const Encoding& e = *rows[size_t(r)];
    int32_t* ids = b.input_ids.data<int32_t>() + r * T;
    int32_t* mask = b.attention_mask.data<int32_t>() + r * T;
    for (int64_t t = 0; t < T; ++t) {
      const bool real = t < int64_t(e.ids.size());
      ids[t] = real ? e.ids[size_t(t)] : info.pad_token_id;
      mask[t] = real ? 1 : 0;
      if (types && real) b.token_type_ids.data<int32_t>()[r * T + t] = e.type_ids[size_t(t)];
    }
  }
  return b;
}

}  // namespace

TextSource read_texts(const BenchConfig& config) {
  TextSource ts;
  check(!config.dataset.path.empty(), "texts need a dataset: pass --dataset FILE");
  Dataset d = read_dataset(config.dataset);
  ts.examples = std::move(d.examples);
  shuffle_examples(ts.examples, config.seed);
  if (config.limit > 0 && int64_t(ts.examples.size()) > config.limit) ts.examples.resize(size_t(config.limit));
  ts.name = "dataset " + config.dataset.path + (d.split.empty() ? "" : " (split " + d.split + ")");
  return ts;
}

void attach_tokenizer(TextSource& ts, const BenchConfig& config, const ModelInfo& info) {
  ts.tokenizer = Tokenizer::load(tokenizer_path_for(info, config.tokenizer));
}

void check_text_inputs(const BenchConfig& config) {
  (void)read_texts(config);
  const model::ModelLocation location = model::resolve_model(config.model);
  std::string path = config.tokenizer;
  if (path.empty()) {
    check(!location.dir.empty(), missing_tokenizer_message(config.model, model::family_of(location).tokenizer_hint));
    path = location.dir;
  }
  const std::unique_ptr<Tokenizer> tokenizer = Tokenizer::load(path);
  // Ids past the model's embeddings would stop the pass at the first row holding one. A model tach
  // cannot summarize (another engine's file) has no vocabulary to compare here: its loader checks.
  int64_t vocab_size = 0;
  try {
    vocab_size = model::summarize_architecture(location).V;
  } catch (const Error&) {}
  train::check_tokenizer_fits(*tokenizer, config.tokenizer, config.model, vocab_size);
}

TokenBatch synthetic_batch(const ModelInfo& info, int64_t batch, int64_t seq_len, uint64_t seed) {
  check(batch > 0 && seq_len > 0, "batch size and sequence length must be positive");
  check(info.max_positions <= 0 || seq_len <= info.max_positions,
        "sequence length " + std::to_string(seq_len) + " is longer than the model's " +
            std::to_string(info.max_positions) + " positions (max_position_embeddings)");
  std::mt19937_64 rng(seed);
  // Past BERT's special and unused tokens, like real words; small vocabularies use all ids.
  const int64_t lo = info.vocab_size > 2000 ? 1000 : 0;
  std::uniform_int_distribution<int32_t> pick(int32_t(lo), int32_t(info.vocab_size - 1));
  TokenBatch b;
  b.input_ids = Tensor::empty({batch, seq_len}, DType::i32);
  b.attention_mask = Tensor::empty({batch, seq_len}, DType::i32);
  for (int64_t i = 0; i < batch * seq_len; ++i) {
    b.input_ids.data<int32_t>()[i] = pick(rng);
    b.attention_mask.data<int32_t>()[i] = 1;
  }
  if (info.type_vocab_size > 0) b.token_type_ids = Tensor::zeros({batch, seq_len}, DType::i32);
  return b;
}

TokenBatch text_batch(const TextSource& texts, const ModelInfo& info, const std::vector<size_t>& rows_wanted,
                      int64_t max_length, bool pad_to_longest) {
  check(!texts.examples.empty(), "no texts to make a batch from");
  check(info.max_positions <= 0 || max_length <= info.max_positions,
        "max_length " + std::to_string(max_length) + " is longer than the model's " +
            std::to_string(info.max_positions) + " positions (max_position_embeddings)");
  EncodeOptions eo;
  eo.truncation = Truncation{};
  eo.truncation->max_length = size_t(max_length);
  std::vector<Encoding> enc;
  enc.reserve(rows_wanted.size());
  const bool pairs = !texts.examples.front().text_pair.empty();
  for (size_t i : rows_wanted) {
    const Example& e = texts.examples.at(i);
    enc.push_back(pairs ? texts.tokenizer->encode_pair(e.text, e.text_pair, eo) : texts.tokenizer->encode(e.text, eo));
  }
  std::vector<const Encoding*> rows;
  int64_t longest = 1;
  for (const auto& e : enc) {
    rows.push_back(&e);
    longest = std::max<int64_t>(longest, int64_t(e.ids.size()));
  }
  return padded(rows, pad_to_longest ? longest : max_length, info);
}

}  // namespace tach::bench
