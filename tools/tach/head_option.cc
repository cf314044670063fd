#include "head_option.h"

#include "tach/error.h"
#include "usage.h"

namespace tach::cli {

namespace {

constexpr Head kHeads[] = {Head::sequence_classification, Head::token_classification, Head::question_answering,
                           Head::masked_lm, Head::none};

std::string help_for(HeadUse use) {
  switch (use) {
    case HeadUse::as_published:
      return "Head to run on the model's body: auto (the checkpoint's own, as published: a masked LM's MLM head), "
             "sequence-classification, token-classification, question-answering, masked-lm, or none (the bare "
             "body); a head the checkpoint lacks is built new (random, seeded by --seed, as transformers' "
             "AutoModelFor... builds it) and one it has but does not run is left out";
    case HeadUse::fine_tune:
      return "Head to fine-tune: auto (the training task's; a masked-LM or bare checkpoint gets a new sequence "
             "classifier, as AutoModelForSequenceClassification builds it), sequence-classification, "
             "token-classification, question-answering or masked-lm";
    case HeadUse::bare_body:
      return "Head: auto or none, the same here (embeddings pool the body's hidden states; a checkpoint's head is "
             "left out)";
  }
  return "";
}

}  // namespace

std::vector<std::string> head_choices() {
  std::vector<std::string> out{"auto"};
  for (Head h : kHeads) out.emplace_back(head_name(h));
  return out;
}

CLI::Option* add_head_option(CLI::App* command, std::string& value, HeadUse use) {
  value = "auto";
  return command->add_option("--head", value, help_for(use))
      ->capture_default_str()
      ->check(one_of("--head", head_choices()));
}

std::optional<Head> head_to_load(const std::string& value, HeadUse use, Head task_head) {
  const std::optional<Head> asked = parse_head(value);
  switch (use) {
    case HeadUse::as_published: return asked;
    case HeadUse::bare_body:
      usage_check(!asked || *asked == Head::none,
                  "--head " + value +
                      ": embeddings pool the body's hidden states, without a head; give --head none "
                      "(or leave it out), or run the head with tach classify --head " +
                      value);
      return Head::none;
    case HeadUse::fine_tune:
      usage_check(!asked || *asked != Head::none,
                  "--head none: training needs a head to train; give one of "
                  "sequence-classification, token-classification, "
                  "question-answering, masked-lm (or auto)");
      usage_check(!asked || *asked == task_head, "--head " + value + " does not train the task's head (" +
                                                     head_name(task_head) +
                                                     "); give the matching --task, or leave "
                                                     "--head out");
      return task_head;
  }
  return asked;
}

std::string training_task(const std::string& head_value, const std::string& task, bool task_given) {
  const std::optional<Head> asked = parse_head(head_value);
  if (!asked) return task;
  const auto task_of = [](Head h) { return h == Head::masked_lm ? std::string("mlm") : std::string(head_name(h)); };
  Head task_head = *asked;
  if (task_given)
    for (Head h : kHeads)
      if (task_of(h) == task) task_head = h;
  head_to_load(head_value, HeadUse::fine_tune, task_head);  // none, or a head the --task does not train: refused
  usage_check(!task_given || task_of(task_head) == task,
              "--head " + head_value + " does not train with --task " + task + "; give one of them");
  return task_of(*asked);
}

}  // namespace tach::cli
