// The Tokenizer behind tach/tokenizer.h: added tokens → normalizer → pre-tokenizer → model →
// post-processor, each part built from tokenizer.json (tokenizer_json.cc) or legacy files.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tach/tokenizer.h"
#include "tokenizer/added_tokens.h"
#include "tokenizer/models.h"
#include "tokenizer/normalizers.h"
#include "tokenizer/post_processors.h"
#include "tokenizer/pre_tokenizers.h"

namespace tach::tokenizer {

struct Parts {
  std::vector<AddedToken> added;
  std::unique_ptr<Normalizer> normalizer;
  std::unique_ptr<PreTokenizer> pre_tokenizer;
  std::unique_ptr<Model> model;
  std::unique_ptr<PostProcessor> post_processor;
  std::unique_ptr<Decoder> decoder;
  std::string description;
};

std::unique_ptr<Tokenizer> make_tokenizer(Parts parts);
Parts load_tokenizer_json(const std::string& path);
// tokenizer.json's text, read already; errors name `path`.
Parts parse_tokenizer_json(const std::string& text, const std::string& path);
Parts load_legacy(const std::string& dir);

}  // namespace tach::tokenizer
