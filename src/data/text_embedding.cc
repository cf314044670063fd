// embed_texts: texts → token batches (longest first) → Model::embed → vectors in input order.
#include <algorithm>
#include <map>
#include <chrono>
#include <numeric>

#include "model/checkpoint.h"
#include "model/sentence_config.h"
#include "tach/embed.h"
#include "tach/error.h"

namespace tach {

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The usage error for a prompt name the model lacks: the option, the name and the names it has.
std::string unknown_prompt(const std::string& model, const std::string& name,
                           const std::map<std::string, std::string>& prompts) {
  std::string known;
  for (const auto& [n, text] : prompts) known += (known.empty() ? "" : ", ") + n;
  return "--prompt-name \"" + name + "\" is not one of " + model + "'s prompts (" +
         (known.empty() ? "it has none in config_sentence_transformers.json: drop --prompt-name, or give the text "
                          "with --prompt"
                        : known) +
         ")";
}

}  // namespace

void check_prompt_name(const std::string& model, const std::string& prompt_name) {
  if (prompt_name.empty()) return;
  const model::ModelLocation where = model::resolve_model(model);
  std::map<std::string, std::string> prompts;
  if (!where.dir.empty())
    if (const auto config = model::read_sentence_embedding_config(where.dir)) prompts = config->prompts;
  usage_check(prompts.count(prompt_name) > 0, unknown_prompt(model, prompt_name, prompts));
}

Embeddings embed_texts(const Model& model, const Tokenizer& tokenizer, const std::vector<std::string>& texts,
                       const EmbedOptions& options) {
  const ModelInfo& info = model.info();
  check(info.embedding, info.spec + " (" + info.architecture +
                            ") is not an embedding model: it has a head and no sentence-transformers config "
                            "(modules.json)");
  check(!texts.empty(), "no texts to embed");
  check(options.batch_size > 0, "--batch-size must be positive, got " + std::to_string(options.batch_size));
  Embeddings out;
  out.max_length = options.max_length > 0 ? options.max_length
                                          : (info.max_seq_length > 0 ? info.max_seq_length : info.max_positions);
  check(info.max_positions <= 0 || out.max_length <= info.max_positions,
        "--max-length " + std::to_string(out.max_length) + " is more than the model's " +
            std::to_string(info.max_positions) + " positions");

  // Truncation as sentence-transformers asks the tokenizer for it: longest_first at max_length,
  // special tokens counted.
  const auto t_tok = std::chrono::steady_clock::now();
  EncodeOptions eo;
  eo.truncation = Truncation{};
  eo.truncation->max_length = size_t(out.max_length);
  // The prompt, as sentence-transformers picks it: given text, a named prompt, or the default one.
  if (options.prompt) {
    out.prompt = *options.prompt;
  } else {
    out.prompt_name = options.prompt_name.empty() ? info.default_prompt_name : options.prompt_name;
    if (!out.prompt_name.empty()) {
      const auto it = info.prompts.find(out.prompt_name);
      if (it == info.prompts.end()) usage_check(false, unknown_prompt(info.spec, out.prompt_name, info.prompts));
      out.prompt = it->second;
    }
  }
  std::vector<std::string> inputs;
  const bool rewrite = info.lowercase_input || !out.prompt.empty();
  if (rewrite) {
    inputs.reserve(texts.size());
    for (const auto& t : texts)
      inputs.push_back(info.lowercase_input ? lowercase_text(out.prompt + t) : out.prompt + t);
  }
  const std::vector<Encoding> enc = tokenizer.encode_batch(rewrite ? inputs : texts, eo);
  out.tokenize_s = seconds_since(t_tok);

  const size_t N = texts.size();
  out.tokens.resize(N);
  out.truncated.resize(N);
  for (size_t i = 0; i < N; ++i) {
    out.tokens[i] = int64_t(enc[i].ids.size());
    out.truncated[i] = !enc[i].overflowing.empty();
    // An empty text is [CLS] [SEP] where the tokenizer adds special tokens (BERT's), and embeds as
    // sentence-transformers embeds it. Without them it has no token at all: its row would be
    // padding only, which pools to zeros here and to a padding token's state in
    // sentence-transformers, neither of them a vector of the text. Refused, naming the row.
    check(out.tokens[i] > 0,
          "text " + std::to_string(i) + " (counting from 0, in the order given) is empty after tokenization: \"" +
              texts[i].substr(0, 40) + "\" gives no tokens, and " + info.spec +
              "'s tokenizer adds no special tokens around a text, so there is nothing to embed; give it some text, "
              "a --prompt, or leave it out");
  }
  std::vector<size_t> order(N);
  std::iota(order.begin(), order.end(), size_t(0));
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return out.tokens[a] > out.tokens[b]; });

  out.vectors = Tensor::empty({int64_t(N), info.embedding_dim}, DType::f32);
  float* dst = out.vectors.data<float>();
  const bool types = info.type_vocab_size > 0;
  // A decoder whose config names no pad token cannot pad a batch: one text at a time.
  const auto batch_size = size_t(info.has_pad_token ? options.batch_size : 1);
  for (size_t start = 0; start < N; start += batch_size) {
    const size_t end = std::min(N, start + batch_size);
    std::vector<std::vector<int32_t>> rows, type_rows;
    for (size_t k = start; k < end; ++k) {
      rows.push_back(enc[order[k]].ids);
      if (types) type_rows.push_back(enc[order[k]].type_ids);
    }
    const TokenBatch batch = TokenBatch::from_rows(rows, info.pad_token_id, type_rows);
    const auto t0 = std::chrono::steady_clock::now();
    const Tensor v = model.embed(batch);  // [b, E]
    out.forward_s += seconds_since(t0);
    ++out.batches;
    out.padded_tokens += batch.batch() * batch.seq_len();
    const float* src = v.data<float>();
    for (size_t k = start; k < end; ++k)
      std::copy_n(src + int64_t(k - start) * info.embedding_dim, info.embedding_dim,
                  dst + int64_t(order[k]) * info.embedding_dim);
  }
  return out;
}

}  // namespace tach
