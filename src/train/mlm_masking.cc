#include "train/mlm_masking.h"

#include <string>

#include "tach/error.h"
#include "tach/plain_number.h"
#include "train/loss.h"

namespace tach::train {

namespace {

// splitmix64's finaliser.
uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// The draws made at each position, in the collator's order.
enum Draw : uint64_t { choose = 1, replace_with_mask = 2, replace_with_random = 3, random_token = 4 };

uint64_t bits(uint64_t key, int64_t i, Draw d) { return mix64(key ^ mix64(uint64_t(i) * 4 + d)); }

// Uniform in [0, 1) with 53 bits.
double uniform(uint64_t key, int64_t i, Draw d) { return double(bits(key, i, d) >> 11) * 0x1.0p-53; }

}  // namespace

uint64_t mlm_mask_key(uint64_t seed, int64_t epoch, int64_t example) {
  return mix64(mix64(mix64(seed ^ 0x6d6c6d5f6d61736bull) + uint64_t(epoch)) +
               uint64_t(example) * 0x9e3779b97f4a7c15ull);
}

int64_t mask_tokens(int32_t* ids, int32_t* labels, const int32_t* special, int64_t T, const MlmMasking& m,
                    uint64_t key) {
  // The collator's conditional probabilities: mask_replace of the chosen, then random_replace
  // scaled to what the mask left (0.1 / 0.2 = 0.5).
  const double random_of_rest = m.mask_replace < 1 ? m.random_replace / (1 - m.mask_replace) : 0;
  int64_t chosen = 0;
  for (int64_t i = 0; i < T; ++i) {
    labels[i] = kIgnoreIndex;
    if (special[i] || !(uniform(key, i, choose) < m.probability)) continue;
    ++chosen;
    labels[i] = ids[i];
    if (uniform(key, i, replace_with_mask) < m.mask_replace) ids[i] = m.mask_token_id;
    else if (uniform(key, i, replace_with_random) < random_of_rest)
      ids[i] = int32_t(bits(key, i, random_token) % uint64_t(m.vocab_size));
  }
  return chosen;
}

void validate_mlm_masking(const MlmMasking& m) {
  check(m.probability > 0 && m.probability < 1,
        "--mlm-probability must be between 0 and 1 (exclusive), not " + plain_number(m.probability));
  check(m.mask_token_id >= 0,
        "masked-language-model training needs a mask token, and the tokenizer has none ([MASK] or <mask>)");
  check(m.vocab_size > 0, "masked-language-model training needs the vocabulary's size");
}

}  // namespace tach::train
