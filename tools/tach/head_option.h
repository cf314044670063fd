// --head: which head a command builds on a checkpoint's body, one rule for every command that
// loads a model (docs/cli.md). auto runs the checkpoint's own head where the command can use it;
// otherwise the body gets a new head for the command's task, as transformers' AutoModelFor... does.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

#include "tach/model.h"

namespace tach::cli {

// What a command does with a model, which decides what --head auto means.
enum class HeadUse {
  as_published,  // classify, bench, profile, eval, info, estimate: the checkpoint's own head
  fine_tune,     // train: the head of the training task (a new one where the checkpoint has another)
  bare_body,     // embed: the body alone, its hidden states pooled
};

// "auto" and every head's name, as --head takes them.
std::vector<std::string> head_choices();

// Adds --head to `command`: its value lands in `value` ("auto" unless given), and a value that is
// not one of head_choices() is a usage error while parsing.
CLI::Option* add_head_option(CLI::App* command, std::string& value, HeadUse use);

// The head to ask load_model for (std::nullopt: the checkpoint's own). task_head: the head of the
// training task (fine_tune only). A head the command cannot run is a usage error that says which it can.
std::optional<Head> head_to_load(const std::string& value, HeadUse use, Head task_head = Head::sequence_classification);

// tach train: the training task (TrainOptions::task: sequence-classification, mlm,
// token-classification, question-answering) once --head is applied. "auto" leaves `task` as it
// is; a head asks for its task (masked-lm: mlm), and must agree with a --task given beside it.
std::string training_task(const std::string& head_value, const std::string& task, bool task_given);

}  // namespace tach::cli
