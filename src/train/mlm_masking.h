// Masked-language-model inputs as transformers' DataCollatorForLanguageModeling makes them
// (torch_mask_tokens): each token that is not special (nor padding) is chosen with probability
// `probability` (0.15); a chosen token's label is its id, every other label -100; of the chosen,
// 80% become the mask token, 10% a random token of the vocabulary, 10% stay as they are.
//
// transformers draws from torch's generator, which tach does not reproduce bit for bit. tach's
// draws are counter-based instead: every decision at position i of an example is a hash of
// (seed, epoch, example, i, which draw), so an example's masks depend neither on the batch it
// lands in, its padding, nor the thread count, are new every epoch (dynamic masking, as the
// collator re-masks each time it sees a batch), and a resumed run draws exactly the masks of an
// uninterrupted one.
#pragma once

#include <cstdint>

namespace tach::train {

struct MlmMasking {
  double probability = 0.15;    // --mlm-probability
  double mask_replace = 0.8;    // of the chosen: the mask token
  double random_replace = 0.1;  // of the chosen: a random token (the rest keep theirs)
  int32_t mask_token_id = -1;
  int64_t vocab_size = 0;  // random tokens are drawn from [0, vocab_size): len(tokenizer)
};

// The key of one example's masks in one epoch.
uint64_t mlm_mask_key(uint64_t seed, int64_t epoch, int64_t example);

// ids [T] in place (the model's inputs), labels [T] out (-100 where not chosen), special [T]:
// 1 where the token is special or padding (never chosen). Returns how many were chosen.
int64_t mask_tokens(int32_t* ids, int32_t* labels, const int32_t* special, int64_t T, const MlmMasking& masking,
                    uint64_t key);

// Checks the settings, naming what is wrong: a probability outside (0, 1), no mask token.
void validate_mlm_masking(const MlmMasking& masking);

}  // namespace tach::train
