// tach bench --accuracy on a token classifier or a question-answering model: tach eval's passes
// (token_eval.cc, qa_eval.cc) with their default options, as an AccuracyResult whose scores are
// the task's (seqeval's entity-level micro precision, recall and F1; SQuAD's exact match and F1)
// and whose predictions are kept, so that every other engine's pass is compared with tach's.
#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "bench/bench_internal.h"
#include "bench/task_eval_setup.h"
#include "bench/task_passes.h"
#include "data/squad.h"
#include "tach/error.h"

namespace tach::bench {

std::string accuracy_task(const BenchConfig& config) {
  if (evaluates_token_classification(config)) return "token-classification";
  if (evaluates_question_answering(config)) return "question-answering";
  return "";
}

std::vector<std::pair<std::string, double>> metrics_from_json(const nlohmann::json& metrics, const std::string& task,
                                                              const std::string& where) {
  const std::vector<std::string> names = accuracy_metric_names(task);
  check(!names.empty(), where + ": the task \"" + task + "\" is not token-classification or question-answering");
  check(metrics.is_object(), where + ": \"metrics\" is not an object");
  std::vector<std::pair<std::string, double>> out;
  for (const std::string& name : names) {
    check(metrics.contains(name), where + ": the " + task + " metrics have no " + name);
    const auto& v = metrics.at(name);
    check(v.is_number() || v.is_null(), where + ": the metric " + name + " is not a number");
    out.emplace_back(name, v.is_number() ? v.get<double>() : std::nan(""));
  }
  return out;
}

TaskAccuracyData read_task_accuracy_data(const BenchConfig& config, const ModelInfo& info) {
  TaskAccuracyData d;
  d.task = info.head == Head::token_classification ? "token-classification"
           : info.head == Head::question_answering ? "question-answering"
                                                   : "";
  check(!d.task.empty(),
        config.model + " runs a " + std::string(head_name(info.head)) +
            " head: the per-token accuracy pass scores a token classifier or a question-answering model");
  if (d.task == "token-classification") {
    d.tagged = read_tagged_eval_data(config, TokenEvalOptions{}, info, d.notes);
  } else {
    // tach eval's defaults: windows of 384 tokens (or the model's positions), sharing half of
    // them up to 128.
    data::check_squad_format(config.dataset.format, "");
    AnswerOptions options;
    options.doc_stride = std::min<int64_t>(options.max_length / 2, 128);
    options.doc_stride_default = true;
    d.squad = read_squad_eval_data(config, options, info, d.notes);
  }
  return d;
}

void check_task_accuracy_inputs(const BenchConfig& config) {
  const std::unique_ptr<Model> model = load_eval_model(config, config.devices.front(), config.dtypes.front());
  (void)read_task_accuracy_data(config, model->info());
}

TaskPass task_accuracy_pass(const TaskAccuracyData& data, const ModelInfo& info, const BenchConfig& config,
                            const TokenLogitsForward& forward, bool warm_up) {
  check(config.eval_batch_size > 0, "the evaluation batch size must be positive");
  TaskPass p;
  AccuracyResult& r = p.result;
  r.task = data.task;
  r.warmup_batches = warm_up ? 1 : 0;
  if (data.task == "token-classification") {
    std::vector<tasks::TagSequence> predicted;
    p.token = token_eval_pass(data.tagged, info, config.eval_batch_size, forward, warm_up, &predicted);
    const TokenEvalPass& t = p.token;
    r.examples = t.sentences;
    r.scores = {{"f1", t.micro.f1},
                {"precision", t.micro.precision},
                {"recall", t.micro.recall},
                {"word_accuracy", t.word_accuracy}};
    r.scheme = t.scheme;
    r.tokenize_s = t.tokenize_s, r.model_s = t.model_s, r.total_s = t.total_s;
    r.samples_per_s = t.sentences_per_s;
    r.load = t.load;
    for (const tasks::TagSequence& sentence : predicted)
      r.predicted_text.insert(r.predicted_text.end(), sentence.begin(), sentence.end());
  } else {
    p.qa = qa_eval_pass(data.squad, info, config.eval_batch_size, forward, warm_up, &r.predicted_text);
    const QaEvalPass& q = p.qa;
    r.examples = q.questions;
    r.scores = {{"exact_match", q.scores.exact}, {"f1", q.scores.f1}};
    r.scheme = data.squad.squad.v2 ? "SQuAD v2.0" : "SQuAD v1.1";
    r.total_s = q.total_s;
    r.samples_per_s = q.questions_per_s;
    r.load = q.load;
  }
  return p;
}

std::string task_eval_file(const TaskAccuracyData& data, const ModelInfo& info, const BenchConfig& config,
                           const std::vector<TaskPass>& passes, std::string* name) {
  if (data.task == "token-classification") {
    TokenEvalOutcome out;
    out.dataset = config.dataset.path, out.model = config.model, out.architecture = info.architecture;
    out.labels = info.labels;
    out.notes = data.notes;
    for (const TaskPass& p : passes) {
      out.passes.push_back(p.token);
      out.passes.back().device = p.result.device, out.passes.back().dtype = p.result.dtype;
    }
    if (!out.passes.empty() && out.passes.front().words_cut > 0)
      out.notes.push_back(words_cut_note(out.passes.front().words_cut));
    *name = "token_classification.json";
    return token_eval_json(out) + "\n";
  }
  QaEvalOutcome out;
  out.dataset = config.dataset.path, out.model = config.model, out.architecture = info.architecture;
  out.layout = data.squad.squad.layout;
  out.v2 = data.squad.squad.v2;
  out.options = data.squad.options;
  out.notes = data.notes;
  for (const TaskPass& p : passes) {
    out.passes.push_back(p.qa);
    out.passes.back().device = p.result.device, out.passes.back().dtype = p.result.dtype;
  }
  *name = "question_answering.json";
  return qa_eval_json(out) + "\n";
}

}  // namespace tach::bench
