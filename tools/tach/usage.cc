#include "usage.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <map>

#include "tach/device.h"
#include "tach/dtype.h"
#include "tach/error.h"

namespace tach::cli {

namespace {

// The whole text as a base-10 integer, or false (CLI11's conversion then says what is wrong).
bool parse_integer(const std::string& text, long long& value) {
  if (text.empty()) return false;
  char* end = nullptr;
  value = std::strtoll(text.c_str(), &end, 10);
  return end && *end == '\0';
}

// Edits (insert, delete, substitute, or swap two neighbours) between a and b: "bnech" is one from
// "bench".
size_t edit_distance(const std::string& a, const std::string& b) {
  const size_t n = a.size(), m = b.size();
  std::vector<std::vector<size_t>> d(n + 1, std::vector<size_t>(m + 1));
  for (size_t i = 0; i <= n; ++i) d[i][0] = i;
  for (size_t j = 0; j <= m; ++j) d[0][j] = j;
  for (size_t i = 1; i <= n; ++i)
    for (size_t j = 1; j <= m; ++j) {
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] != b[j - 1])});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[n][m];
}

std::string lower(std::string s) {
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

const CLI::App* command_of(const CLI::App& app, const std::vector<std::string>& args) {
  if (args.size() < 2) return nullptr;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
    if (sub->get_name() == args[1]) return sub;
  return nullptr;
}

}  // namespace

CLI::Validator positive_count(const std::string& what, const std::string& plural) {
  return CLI::Validator(
      [what, plural](std::string& text) -> std::string {
        long long v = 0;
        if (!parse_integer(text, v) || v > 0) return "";
        return what + " " + text + ": " + plural + " must be positive integers";
      },
      "POSITIVE", "positive_count");
}

CLI::Validator non_negative_count(const std::string& option) {
  return CLI::Validator(
      [option](std::string& text) -> std::string {
        long long v = 0;
        if (!parse_integer(text, v) || v >= 0) return "";
        return option + " " + text + ": must be 0 or more (an integer)";
      },
      "NONNEGATIVE", "non_negative_count");
}

CLI::Validator one_of(const std::string& option, const std::vector<std::string>& choices) {
  return CLI::Validator(
      [option, choices](std::string& text) -> std::string {
        if (std::find(choices.begin(), choices.end(), text) != choices.end()) return "";
        std::string list;
        for (const auto& c : choices) list += (list.empty() ? "" : ", ") + c;
        return option + " " + text + ": not one of " + list;
      },
      "", "one_of");
}

CLI::Validator one_of_any_case(const std::string& option, const std::vector<std::string>& choices) {
  return CLI::Validator(
      [option, choices](std::string& text) -> std::string {
        for (const auto& c : choices)
          if (lower(c) == lower(text)) return "";
        std::string list;
        for (const auto& c : choices) list += (list.empty() ? "" : ", ") + c;
        return option + " " + text + ": not one of " + list;
      },
      "", "one_of_any_case");
}

CLI::Validator compute_dtype_name(const std::string& option) {
  return CLI::Validator(
      [option](std::string& text) -> std::string {
        try {
          (void)parse_compute_dtype(text);
          return "";
        } catch (const Error&) { return option + " " + text + ": not one of f32, bf16, int8, nf4 (f16 on cuda)"; }
      },
      "", "compute_dtype_name");
}

void check_dtype_on_device(const std::string& dtype, const std::string& device, const std::string& dtype_flag) {
  // f16 GEMMs exist on CUDA only; the CPU reads f16 checkpoints but computes in f32, bf16, int8 or nf4.
  usage_check(parse_compute_dtype(dtype) != DType::f16 || parse_device(device).kind == DeviceKind::cuda,
              dtype_flag +
                  " f16 computes on a GPU only (--device cuda): the CPU computes in f32, bf16, int8 or nf4 "
                  "(an f16 checkpoint is read and converted); give --device cuda, or another " +
                  dtype_flag);
}

CLI::Validator fraction_below_one(const std::string& option) {
  return CLI::Validator(
      [option](std::string& text) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        if (text.empty() || !end || *end != '\0') return "";  // CLI11's conversion says what is wrong
        return v >= 0 && v < 1 ? "" : option + " " + text + ": must be a fraction in [0, 1), e.g. 0.1";
      },
      "", "fraction_below_one");
}

CLI::Validator thread_count() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        long long v = 0;
        if (!parse_integer(text, v) || v >= 0) return "";
        return "threads " + text +
               ": must be 0 (the default: the cores other processes leave free when tach starts, or "
               "OMP_NUM_THREADS) or more";
      },
      "", "thread_count");
}

CLI::Validator device_name(bool allow_auto) {
  return CLI::Validator(
      [allow_auto](std::string& text) -> std::string {
        if (allow_auto && text == "auto") return "";
        try {
          (void)parse_device(text);
          return "";
        } catch (const Error& e) { return std::string(e.what()) + (allow_auto ? " (or auto)" : ""); }
      },
      "", "device_name");
}

std::string nearest(const std::string& word, const std::vector<std::string>& candidates) {
  const std::string w = lower(word);
  std::string best;
  size_t best_score = size_t(-1);
  for (const auto& c : candidates) {
    const std::string l = lower(c);
    if (l == w) return c;
    // A prefix of a longer name ("--seq" of "--seq-lens") counts as one edit.
    const size_t score = w.size() >= 3 && l.rfind(w, 0) == 0 ? 1 : edit_distance(w, l);
    if (score < best_score) best_score = score, best = c;
  }
  // Close enough to be a slip of the keys: about one edit in three letters, and at least one.
  const size_t allowed = std::max<size_t>(1, w.size() / 3);
  return best_score <= allowed ? best : "";
}

std::string unknown_command(const CLI::App& app, const std::vector<std::string>& args) {
  if (args.size() < 2 || args[1].empty() || args[1][0] == '-') return "";
  return command_of(app, args) ? "" : args[1];
}

std::string unknown_top_option(const CLI::App& app, const std::vector<std::string>& args) {
  if (args.size() < 2 || args[1].size() < 2 || args[1][0] != '-') return "";
  const std::string name = args[1].substr(0, args[1].find('='));
  if (app.get_option_no_throw(name) != nullptr) return "";
  std::vector<std::string> names;
  for (const CLI::Option* o : app.get_options())
    for (const auto& l : o->get_lnames()) names.push_back("--" + l);
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
    names.push_back(sub->get_name());
  const std::string near = nearest(name.substr(name.find_first_not_of('-')), names);
  const std::string near_option = nearest(name, names);
  const std::string best = !near_option.empty() ? near_option : near;
  return "tach has no option " + name + (best.empty() ? "" : "; did you mean " + best + "?") +
         " (options go after the command: tach COMMAND --help lists its options, tach --help the commands)\n";
}

// An option another command has (eval given bench's -b): this command's option named for the same
// thing (--eval-batch-size holds "batch"), or "" when it has none.
std::string same_option_here(const CLI::App& app, const CLI::App& command, const std::string& name) {
  for (const CLI::App* other : app.get_subcommands([](const CLI::App*) { return true; })) {
    const CLI::Option* there = other->get_option_no_throw(name);
    if (there == nullptr || there->get_lnames().empty()) continue;
    const std::string word = there->get_lnames().front();
    for (const CLI::Option* o : command.get_options()) {
      if (o->get_group().empty() || o->get_lnames().empty()) continue;
      for (const auto& l : o->get_lnames())
        if (l.find(word) != std::string::npos) return "--" + o->get_lnames().front();
    }
    return "";
  }
  return "";
}

std::string usage_suggestions(const CLI::App& app, const std::vector<std::string>& args) {
  if (const std::string word = unknown_command(app, args); !word.empty()) {
    std::vector<std::string> names;
    for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
      names.push_back(sub->get_name());
    const std::string near = nearest(word, names);
    return "'" + word + "' is not a tach command" + (near.empty() ? "" : "; did you mean '" + near + "'?") +
           " (tach --help lists them)\n";
  }
  const CLI::App* command = command_of(app, args);
  if (!command) return "";
  // The visible options' long names, each leading to its option's first (main) one: a slip of
  // --batchsize is offered --batch, not its alias --batch-size. Hidden options are not offered.
  std::vector<std::string> names;
  std::map<std::string, std::string> main_name;
  for (const CLI::Option* o : command->get_options()) {
    if (o->get_group().empty() || o->get_lnames().empty()) continue;
    for (const auto& l : o->get_lnames()) {
      names.push_back("--" + l);
      main_name["--" + l] = "--" + o->get_lnames().front();
    }
  }
  std::string out;
  // An empty argument where no option takes it: a command with --text takes its texts there.
  const bool takes_positionals =
      !command->get_options([](const CLI::Option* o) { return o->get_positional(); }).empty();
  for (size_t i = 2; i < args.size() && !takes_positionals; ++i) {
    if (!args[i].empty() || command->get_option_no_throw("--text") == nullptr) continue;
    const CLI::Option* before = args[i - 1].rfind("-", 0) == 0 ? command->get_option_no_throw(args[i - 1]) : nullptr;
    if (before != nullptr && before->get_type_size_max() > 0) continue;  // the value of an option
    out += "tach " + command->get_name() + " takes its texts with --text TEXT (repeat for more; --text \"\" for " +
           "an empty one), not as bare arguments\n";
    break;
  }
  for (size_t i = 2; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") break;  // positionals from here on
    const bool long_name = a.size() >= 3 && a.rfind("--", 0) == 0;
    const bool short_name = a.size() == 2 && a[0] == '-' && std::isalpha(static_cast<unsigned char>(a[1]));
    if (!long_name && !short_name) continue;
    const std::string name = a.substr(0, a.find('='));
    if (command->get_option_no_throw(name) != nullptr) continue;
    std::string near = long_name ? main_name[nearest(name, names)] : "";
    if (near.empty()) near = same_option_here(app, *command, name);
    out += "tach " + command->get_name() + " has no option " + name +
           (near.empty() ? "" : "; did you mean " + near + "?") + " (tach " + command->get_name() +
           " --help lists them)\n";
  }
  return out;
}

std::string unexpected_arguments(const CLI::App& app, const std::vector<std::string>& args) {
  std::vector<std::string> left = app.remaining(true);
  std::vector<std::string> given;  // left, in the order of args
  for (size_t i = 1; i < args.size() && !left.empty(); ++i) {
    const auto it = std::find(left.begin(), left.end(), args[i]);
    if (it == left.end()) continue;
    given.push_back(args[i]);
    left.erase(it);
  }
  given.insert(given.end(), left.begin(), left.end());
  const CLI::App* command = command_of(app, args);
  const std::string who = command ? "tach " + command->get_name() : std::string("tach");
  std::string list;
  for (const auto& a : given) list += (list.empty() ? "" : " ") + (a.empty() ? std::string("\"\"") : a);
  return who + " does not take: " + list + " (" + who + " --help lists what it takes)";
}

}  // namespace tach::cli
