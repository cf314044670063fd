// Post-processing (special tokens, type ids) and decoding (ids back to text).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tach/tokenizer.h"
#include "tokenizer/json_util.h"

namespace tach::tokenizer {

class PostProcessor {
 public:
  virtual ~PostProcessor() = default;
  // Merges a (and b, for pairs) into `out`, adding special tokens when asked.
  virtual void process(Encoding& a, Encoding* b, bool add_special_tokens, const std::string& text_a,
                       const std::string& text_b) const = 0;
  // How many special tokens process() adds, for truncation's budget.
  virtual size_t added_tokens(bool pair) const = 0;
  // tokenizers' TemplateProcessing sets its type ids on the main encoding only: in an overflowing
  // window, the part of a sequence that overflowed keeps the type id it was encoded with (its
  // sequence's index, 0 or 1), whatever the template says.
  virtual bool overflow_keeps_sequence_type_ids() const { return false; }
};

// The default when tokenizer.json has none: concatenation, type 0 then 1.
void concatenate(Encoding& a, Encoding* b);

std::unique_ptr<PostProcessor> make_post_processor(const JsonAt& j);
// BertProcessing for the legacy vocab.txt loader.
std::unique_ptr<PostProcessor> make_bert_processing(const std::string& cls, int32_t cls_id, const std::string& sep,
                                                    int32_t sep_id);

class Decoder {
 public:
  virtual ~Decoder() = default;
  virtual std::string decode(const std::vector<std::string>& tokens) const = 0;
};

// Null: tokens joined with spaces, as tokenizers does without a decoder.
std::unique_ptr<Decoder> make_decoder(const JsonAt& j);
std::unique_ptr<Decoder> make_wordpiece_decoder(const std::string& prefix, bool cleanup);
// Replace, ByteFallback, Fuse, Strip, Sequence (tokenizer/decoders.cc); null for another type.
std::unique_ptr<Decoder> make_chain_decoder(const JsonAt& j);
std::unique_ptr<Decoder> make_byte_level_decoder();

}  // namespace tach::tokenizer
