// Tokenizer throughput: encodes every text of a JSONL file ({"text": ...} per line) W times
// untimed, then R times timed, on T threads; prints JSON with each timed pass, the median,
// min and max, and tokens/s from the median. scripts/peers/tokenizer_peers.py alternates it
// with Hugging Face `tokenizers` on the same file.
//   tach_bench_tokenizer TOKENIZER TEXTS.jsonl [--threads T] [--repeat R] [--warmup W] [--no-special]
#include <chrono>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tach/error.h"
#include "tach/runtime.h"
#include "tach/stats.h"
#include "tach/tokenizer.h"

int main(int argc, char** argv) {
  using clock = std::chrono::steady_clock;
  if (argc < 3) {
    std::cerr
        << "usage: tach_bench_tokenizer TOKENIZER TEXTS.jsonl [--threads T] [--repeat R] [--warmup W] [--no-special]\n";
    return 2;
  }
  int threads = 1, repeat = 5, warmup = 1;
  bool special = true;
  for (int i = 3; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--threads" && i + 1 < argc) threads = std::stoi(argv[++i]);
    else if (a == "--repeat" && i + 1 < argc) repeat = std::stoi(argv[++i]);
    else if (a == "--warmup" && i + 1 < argc) warmup = std::stoi(argv[++i]);
    else if (a == "--no-special") special = false;
    else {
      std::cerr << "unknown argument " << a << "\n";
      return 2;
    }
  }
  try {
    std::vector<std::string> texts;
    std::ifstream in(argv[2]);
    if (!in) throw tach::Error(std::string(argv[2]) + ": cannot open");
    for (std::string line; std::getline(in, line);)
      if (!line.empty()) texts.push_back(nlohmann::json::parse(line).at("text").get<std::string>());
    const auto t0 = clock::now();
    auto tok = tach::Tokenizer::load(argv[1]);
    const double load_s = std::chrono::duration<double>(clock::now() - t0).count();
    tach::set_threads(threads);
    size_t tokens = 0;
    for (int w = 0; w < warmup; ++w) tok->encode_batch(texts, special);
    std::vector<double> seconds;
    for (int r = 0; r < repeat; ++r) {
      const auto a = clock::now();
      const auto enc = tok->encode_batch(texts, special);
      seconds.push_back(std::chrono::duration<double>(clock::now() - a).count());
      tokens = 0;
      for (const auto& e : enc) tokens += e.size();
    }
    const tach::Summary s = tach::summarize(seconds);
    nlohmann::json j = {{"tokenizer", argv[1]},
                        {"texts", texts.size()},
                        {"tokens", tokens},
                        {"threads", threads},
                        {"warmup", warmup},
                        {"repeat", repeat},
                        {"seconds", seconds},
                        {"median_s", s.median},
                        {"min_s", s.min},
                        {"max_s", s.max},
                        {"tokens_per_s", double(tokens) / s.median},
                        {"load_s", load_s}};
    std::cout << j.dump() << "\n";
  } catch (const std::exception& e) {
    std::cerr << "tach_bench_tokenizer: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
