// tach eval: the accuracy pass alone, on a labelled dataset.
#include <iostream>

#include "bench_options.h"
#include "dataset_options.h"
#include "progress.h"
#include "commands.h"
#include "tach/question_answering.h"
#include "tach/report.h"
#include "tach/token_classification.h"
#include "usage.h"

namespace tach::cli {

Command add_eval_command(CLI::App& app) {
  auto f = std::make_shared<BenchFlags>();
  auto tokens = std::make_shared<TokenEvalOptions>();
  auto answers = std::make_shared<AnswerOptions>();
  CLI::App* sub = app.add_subcommand(
      "eval",
      "Accuracy on a labelled dataset: accuracy, macro-F1, per-class precision/recall/F1, the confusion matrix, time "
      "and throughput, one pass per device and dtype; writes runs/<run_id>/ (accuracy.json, summary.txt, ...). A "
      "token classifier gets seqeval's entity-level precision/recall/F1 on tagged words (CoNLL text, JSON records "
      "with tokens and ner_tags). A question-answering model gets SQuAD's exact match and F1 (v1.1, and v2.0 with "
      "HasAns/NoAns) on SQuAD files. An existing --run-id is refused");
  add_bench_options(sub, *f, BenchScope::eval);
  sub->add_option("--tag-scheme", tokens->tag_scheme,
                  "A token classifier's tags: conlleval (seqeval's default, lenient, as conlleval.pl) or a strict "
                  "scheme, whose malformed entities do not count: IOB1, IOB2, IOE1, IOE2, IOBES, BILOU")
      ->capture_default_str()
      ->check(one_of_any_case("--tag-scheme", {"conlleval", "IOB1", "IOB2", "IOE1", "IOE2", "IOBES", "BILOU"}));
  sub->add_option("--tag-column", tokens->tag_column,
                  "A CoNLL file's tag column, from 0 (the word is column 0), or negative from the end")
      ->capture_default_str();
  auto tag_names = std::make_shared<std::string>();
  sub->add_option("--tag-names", *tag_names,
                  "Names of a JSON dataset's integer tags, comma-separated in id order (its label list, e.g. "
                  "O,B-PER,I-PER,...); default: the model's id2label");
  sub->add_option("--doc-stride", answers->doc_stride,
                  "A question-answering model: context tokens consecutive windows share (its windows are -s tokens, "
                  "default 384 for it)")
      ->capture_default_str()
      ->check(non_negative_count("--doc-stride"));
  sub->add_option("--max-answer-len", answers->max_answer_len,
                  "A question-answering model: tokens of an answer at most")
      ->capture_default_str()
      ->check(positive_count("--max-answer-len", "--max-answer-len values"));
  sub->add_flag("--handle-impossible-answer", answers->handle_impossible_answer,
                "A question-answering model: let the empty answer compete (on by itself for SQuAD v2.0 data)");
  return {sub, [f, tokens, answers, sub, tag_names] {
            const BenchConfig config = f->resolve();
            check_split_applies(config.dataset, "--split");
            // A question-answering model: the official SQuAD scores of its best spans.
            if (evaluates_question_answering(config)) {
              AnswerOptions options = *answers;
              if (sub->count("--max-length") > 0) options.max_length = config.eval_max_length;
              options.doc_stride_default = sub->count("--doc-stride") == 0;
              if (options.doc_stride_default) options.doc_stride = std::min<int64_t>(options.max_length / 2, 128);
              const QaEvalOutcome out = run_qa_eval(config, options);
              std::cout << qa_eval_text(out);
              std::cout << "written: " << out.run_dir
                        << "/{config.json, question_answering.json, predictions.json, summary.txt, run.log}\n";
              return 0;
            }
            // A token classifier: seqeval's entity-level metrics over tagged words.
            if (evaluates_token_classification(config)) {
              if (sub->count("--max-length") > 0) tokens->max_length = config.eval_max_length;
              tokens->tag_names.clear();
              for (size_t b = 0; !tag_names->empty() && b <= tag_names->size();) {
                const size_t e = std::min(tag_names->find(',', b), tag_names->size());
                tokens->tag_names.push_back(tag_names->substr(b, e - b));
                b = e + 1;
              }
              const TokenEvalOutcome out = run_token_eval(config, *tokens);
              std::cout << token_eval_text(out);
              std::cout << "written: " << out.run_dir
                        << "/{config.json, token_classification.json, summary.txt, run.log}\n";
              return 0;
            }
            const SweepOutcome out = run_eval(config, bench_progress(false, config));
            end_bench_progress(false);
            write_run_reports(out.config, out);
            const bool synthetic = !out.models.empty() && out.models.front().synthetic_weights;
            std::cout << accuracy_text(out.accuracy, out.accuracy_dataset, synthetic);
            std::cout << "written: " << out.run_dir
                      << "/{config.json, accuracy.json, summary.json, summary.txt, run.log}\n";
            return 0;
          }};
}

}  // namespace tach::cli
