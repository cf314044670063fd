// tach answer: extractive question answering, the span of a context that answers a question, with
// its score and character offsets, as transformers' question-answering pipeline gives it.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "commands.h"
#include "format.h"
#include "task_output.h"
#include "tach/error.h"
#include "tach/model.h"
#include "tach/monitor.h"
#include "tach/question_answering.h"
#include "tach/runtime.h"
#include "tach/tokenizer.h"
#include "usage.h"

namespace tach::cli {

namespace {

struct AnswerCommandOptions {
  std::string model;
  std::string question;
  std::string context;
  std::string context_file;
  std::string tokenizer;  // default: the model directory's
  AnswerOptions answer;
  int threads = 0;
  std::string compute = "f32";
  std::string device = "cpu";
  uint64_t seed = 0;
  bool json = false;
};

std::string quoted(const std::string& s) {
  return nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

int run_answer(AnswerCommandOptions opt, bool max_length_given, bool doc_stride_given, bool context_given) {
  using clock = std::chrono::steady_clock;
  if (opt.threads > 0) set_threads(opt.threads);
  usage_check(context_given != !opt.context_file.empty(), "give the context with --context or --context-file (one)");
  usage_check(!context_given || !opt.context.empty(),
              "the context is empty (--context \"\"): give the text the answer is taken from");
  if (!opt.context_file.empty()) {
    std::ifstream f(opt.context_file, std::ios::binary);
    if (!f) throw Error(opt.context_file + ": cannot read the context file");
    std::ostringstream s;
    s << f.rdbuf();
    opt.context = s.str();
    if (opt.context.empty()) throw Error(opt.context_file + ": the context file is empty");
  }
  check_dtype_on_device(opt.compute, opt.device);
  LoadOptions lo;
  lo.seed = opt.seed;
  lo.device = parse_device(opt.device);
  lo.compute = parse_compute_dtype(opt.compute);
  // The checkpoint's question-answering head, or a new one on a body without it (as the pipeline's
  // AutoModelForQuestionAnswering builds it, with transformers' note: untrained, its answers are noise).
  lo.head = Head::question_answering;
  const auto t0 = clock::now();
  auto model = load_model(opt.model, lo);
  const ModelInfo& info = model->info();
  // The pipeline's defaults: windows of min(384, the model's length), a stride of half that up to 128.
  if (!max_length_given && info.max_positions > 0)
    opt.answer.max_length = std::min<int64_t>(opt.answer.max_length, info.max_positions);
  if (!doc_stride_given) opt.answer.doc_stride = std::min<int64_t>(opt.answer.max_length / 2, 128);
  opt.answer.doc_stride_default = !doc_stride_given;
  const std::string tokenizer_path = tokenizer_path_for(info, opt.tokenizer);
  const auto tokenizer = Tokenizer::load(tokenizer_path);
  const double load_s = std::chrono::duration<double>(clock::now() - t0).count();
  // Other processes' CPU use while the question is answered: on a shared machine the time to
  // answer can be theirs, and the output says so.
  CpuLoadWindow load_window;
  const auto t1 = clock::now();
  const std::vector<Answer> answers =
      answer_questions(*model, *tokenizer, {{opt.question, opt.context}}, opt.answer).at(0);
  const double run_s = std::chrono::duration<double>(clock::now() - t1).count();
  const CpuLoad load = load_window.finish(threads());

  if (opt.json) {
    nlohmann::json j;
    j["schema"] = "tach.answer/1";
    j["model"] = model_json(info);
    j["tokenizer"] = tokenizer_path;
    j["question"] = opt.question;
    j["options"] = {{"top_k", opt.answer.top_k},
                    {"max_length", opt.answer.max_length},
                    {"doc_stride", opt.answer.doc_stride},
                    {"max_answer_len", opt.answer.max_answer_len},
                    {"handle_impossible_answer", opt.answer.handle_impossible_answer}};
    j["answers"] = nlohmann::json::array();
    for (const auto& a : answers)
      j["answers"].push_back({{"answer", a.text}, {"score", a.score}, {"start", a.start}, {"end", a.end}});
    j["timing"] = {{"unit", "s"}, {"load_s", load_s}, {"answer_s", run_s}};
    j["load"] = cpu_load_json(load);
    std::cout << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return 0;
  }
  print_model_lines(std::cout, info);
  std::cout << "tokenizer   " << tokenizer_path << "\n"
            << "question    " << quoted(opt.question) << "\n"
            << "windows     " << opt.answer.max_length << " tokens, sharing " << opt.answer.doc_stride
            << " context tokens; answers of at most " << opt.answer.max_answer_len << " tokens"
            << (opt.answer.handle_impossible_answer ? ", the empty answer allowed" : "") << "\n"
            << "time        " << fixed(load_s, 2) << " s to load, " << fixed(run_s * 1e3, 1) << " ms to answer\n";
  print_load_lines(std::cout, load, "the time to answer");
  if (answers.empty()) std::cout << "answer      none (no span of the context fits)\n";
  for (size_t i = 0; i < answers.size(); ++i) {
    const Answer& a = answers[i];
    std::cout << (answers.size() > 1 ? "answer " + std::to_string(i + 1) + "    " : std::string("answer      "))
              << significant(a.score) << "  " << quoted(a.text) << "  (characters " << a.start << "-" << a.end << ")\n";
  }
  return 0;
}

}  // namespace

Command add_answer_command(CLI::App& app) {
  auto opt = std::make_shared<AnswerCommandOptions>();
  CLI::App* sub = app.add_subcommand(
      "answer",
      "Extractive question answering: the span of a context that answers a question, with its score and character "
      "offsets, as transformers' question-answering pipeline gives it (a long context in overlapping windows)");
  sub->add_option("-m,--model", opt->model,
                  "A question-answering checkpoint (config.json architecture *ForQuestionAnswering): preset:NAME, a "
                  "directory with config.json and model.safetensors, or a hub id ORG/NAME[@REV] in the Hugging Face "
                  "cache. Another checkpoint gets a new, untrained head (transformers' note says so)")
      ->required();
  sub->add_option("-q,--question", opt->question, "The question")->required();
  auto* context = sub->add_option("-c,--context", opt->context, "The text the answer is taken from");
  sub->add_option("--context-file", opt->context_file, "Read the context from this file instead (UTF-8, as is)");
  sub->add_option("--top-k", opt->answer.top_k, "Answers, best first (fewer when the context has fewer spans)")
      ->capture_default_str()
      ->check(positive_count("--top-k", "--top-k values"));
  auto* max_length = sub->add_option("--max-length", opt->answer.max_length,
                                     "Tokens of a window: question, context part and special tokens (default: 384, "
                                     "or the model's positions when fewer)")
                         ->check(positive_count("--max-length", "--max-length values"));
  auto* doc_stride = sub->add_option("--doc-stride", opt->answer.doc_stride,
                                     "Context tokens consecutive windows share, when the context needs several "
                                     "(default: half the window, at most 128)")
                         ->check(non_negative_count("--doc-stride"));
  sub->add_option("--max-answer-len", opt->answer.max_answer_len, "Tokens of an answer at most")
      ->capture_default_str()
      ->check(positive_count("--max-answer-len", "--max-answer-len values"));
  sub->add_flag("--handle-impossible-answer", opt->answer.handle_impossible_answer,
                "Let the empty answer compete (SQuAD v2.0 models): scored by the start and end probabilities at the "
                "CLS token, the lowest over the windows");
  sub->add_option("-k,--tokenizer", opt->tokenizer, "tokenizer.json or a directory (default: the model directory's)");
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
  sub->add_option("--seed", opt->seed, "Seed for preset weights and a new head")->capture_default_str();
  sub->add_flag("--json", opt->json, "Print machine-readable JSON (schema tach.answer/1)");
  return {sub, [opt, max_length, doc_stride, context] {
            return run_answer(*opt, max_length->count() > 0, doc_stride->count() > 0, context->count() > 0);
          }};
}

}  // namespace tach::cli
