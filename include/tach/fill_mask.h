// Fill-mask (tach fill-mask): a masked LM's predictions for each mask token of a text, as
// transformers' fill-mask pipeline gives them: the top k tokens by softmax probability at each
// mask, each with its text and the text with the mask filled.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tach/model.h"
#include "tach/tensor.h"
#include "tach/tokenizer.h"

namespace tach {

// What fill-mask needs from a tokenizer beyond its ids, read from the files beside it as
// transformers reads them (tokenizer_config.json, then special_tokens_map.json).
struct MaskTokens {
  std::string mask_token;  // "[MASK]", "<mask>"
  int32_t mask_id = 0;
  // Tokens the pipeline drops from a filled sequence (its pad token; none when the files name none).
  std::optional<int32_t> pad_id;
  // tokenizer_config.json's clean_up_tokenization_spaces ("a ." -> "a."): transformers applies it
  // to every decode, except for a BPE model (it would remove real spaces there).
  bool clean_up_spaces = false;
};

// tokenizer_path: the tokenizer.json (or directory) `tokenizer` was loaded from. A tokenizer whose
// files name no mask token falls back to its own "[MASK]" or "<mask>"; one with neither is an
// error saying that it cannot fill masks.
MaskTokens read_mask_tokens(const std::string& tokenizer_path, const Tokenizer& tokenizer);

// Decodes as transformers' tokenizer.decode does: the tokenizer's decoder, then the clean-up.
std::string decode_as_transformers(const Tokenizer& tokenizer, const MaskTokens& tokens,
                                   const std::vector<int32_t>& ids, bool skip_special_tokens);

struct FillMaskCandidate {
  float score = 0;        // the softmax probability at the mask, over the whole vocabulary
  int32_t token = 0;      // its id
  std::string token_str;  // tokenizer.decode([token]), special tokens kept
  std::string sequence;   // the text's ids with this mask filled (pad ids dropped), decoded
};

struct FillMaskResult {
  std::string text;
  std::vector<int32_t> ids;                           // the encoded text, special tokens included
  std::vector<int64_t> mask_positions;                // indices into ids, in order
  std::vector<std::vector<FillMaskCandidate>> masks;  // per mask position: the top k, best first
};

// Positions of the mask token in ids; an error naming `text` and the mask token when there is none.
std::vector<int64_t> mask_positions(const std::vector<int32_t>& ids, const MaskTokens& tokens, const std::string& text);

// The pipeline's post-processing for one text. ids: [T] the encoded text; mask_logits: [M, V] f32
// on the host, row m the logits at positions[m]. top_k is capped at V. With several masks, each is
// predicted on its own (the others stay masked) and its sequences keep the special tokens, as the
// pipeline does.
std::vector<std::vector<FillMaskCandidate>> fill_mask_candidates(const Tokenizer& tokenizer, const MaskTokens& tokens,
                                                                 const std::vector<int32_t>& ids,
                                                                 const std::vector<int64_t>& positions,
                                                                 const Tensor& mask_logits, int64_t top_k);

// Every text through the model's masked-LM head at its mask tokens only (Model::token_logits_at:
// the last layer and the head run for the masked rows alone), batch_size texts per forward,
// padded on the right (1: one text per forward, as the pipeline runs them by default). A text with
// no mask token, or longer than the model's positions, is an error naming it; a model without a
// masked-LM head is an error naming its head.
std::vector<FillMaskResult> fill_mask(const Model& model, const Tokenizer& tokenizer, const MaskTokens& tokens,
                                      const std::vector<std::string>& texts, int64_t top_k = 5, int64_t batch_size = 1);

}  // namespace tach
