// tach fill-mask: a masked LM's top tokens for each mask token of a text, as transformers'
// fill-mask pipeline gives them (score, token, token_str, sequence).
#include <chrono>
#include <iostream>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "format.h"
#include "task_output.h"
#include "tach/error.h"
#include "tach/fill_mask.h"
#include "tach/model.h"
#include "tach/monitor.h"
#include "tach/runtime.h"
#include "tach/stats.h"
#include "tach/tokenizer.h"
#include "usage.h"

namespace tach::cli {

namespace {

struct FillMaskOptions {
  std::string model;
  std::vector<std::string> texts;
  std::string tokenizer;  // default: the model directory's
  int64_t top_k = 5;      // the pipeline's default
  int64_t batch = 1;      // texts per forward; the pipeline's default
  int warmup = 0;         // untimed runs of every text before the timed ones
  int repeat = 1;         // timed runs of every text
  int threads = 0;
  std::string compute = "f32";
  std::string device = "cpu";
  uint64_t seed = 0;
  bool json = false;
};

nlohmann::json candidates_json(const std::vector<FillMaskCandidate>& candidates) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& c : candidates)
    out.push_back({{"score", c.score}, {"token", c.token}, {"token_str", c.token_str}, {"sequence", c.sequence}});
  return out;
}

int run_fill_mask(const FillMaskOptions& opt) {
  using clock = std::chrono::steady_clock;
  if (opt.threads > 0) set_threads(opt.threads);
  usage_check(!opt.texts.empty(), "nothing to fill: give --text with a mask token in it (repeat for more texts)");
  check_dtype_on_device(opt.compute, opt.device);
  LoadOptions lo;
  lo.seed = opt.seed;
  lo.device = parse_device(opt.device);
  lo.compute = parse_compute_dtype(opt.compute);
  // The checkpoint's own head: fill-mask needs the masked LM's, as published (a new one would be random).
  const auto t0 = clock::now();
  auto model = load_model(opt.model, lo);
  const ModelInfo& info = model->info();
  const std::string tokenizer_path = tokenizer_path_for(info, opt.tokenizer);
  const auto tokenizer = Tokenizer::load(tokenizer_path);
  const MaskTokens tokens = read_mask_tokens(tokenizer_path, *tokenizer);
  const double load_s = std::chrono::duration<double>(clock::now() - t0).count();
  std::vector<FillMaskResult> results;
  for (int i = 0; i < opt.warmup; ++i) results = fill_mask(*model, *tokenizer, tokens, opt.texts, opt.top_k, opt.batch);
  CpuLoadWindow load_window;    // other processes' CPU use while the texts run: the time is the machine's too
  std::vector<double> seconds;  // each run: every text tokenized, its forwards and its predictions
  for (int i = 0; i < opt.repeat; ++i) {
    const auto t1 = clock::now();
    results = fill_mask(*model, *tokenizer, tokens, opt.texts, opt.top_k, opt.batch);
    seconds.push_back(std::chrono::duration<double>(clock::now() - t1).count());
    load_window.sample();
  }
  const CpuLoad load = load_window.finish(threads());
  const Summary run = summarize(seconds);
  const double run_s = run.median;
  const size_t forwards = (opt.texts.size() + size_t(opt.batch) - 1) / size_t(opt.batch);

  if (opt.json) {
    nlohmann::json j;
    j["schema"] = "tach.fill_mask/1";
    j["model"] = model_json(info);
    j["tokenizer"] = {{"path", tokenizer_path}, {"mask_token", tokens.mask_token}, {"mask_token_id", tokens.mask_id}};
    j["top_k"] = opt.top_k;
    j["results"] = nlohmann::json::array();
    for (const auto& r : results) {
      nlohmann::json masks = nlohmann::json::array();
      for (size_t m = 0; m < r.masks.size(); ++m)
        masks.push_back({{"position", r.mask_positions[m]}, {"predictions", candidates_json(r.masks[m])}});
      j["results"].push_back({{"text", r.text}, {"input_ids", r.ids}, {"masks", masks}});
    }
    // fill_s: the median run (every text: tokenized, its forwards at the masks, the predictions).
    j["timing"] = {{"unit", "s"},          {"load_s", load_s},          {"fill_s", run_s},
                   {"warmup", opt.warmup}, {"repetitions", opt.repeat}, {"min", run.min},
                   {"max", run.max},       {"samples", seconds},        {"forwards", forwards}};
    j["load"] = cpu_load_json(load);
    std::cout << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return 0;
  }

  print_model_lines(std::cout, info);
  std::cout << "tokenizer   " << tokenizer_path << " (mask token " << tokens.mask_token << ", id " << tokens.mask_id
            << ")\n"
            << "time        " << fixed(load_s, 2) << " s to load, " << fixed(run_s * 1e3, 1) << " ms for "
            << results.size() << (results.size() == 1 ? " text" : " texts") << " ("
            << (forwards == results.size() ? std::string("one forward each")
                                           : std::to_string(forwards) + (forwards == 1 ? " forward" : " forwards"))
            << (opt.repeat > 1 ? "; the median of " + std::to_string(opt.repeat) + " runs, " + fixed(run.min * 1e3, 1) +
                                     "-" + fixed(run.max * 1e3, 1) + " ms"
                               : std::string())
            << ")\n";
  print_load_lines(std::cout, load, "the time");
  for (size_t i = 0; i < results.size(); ++i) {
    const FillMaskResult& r = results[i];
    std::cout << "\ntext " << (i + 1) << "      "
              << nlohmann::json(r.text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    for (size_t m = 0; m < r.masks.size(); ++m) {
      if (r.masks.size() > 1)
        std::cout << "mask " << (m + 1) << "      token " << r.mask_positions[m]
                  << " (each mask is predicted with the others left masked)\n";
      for (const auto& c : r.masks[m]) {
        // 4 significant digits, as small as the scores run ("3.142e-05"); --json has every digit.
        const std::string score = significant(c.score);
        std::cout << "  " << score << std::string(9 - std::min<size_t>(9, score.size()), ' ') << "  "
                  << nlohmann::json(c.token_str).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << " ("
                  << c.token << ")  " << c.sequence << "\n";
      }
    }
  }
  return 0;
}

}  // namespace

Command add_fill_mask_command(CLI::App& app) {
  auto opt = std::make_shared<FillMaskOptions>();
  CLI::App* sub = app.add_subcommand("fill-mask",
                                     "A masked LM's top tokens for each mask token ([MASK], <mask>) of a text, with "
                                     "their probabilities and the text filled in, as transformers' fill-mask "
                                     "pipeline gives them");
  sub->add_option("-m,--model", opt->model,
                  "A masked-LM checkpoint (config.json architecture *ForMaskedLM): preset:NAME, a directory with "
                  "config.json and model.safetensors, or a hub id ORG/NAME[@REV] in the Hugging Face cache")
      ->required();
  sub->add_option("--text", opt->texts,
                  "A text with one or more mask tokens (repeat for more texts); each mask is predicted on its own, "
                  "the others left masked")
      ->required();
  sub->add_option("--top-k", opt->top_k, "Predictions per mask, best first (at most the vocabulary)")
      ->capture_default_str()
      ->check(positive_count("--top-k", "--top-k values"));
  sub->add_option(kBatchOption, opt->batch,
                  "Texts per forward, padded to the longest (the last layer and the head run at the masks alone)")
      ->capture_default_str()
      ->check(positive_count("batch size", "batch sizes"));
  sub->add_option("--warmup", opt->warmup, "Untimed runs of every text before the timed ones")
      ->capture_default_str()
      ->check(non_negative_count("--warmup"));
  sub->add_option("--repeat", opt->repeat,
                  "Timed runs of every text; the time is their median (each: tokenizing, the forwards, the "
                  "predictions)")
      ->capture_default_str()
      ->check(positive_count("--repeat", "--repeat values"));
  sub->add_option("-k,--tokenizer", opt->tokenizer,
                  "tokenizer.json or a directory (default: the model directory's); its mask token comes from "
                  "tokenizer_config.json or special_tokens_map.json beside it, else [MASK] or <mask>");
  sub->add_option("-t,--threads", opt->threads,
                  "Threads (default: the cores other processes leave free at start, or OMP_NUM_THREADS)")
      ->check(thread_count());
  sub->add_option(
         "--dtype", opt->compute,
         "Compute dtype: f32, bf16, int8 (the linears quantized: dynamically on the cpu, weight-only on cuda) or nf4 "
         "(4-bit weights); f16 too on cuda")
      ->capture_default_str()
      ->check(compute_dtype_name("--dtype"));
  sub->add_option("--device", opt->device, "cpu, cuda or cuda:N")->capture_default_str()->check(device_name(false));
  sub->add_option("--seed", opt->seed, "Seed for preset weights")->capture_default_str();
  sub->add_flag("--json", opt->json, "Print machine-readable JSON (schema tach.fill_mask/1)");
  return {sub, [opt] { return run_fill_mask(*opt); }};
}

}  // namespace tach::cli
