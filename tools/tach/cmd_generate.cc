// tach generate: greedy decoding with a key/value cache, timed as prefill (time to first
// token) and decode (time per output token).
#include <algorithm>
#include <chrono>
#include <iostream>
#include <nlohmann/json.hpp>
#include <random>

#include "commands.h"
#include "format.h"
#include "tach/parameter_count.h"
#include "tach/error.h"
#include "tach/model.h"
#include "tach/profile.h"
#include "tach/runtime.h"
#include "tach/stats.h"
#include "tach/tokenizer.h"
#include "tf32_option.h"
#include "usage.h"

namespace tach::cli {

namespace {

struct GenerateFlags {
  std::string model = "preset:qwen2-tiny";
  std::string tokenizer;
  std::vector<std::string> texts;
  std::vector<std::string> ids;
  int64_t batch = 1, prompt_len = 128, max_new_tokens = 32;
  bool ignore_eos = false, json = false, no_cuda_graphs = false;
  int warmup = 1;
  std::string compute = "f32";
  std::string device = "cpu";
  bool allow_tf32 = false;
  int threads = 0;
  uint64_t seed = 0;
};

std::vector<int32_t> parse_ids(const std::string& text) {
  std::vector<int32_t> out;
  std::string tok;
  for (char c : text + " ") {
    if (c == ' ' || c == ',') {
      if (tok.empty()) continue;
      try {
        size_t used = 0;
        const long v = std::stol(tok, &used);
        check(used == tok.size() && v >= 0 && v <= INT32_MAX, "");
        out.push_back(int32_t(v));
      } catch (const std::exception&) { throw Error("--ids: '" + tok + "' is not a token id"); }
      tok.clear();
    } else {
      tok += c;
    }
  }
  return out;
}

// The prompts: texts through the tokenizer (loaded into *tok), --ids rows, or random ids.
struct Prompts {
  std::vector<std::vector<int32_t>> rows;
  std::string input_what;
};
Prompts make_prompts(const GenerateFlags& f, const ModelInfo& info, const std::string& tok_path,
                     std::unique_ptr<Tokenizer>* tok) {
  std::vector<std::vector<int32_t>> rows;
  std::string input_what;
  if (!f.texts.empty()) {
    check(!tok_path.empty(), missing_tokenizer_message(f.model, info.tokenizer_hint));
    *tok = Tokenizer::load(tok_path);
    for (const auto& t : f.texts) rows.push_back((*tok)->encode(t).ids);
    input_what = std::to_string(rows.size()) + " texts through " + tok_path;
  } else if (!f.ids.empty()) {
    for (const auto& s : f.ids) rows.push_back(parse_ids(s));
    input_what = std::to_string(rows.size()) + " rows from --ids";
  } else {
    check(f.batch > 0 && f.prompt_len > 0, "--batch and --prompt-len must be positive");
    usage_check(info.max_positions <= 0 || f.prompt_len <= info.max_positions,
                "--prompt-len " + std::to_string(f.prompt_len) + " is past " + f.model + "'s " +
                    std::to_string(info.max_positions) +
                    " positions (max_position_embeddings): the longest prompt it takes is " +
                    std::to_string(info.max_positions) + " tokens");
    std::mt19937_64 rng(f.seed);
    std::uniform_int_distribution<int32_t> pick(0, int32_t(std::min<int64_t>(info.vocab_size, 151643) - 1));
    rows.assign(size_t(f.batch), std::vector<int32_t>(size_t(f.prompt_len)));
    for (auto& r : rows)
      for (auto& id : r) id = pick(rng);
    input_what = "random prompts (seed " + std::to_string(f.seed) + ")";
  }
  return {std::move(rows), std::move(input_what)};
}

// A rotary decoder has no position table to run off, but it never saw a position past
// max_position_embeddings: a prompt longer than that, or one whose new tokens would run past it,
// is refused before anything runs, as tach estimate refuses it.
void check_prompt_lengths(const GenerateFlags& f, const ModelInfo& info,
                          const std::vector<std::vector<int32_t>>& rows) {
  for (const auto& r : rows)
    check(info.max_positions <= 0 || int64_t(r.size()) <= info.max_positions,
          "a prompt of " + std::to_string(r.size()) + " tokens is past " + f.model + "'s " +
              std::to_string(info.max_positions) + " positions (max_position_embeddings)");
  int64_t longest = 0;
  for (const auto& r : rows) longest = std::max<int64_t>(longest, int64_t(r.size()));
  usage_check(info.max_positions <= 0 || longest + f.max_new_tokens <= info.max_positions,
              "a prompt of " + std::to_string(longest) + " tokens + --max-new-tokens " +
                  std::to_string(f.max_new_tokens) + " (" + std::to_string(longest + f.max_new_tokens) +
                  " per row) is past " + f.model + "'s " + std::to_string(info.max_positions) +
                  " positions (max_position_embeddings): give --max-new-tokens at most " +
                  std::to_string(info.max_positions - longest) + ", or a shorter prompt");
}

// What one generation measured, for the JSON or the terminal.
struct GenerateRun {
  const ModelInfo& info;
  const Prompts& prompts;
  const TokenBatch& batch;  // the prompts, left-padded
  const Generation& g;
  const Tokenizer* tok;  // null: ids only
  double load_s;
  Summary step;
  DecodeLimit limit;
};

void print_generate_json(const GenerateFlags& f, const GenerateRun& run) {
  const ModelInfo& info = run.info;
  const Generation& g = run.g;
  const Summary& step = run.step;
  const DecodeLimit& limit = run.limit;
  const TokenBatch& prompts = run.batch;
  const std::vector<std::vector<int32_t>>& rows = run.prompts.rows;
  const std::string& input_what = run.prompts.input_what;
  const double load_s = run.load_s;
  nlohmann::json j = {
      {"schema", "tach.generate/1"},
      {"model",
       {{"spec", info.spec},
        {"architecture", info.architecture},
        {"compute_dtype", f.compute},
        {"gemm_tf32", info.gemm_tf32},
        {"parameters", info.parameters},
        {"notes", info.notes}}},
      {"input",
       {{"batch", prompts.batch()},
        {"prompt_len", prompts.seq_len()},
        {"prompt_tokens", g.prompt_tokens},
        {"source", input_what},
        {"prompt_ids", rows}}},
      {"tokens", g.tokens},
      {"time_to_first_token_ms", g.time_to_first_token_s * 1e3},
      {"time_per_output_token_ms",
       {{"median", step.median * 1e3}, {"p10", step.p10 * 1e3}, {"p90", step.p90 * 1e3}, {"n", step.n}}},
      {"decode_method", g.decode_method},
      {"total_s", g.total_s},
      {"load_s", load_s}};
  if (step.n > 0)
    j["decode_limit"] = {
        {"weight_bytes_per_step", g.decode_weight_bytes}, {"cache_bytes_per_step", g.decode_cache_bytes},
        {"memory_bytes_per_s", limit.bandwidth},          {"limit_ms", limit.limit_s * 1e3},
        {"median_fraction_of_limit", limit.fraction},     {"bandwidth_method", limit.method}};
  if (step.n > 0 && limit.read_bandwidth > 0) {
    j["decode_limit"]["memory_read_bytes_per_s"] = limit.read_bandwidth;
    j["decode_limit"]["read_limit_ms"] = limit.read_limit_s * 1e3;
    j["decode_limit"]["median_fraction_of_read_limit"] = limit.read_fraction;
  }
  if (step.n > 0 && !limit.warning.empty()) j["decode_limit"]["warning"] = limit.warning;
  if (!f.texts.empty()) j["input"]["texts"] = f.texts;  // as received (invalid UTF-8 shown as U+FFFD)
  if (run.tok) {
    nlohmann::json texts = nlohmann::json::array();
    for (const auto& r : g.tokens) texts.push_back(run.tok->decode(r, true));
    j["texts"] = texts;
  }
  std::cout << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
}

void print_generate_text(const GenerateFlags& f, const GenerateRun& run) {
  const ModelInfo& info = run.info;
  const Generation& g = run.g;
  const Summary& step = run.step;
  const DecodeLimit& limit = run.limit;
  const TokenBatch& prompts = run.batch;
  int64_t produced = 0;
  for (const auto& r : g.tokens) produced += int64_t(r.size());
  std::cout << "model       " << info.spec << " (" << info.architecture << ", " << parameter_count_text(info.parameters)
            << " parameters, weights " << info.weights_dtype << ", compute " << f.compute << ")\n"
            << "            " << info.source << "\n"
            << "input       " << prompts.batch() << " prompts x " << prompts.seq_len() << " tokens (left-padded), "
            << run.prompts.input_what << "\n"
            << "load        " << fixed(run.load_s, 2) << " s\n";
  for (const std::string& note : info.notes) std::cout << "note        " << note << "\n";
  for (size_t r = 0; r < g.tokens.size(); ++r) {
    std::cout << "row " << r << "       ";
    for (int32_t t : g.tokens[r]) std::cout << t << " ";
    std::cout << "\n";
    if (run.tok)
      std::cout << "            "
                << nlohmann::json(run.tok->decode(g.tokens[r], true))
                       .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
                << "\n";
  }
  std::cout << "prefill     time to first token " << fixed(g.time_to_first_token_s * 1e3, 2) << " ms ("
            << prompts.batch() * prompts.seq_len() << " prompt positions, "
            << fixed(double(g.prompt_tokens) / g.time_to_first_token_s, 0) << " real prompt tokens/s)\n";
  if (step.n > 0)
    std::cout << "decode      time per output token: median " << fixed(step.median * 1e3, 2) << " ms (p10 "
              << fixed(step.p10 * 1e3, 2) << ", p90 " << fixed(step.p90 * 1e3, 2) << "; " << step.n
              << " steps, each one token for all " << prompts.batch() << " rows), "
              << fixed(double(prompts.batch()) / step.median, 1) << " tokens/s\n"
              << "            steps ran " << g.decode_method << "\n"
              << "limit       " << fixed(limit.limit_s * 1e3, 2)
              << " ms per step at the memory bandwidth: " << fixed(g.decode_weight_bytes / 1e9, 3)
              << " GB of weights + " << fixed(g.decode_cache_bytes / 1e6, 1)
              << " MB of key/value cache per step (mean) over " << fixed(limit.bandwidth / 1e9, 1) << " GB/s ("
              << limit.method << "); the median step runs at " << fixed(100 * limit.fraction, 1)
              << "% of it (limit / median)\n";
  if (step.n > 0 && limit.read_bandwidth > 0)
    std::cout << "            " << fixed(limit.read_limit_s * 1e3, 2) << " ms per step at the read-only bandwidth ("
              << fixed(limit.read_bandwidth / 1e9, 1) << " GB/s, what decoding's weight reads can get): the median "
              << "runs at " << fixed(100 * limit.read_fraction, 1) << "% of that\n";
  if (step.n > 0 && !limit.warning.empty()) std::cout << "            " << limit.warning << "\n";
  std::cout << "total       " << produced << " tokens in " << fixed(g.total_s, 3) << " s; steady clock, after "
            << f.warmup << " untimed warm-up generation(s) of the same prompts\n";
}

int run_generate(const GenerateFlags& f) {
  if (f.threads > 0) set_threads(f.threads);
  check(f.max_new_tokens > 0, "--max-new-tokens must be positive");
  check_allow_tf32(f.allow_tf32, {f.device}, {f.compute});
  check_dtype_on_device(f.compute, f.device);
  LoadOptions lo;
  lo.seed = f.seed;
  lo.compute = parse_compute_dtype(f.compute);
  lo.device = parse_device(f.device);
  lo.allow_tf32 = f.allow_tf32;
  lo.decoding = true;  // token by token: the linears' layout favours a few rows per call
  const auto t0 = std::chrono::steady_clock::now();
  auto model = load_model(f.model, lo);
  const double load_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const ModelInfo& info = model->info();
  check(!info.bidirectional, f.model + " (" + info.architecture +
                                 ") cannot generate: it is a bidirectional encoder, with no language-model head");
  check(info.causal_lm, f.model + " (" + info.architecture + ") cannot generate: it has no language-model head");

  std::unique_ptr<Tokenizer> tok;
  std::string tok_path = f.tokenizer;
  if (tok_path.empty() && info.source.rfind("synthetic", 0) != 0)
    tok_path = info.source.substr(0, info.source.find(" (revision"));
  const Prompts prompts = make_prompts(f, info, tok_path, &tok);
  if (!tok && !tok_path.empty()) {
    try {
      tok = Tokenizer::load(tok_path);
    } catch (const Error&) {  // a model directory without tokenizer files: print ids only
    }
  }
  check_prompt_lengths(f, info, prompts.rows);
  GenerateOptions go;
  go.max_new_tokens = f.max_new_tokens;
  go.stop_at_eos = !f.ignore_eos;
  go.cuda_graphs = !f.no_cuda_graphs;
  const TokenBatch batch = TokenBatch::left_padded(prompts.rows, info.pad_token_id);
  // Untimed runs first: oneDNN builds its kernels for each new shape on first use.
  for (int i = 0; i < f.warmup; ++i) (void)model->generate(batch, go);
  const Generation g = model->generate(batch, go);

  GenerateRun run{info, prompts, batch, g, tok.get(), load_s, summarize(g.decode_step_s), {}};
  if (!g.decode_step_s.empty())
    run.limit = decode_limit(g.decode_weight_bytes + g.decode_cache_bytes, lo.device, run.step.median);
  if (f.json) print_generate_json(f, run);
  else print_generate_text(f, run);
  return 0;
}

}  // namespace

Command add_generate_command(CLI::App& app) {
  auto f = std::make_shared<GenerateFlags>();
  CLI::App* sub = app.add_subcommand(
      "generate",
      "Greedy decoding with a key/value cache (causal LMs of every decoder family, or decoders with tied embeddings); "
      "reports time to first token and time per output token");
  sub->add_option("-m,--model", f->model, "Model: preset:NAME, a directory, or a hub id in the HF cache")
      ->capture_default_str();
  sub->add_option("-k,--tokenizer", f->tokenizer,
                  "Tokenizer for --text and for printing text (default: the model "
                  "directory's)");
  sub->add_option("--text", f->texts, "A prompt (repeat for a batch; rows are left-padded)");
  sub->add_option("--ids", f->ids, "A prompt as token ids, e.g. \"9707 11 1879\" (repeat for a batch)");
  sub->add_option(kBatchOption, f->batch, "Random prompts when none are given: how many")
      ->capture_default_str()
      ->check(positive_count("batch size", "batch sizes"));
  sub->add_option("--prompt-len", f->prompt_len,
                  "Random prompts: tokens each (at most the model's max_position_embeddings)")
      ->capture_default_str()
      ->check(positive_count("--prompt-len", "prompt lengths"));
  sub->add_option("-n,--max-new-tokens", f->max_new_tokens, "Tokens to generate per row")
      ->capture_default_str()
      ->check(positive_count("--max-new-tokens", "counts of new tokens"));
  sub->add_flag("--ignore-eos", f->ignore_eos, "Do not stop rows at the end-of-sequence token");
  sub->add_option("--warmup", f->warmup, "Untimed generations before the timed one")
      ->capture_default_str()
      ->check(non_negative_count("--warmup"));
  sub->add_option(
         "--dtype", f->compute,
         "Compute dtype: f32, bf16, int8 (the linears quantized: dynamically on the cpu, weight-only on cuda) or nf4 "
         "(4-bit weights); f16 too on cuda")
      ->capture_default_str()
      ->check(compute_dtype_name("--dtype"));
  sub->add_option("--device", f->device, "cpu, cuda or cuda:N (the key/value cache lives there too)")
      ->capture_default_str()
      ->check(device_name(false));
  add_allow_tf32_option(sub, f->allow_tf32);
  sub->add_option("-t,--threads", f->threads, "Threads (default: the cores other processes leave free at start)")
      ->check(thread_count());
  sub->add_option("--seed", f->seed, "Seed for preset weights and random prompts")->capture_default_str();
  sub->add_flag("--no-cuda-graphs", f->no_cuda_graphs,
                "On a GPU, launch each decode step's kernels one by one instead of replaying a captured CUDA graph "
                "(for comparisons)");
  sub->add_flag("--json", f->json, "Print JSON (schema tach.generate/1)");
  return {sub, [f] { return run_generate(*f); }};
}

}  // namespace tach::cli
