// tach tokenize: ids, tokens and offsets for texts, with a model's own tokenizer files.
#include <chrono>
#include <iostream>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "format.h"
#include "tach/error.h"
#include "tach/tokenizer.h"

namespace tach::cli {

namespace {

struct TokenizeOptions {
  std::string tokenizer;
  std::vector<std::string> texts;
  std::string pair;
  bool no_special = false;
  bool json = false;
};

int run_tokenize(const TokenizeOptions& opt) {
  check(!opt.texts.empty(), "no text given: tach tokenize --tokenizer DIR TEXT...");
  const auto t0 = std::chrono::steady_clock::now();
  auto tok = Tokenizer::load(opt.tokenizer);
  const double load_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  nlohmann::json out = nlohmann::json::array();
  if (!opt.json)
    std::cout << "tokenizer   " << opt.tokenizer << ": " << tok->describe() << " (loaded in " << fixed(load_s * 1e3, 1)
              << " ms)\n";
  for (const auto& text : opt.texts) {
    const Encoding e = opt.pair.empty() ? tok->encode(text, !opt.no_special) : tok->encode_pair(text, opt.pair, !opt.no_special);
    if (opt.json) {
      nlohmann::json j;
      j["text"] = text;
      if (!opt.pair.empty()) j["pair"] = opt.pair;
      j["ids"] = e.ids;
      j["tokens"] = e.tokens;
      j["offsets"] = e.offsets;
      j["type_ids"] = e.type_ids;
      j["special_tokens_mask"] = e.special_tokens_mask;
      out.push_back(j);
      continue;
    }
    std::cout << "text        " << nlohmann::json(text).dump() << (opt.pair.empty() ? "" : " + " + nlohmann::json(opt.pair).dump())
              << "\nids         ";
    for (size_t i = 0; i < e.size(); ++i) std::cout << (i ? " " : "") << e.ids[i];
    std::cout << "\ntokens      ";
    for (size_t i = 0; i < e.size(); ++i)
      std::cout << (i ? " " : "") << nlohmann::json(e.tokens[i]).dump() << "@" << e.offsets[i].first << ":"
                << e.offsets[i].second << (e.type_ids[i] ? "/1" : "");
    std::cout << "\ncount       " << e.size() << " tokens; offsets are byte ranges [start:end) in the text\n";
  }
  if (opt.json) std::cout << out.dump(2) << "\n";
  return 0;
}

}  // namespace

Command add_tokenize_command(CLI::App& app) {
  auto opt = std::make_shared<TokenizeOptions>();
  CLI::App* sub = app.add_subcommand("tokenize", "Tokenize texts as Hugging Face tokenizers does; print ids, tokens "
                                                 "and offsets");
  sub->add_option("-k,--tokenizer", opt->tokenizer,
                  "tokenizer.json, or a directory with tokenizer.json (or vocab.txt, or vocab.json + merges.txt)")
      ->required();
  sub->add_option("--pair", opt->pair, "Second sequence, encoded as a pair with each TEXT");
  sub->add_flag("--no-special", opt->no_special, "Do not add the post-processor's special tokens");
  sub->add_flag("--json", opt->json, "Print machine-readable JSON");
  sub->add_option("texts", opt->texts, "Texts to tokenize")->required();
  return {sub, [opt] { return run_tokenize(*opt); }};
}

}  // namespace tach::cli
