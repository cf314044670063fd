// tach tokenize: ids, tokens and offsets for texts, with a model's own tokenizer files.
#include <chrono>
#include <fstream>
#include <iostream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "format.h"
#include "tach/error.h"
#include "tach/tokenizer.h"

namespace tach::cli {

namespace {

struct TokenizeOptions {
  std::string tokenizer;
  std::vector<std::string> texts;  // positionals, then --text values
  std::vector<std::string> flag_texts;
  std::string file;  // one text per line; "-" is standard input
  std::string pair;
  bool no_special = false;
  bool json = false;
  size_t max_length = 0;  // 0: no truncation
  std::string strategy = "longest_first";
  size_t stride = 0;
  std::string truncation_side = "right";
  size_t pad_to = 0;  // 0: no padding
  std::string padding_side = "right";
  size_t pad_multiple = 0;
};

EncodeOptions encode_options(const TokenizeOptions& opt, const Tokenizer& tok) {
  EncodeOptions eo;
  eo.add_special_tokens = !opt.no_special;
  if (opt.max_length > 0) {
    Truncation t;
    t.max_length = opt.max_length;
    t.stride = opt.stride;
    t.direction = opt.truncation_side == "left" ? Side::left : Side::right;
    if (opt.strategy == "only_first") t.strategy = Truncation::Strategy::only_first;
    else if (opt.strategy == "only_second") t.strategy = Truncation::Strategy::only_second;
    else
      check(opt.strategy == "longest_first",
            "--truncation '" + opt.strategy + "': expected longest_first, only_first or only_second");
    eo.truncation = t;
  }
  if (opt.pad_to > 0 || opt.pad_multiple > 0) {
    Padding p;
    p.strategy = opt.pad_to > 0 ? Padding::Strategy::fixed : Padding::Strategy::longest;
    p.length = opt.pad_to;
    p.direction = opt.padding_side == "left" ? Side::left : Side::right;
    p.pad_to_multiple_of = opt.pad_multiple;
    // The pad token the tokenizer knows: [PAD], <pad>, or <|endoftext|> for Qwen2.
    for (const char* name : {"[PAD]", "<pad>", "<|endoftext|>"})
      if (auto id = tok.token_to_id(name)) {
        p.pad_id = *id;
        p.pad_token = name;
        break;
      }
    eo.padding = p;
  }
  return eo;
}

// Splits bytes into lines at '\n' only: every other byte, '\r' and NUL included, stays in its text.
// A final line without '\n' is a text; the newline that ends the file does not start another.
std::vector<std::string> split_lines(const std::string& bytes) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < bytes.size()) {
    const size_t end = bytes.find('\n', start);
    if (end == std::string::npos) {
      lines.push_back(bytes.substr(start));
      break;
    }
    lines.push_back(bytes.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

std::string read_all(const std::string& path) {
  if (path == "-") return {std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>()};
  std::ifstream in(path, std::ios::binary);
  check(static_cast<bool>(in), "--file " + path + ": cannot open it");
  std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  check(!in.bad(), "--file " + path + ": read failed");
  return bytes;
}

// The texts in the order given: positionals (a lone "-" reads standard input), --text values,
// then --file lines.
std::vector<std::string> gather_texts(const TokenizeOptions& opt) {
  std::vector<std::string> texts;
  if (opt.texts.size() == 1 && opt.texts[0] == "-") {
    check(opt.file != "-", "standard input given twice ('-' and --file -)");
    texts = split_lines(read_all("-"));
  } else {
    texts = opt.texts;
  }
  texts.insert(texts.end(), opt.flag_texts.begin(), opt.flag_texts.end());
  if (!opt.file.empty()) {
    auto lines = split_lines(read_all(opt.file));
    texts.insert(texts.end(), lines.begin(), lines.end());
  }
  return texts;
}

int run_tokenize(TokenizeOptions opt) {
  opt.texts = gather_texts(opt);
  check(!opt.texts.empty(),
        "no text given: tach tokenize --tokenizer DIR TEXT... (or --text T, --file PATH, or - "
        "for standard input)");
  const auto t0 = std::chrono::steady_clock::now();
  auto tok = Tokenizer::load(opt.tokenizer);
  const double load_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  nlohmann::json out = nlohmann::json::array();
  if (!opt.json)
    std::cout << "tokenizer   " << opt.tokenizer << ": " << tok->describe() << " (loaded in " << fixed(load_s * 1e3, 1)
              << " ms)\n";
  const EncodeOptions eo = encode_options(opt, *tok);
  std::vector<Encoding> encodings;
  if (opt.pair.empty()) {
    encodings = tok->encode_batch(opt.texts, eo);  // padding to the longest is across the texts
  } else {
    for (const auto& text : opt.texts) encodings.push_back(tok->encode_pair(text, opt.pair, eo));
  }
  for (size_t k = 0; k < opt.texts.size(); ++k) {
    const std::string& text = opt.texts[k];
    const Encoding& e = encodings[k];
    if (opt.json) {
      nlohmann::json j;
      j["text"] = text;
      if (!opt.pair.empty()) j["pair"] = opt.pair;
      j["ids"] = e.ids;
      j["tokens"] = e.tokens;
      j["offsets"] = e.offsets;
      j["type_ids"] = e.type_ids;
      j["special_tokens_mask"] = e.special_tokens_mask;
      j["attention_mask"] = e.attention_mask;
      j["overflowing"] = nlohmann::json::array();
      for (const auto& o : e.overflowing) j["overflowing"].push_back(o.ids);
      out.push_back(j);
      continue;
    }
    std::cout << "text        " << nlohmann::json(text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
              << (opt.pair.empty()
                      ? ""
                      : " + " + nlohmann::json(opt.pair).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace))
              << "\nids         ";
    for (size_t i = 0; i < e.size(); ++i) std::cout << (i ? " " : "") << e.ids[i];
    std::cout << "\ntokens      ";
    for (size_t i = 0; i < e.size(); ++i)
      std::cout << (i ? " " : "")
                << nlohmann::json(e.tokens[i]).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "@"
                << e.offsets[i].first << ":" << e.offsets[i].second << (e.type_ids[i] ? "/1" : "");
    std::cout << "\ncount       " << e.size() << " tokens; offsets are byte ranges [start:end) in the text\n";
    for (size_t w = 0; w < e.overflowing.size(); ++w) {
      std::cout << "overflow " << w + 1 << "  ";
      for (size_t i = 0; i < e.overflowing[w].size(); ++i) std::cout << (i ? " " : "") << e.overflowing[w].ids[i];
      std::cout << "\n";
    }
  }
  if (opt.json) std::cout << out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  return 0;
}

}  // namespace

Command add_tokenize_command(CLI::App& app) {
  auto opt = std::make_shared<TokenizeOptions>();
  CLI::App* sub = app.add_subcommand("tokenize",
                                     "Tokenize texts as Hugging Face tokenizers does; print ids, tokens "
                                     "and offsets");
  sub->add_option("-k,--tokenizer", opt->tokenizer,
                  "tokenizer.json, or a directory with tokenizer.json (or vocab.txt, or vocab.json + merges.txt)")
      ->required();
  sub->add_option("--pair", opt->pair, "Second sequence, encoded as a pair with each TEXT");
  sub->add_flag("--no-special", opt->no_special, "Do not add the post-processor's special tokens");
  sub->add_flag("--json", opt->json, "Print machine-readable JSON");
  sub->add_option("--max-length", opt->max_length, "Truncate to this many tokens, special tokens included");
  sub->add_option("--truncation", opt->strategy, "longest_first, only_first or only_second")->capture_default_str();
  sub->add_option("--stride", opt->stride, "Tokens shared by consecutive overflowing windows")->capture_default_str();
  sub->add_option("--truncation-side", opt->truncation_side, "right or left")->capture_default_str();
  sub->add_option("--pad-to", opt->pad_to, "Pad to this length (fixed)");
  sub->add_option("--pad-multiple", opt->pad_multiple, "Pad to a multiple of this (alone: pad to the longest text)");
  sub->add_option("--padding-side", opt->padding_side, "right or left")->capture_default_str();
  sub->add_option("--text", opt->flag_texts, "A text (repeat for more); --text=-x for a text that starts with '-'");
  sub->add_option("--file", opt->file,
                  "Texts, one per line (split at \\n only; every other byte kept); - reads "
                  "standard input");
  sub->add_option("texts", opt->texts,
                  "Texts to tokenize, byte for byte; after -- a text may start with '-'; a lone - "
                  "reads texts from standard input, one per line");
  return {sub, [opt] { return run_tokenize(*opt); }};
}

}  // namespace tach::cli
