// Tokenizers: read what a Hugging Face model ships (tokenizer.json, or vocab.txt, or
// vocab.json + merges.txt) and produce exactly the ids the `tokenizers` library does.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace tach {

// One encoded sequence. Offsets are byte ranges [start, end) into the text given (the Python
// `tokenizers` reports character offsets; convert with the text when you need those).
// Special tokens added by post-processing have the empty range (0, 0).
struct Encoding {
  std::vector<int32_t> ids;
  std::vector<std::string> tokens;
  std::vector<std::pair<uint32_t, uint32_t>> offsets;
  std::vector<int32_t> type_ids;
  std::vector<int32_t> special_tokens_mask;  // 1 for tokens the post-processor added
  std::vector<int32_t> attention_mask;
  // As tokenizers' Encoding.word_ids and sequence_ids: the pre-tokenized word of its sequence a
  // token came from (words count from 0 in each sequence; an added token is a word of its own),
  // and the sequence (0 first, 1 second of a pair); -1 for special tokens and padding.
  std::vector<int32_t> word_ids;
  std::vector<int32_t> sequence_ids;
  // Windows of the tokens truncation cut off (each of the truncated length, overlapping the
  // previous one by `stride` tokens), post-processed and padded like the main one.
  std::vector<Encoding> overflowing;
  size_t size() const { return ids.size(); }
};

enum class Side { right, left };

// As tokenizers' TruncationParams. max_length counts the special tokens the post-processor adds.
struct Truncation {
  enum class Strategy { longest_first, only_first, only_second };
  size_t max_length = 512;
  Strategy strategy = Strategy::longest_first;
  size_t stride = 0;  // tokens shared by consecutive overflowing windows (< max_length)
  Side direction = Side::right;
};

// As tokenizers' PaddingParams: to the longest in a batch, or to a fixed length.
struct Padding {
  enum class Strategy { longest, fixed };
  Strategy strategy = Strategy::longest;
  size_t length = 0;  // for fixed
  Side direction = Side::right;
  size_t pad_to_multiple_of = 0;
  int32_t pad_id = 0;
  int32_t pad_type_id = 0;
  std::string pad_token = "[PAD]";
};

struct EncodeOptions {
  bool add_special_tokens = true;
  std::optional<Truncation> truncation;
  std::optional<Padding> padding;
};

class Tokenizer {
 public:
  // path: a tokenizer.json, or a directory holding tokenizer.json (or vocab.txt, or
  // vocab.json + merges.txt). Errors name the file and, for JSON, the path inside it.
  static std::unique_ptr<Tokenizer> load(const std::string& path);
  virtual ~Tokenizer() = default;

  // Text that is not valid UTF-8 is read with each bad byte as U+FFFD (offsets still index
  // the bytes given).
  virtual Encoding encode(const std::string& text, const EncodeOptions& options) const = 0;
  virtual Encoding encode_pair(const std::string& a, const std::string& b, const EncodeOptions& options) const = 0;
  // Encodes across threads (all of tach's pool); the order of the output is the input's.
  // Padding::Strategy::longest pads to the longest encoding of the batch.
  virtual std::vector<Encoding> encode_batch(const std::vector<std::string>& texts,
                                             const EncodeOptions& options) const = 0;

  Encoding encode(const std::string& text, bool add_special_tokens = true) const {
    return encode(text, EncodeOptions{add_special_tokens, std::nullopt, std::nullopt});
  }
  Encoding encode_pair(const std::string& a, const std::string& b, bool add_special_tokens = true) const {
    return encode_pair(a, b, EncodeOptions{add_special_tokens, std::nullopt, std::nullopt});
  }
  std::vector<Encoding> encode_batch(const std::vector<std::string>& texts, bool add_special_tokens = true) const {
    return encode_batch(texts, EncodeOptions{add_special_tokens, std::nullopt, std::nullopt});
  }
  virtual std::string decode(const std::vector<int32_t>& ids, bool skip_special_tokens = true) const = 0;
  // Tokens (as the vocabulary writes them, or any text) joined by the decoder alone, as
  // transformers' convert_tokens_to_string joins them ("john", "##s" -> "johns").
  virtual std::string decode_tokens(const std::vector<std::string>& tokens) const = 0;

  virtual std::optional<int32_t> token_to_id(const std::string& token) const = 0;
  virtual std::optional<std::string> id_to_token(int32_t id) const = 0;
  virtual size_t vocab_size() const = 0;     // including added tokens
  virtual std::string describe() const = 0;  // "BPE, 151643 tokens + 22 added; NFC; Sequence[Split, ByteLevel]"
};

// The text lowercased code point by code point as the tokenizers library's Lowercase normalizer
// does: what sentence-transformers' do_lower_case puts in front of a tokenizer.
std::string lowercase_text(const std::string& utf8);

}  // namespace tach
