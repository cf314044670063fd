// Sentence embeddings of texts (tach embed): tokenized as sentence-transformers tokenizes them,
// batched by length, pooled by the model; and written to .npy or .jsonl files.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tach/model.h"
#include "tach/tensor.h"
#include "tach/tokenizer.h"

namespace tach {

struct EmbedOptions {
  int64_t batch_size = 32;  // sentence-transformers' default
  int64_t max_length = 0;   // tokens per text, special tokens included (0: the model's max_seq_length)
  // Text put before every input, as sentence-transformers' encode(prompt=..., prompt_name=...):
  // `prompt` itself, else the model's prompt named `prompt_name`, else its default prompt.
  std::optional<std::string> prompt;
  std::string prompt_name;
};

struct Embeddings {
  Tensor vectors;               // [N, embedding_dim] f32, in the order the texts were given
  std::vector<int64_t> tokens;  // per text: tokens fed to the model (after truncation)
  std::vector<bool> truncated;  // per text: cut at max_length
  int64_t max_length = 0;       // the limit applied
  int64_t batches = 0;
  int64_t padded_tokens = 0;  // B × T summed over batches: the work the forward did
  double tokenize_s = 0;      // wall clock, encoding all texts
  double forward_s = 0;       // wall clock, every batch's forward and pooling
  std::string prompt;         // the text put before each input ("" none)
  std::string prompt_name;    // its name in the model's prompts ("" when given as text or none)
};

// --prompt-name checked against the model's prompts (config_sentence_transformers.json, read
// without the weights): a name it does not have is a usage error naming the option and the names
// it has. Nothing to check for an empty name.
void check_prompt_name(const std::string& model, const std::string& prompt_name);

// Texts are sorted longest first and cut into batches (little padding, as sentence-transformers
// does); vectors come back in the input order. An empty text is a row of special tokens only.
// A model that is not an embedding model is an error.
Embeddings embed_texts(const Model& model, const Tokenizer& tokenizer, const std::vector<std::string>& texts,
                       const EmbedOptions& options = {});

// path ending .npy: a float32 [N, E] NumPy array (numpy.load reads it). .jsonl: one object per
// text {"index", "text", "tokens", "truncated", "embedding"}. Written to a temporary name and
// renamed, so a full disk or a kill never leaves a half-written file under the name.
void write_embeddings(const std::string& path, const Embeddings& embeddings, const std::vector<std::string>& texts);

}  // namespace tach
