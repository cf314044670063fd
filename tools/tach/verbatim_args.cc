#include "verbatim_args.h"

#include <unistd.h>

#include <algorithm>

namespace tach::cli {

namespace {
// Exactly what CLI11 2.1's Option::_add_result treats as a list: front '[' and back ']'.
bool would_be_split(const std::string& a) { return a.size() >= 2 && a.front() == '[' && a.back() == ']'; }
}  // namespace

VerbatimArgs::VerbatimArgs(int argc, const char* const* argv) {
  // A control byte, the pid and a counter: no text a user types can equal a placeholder by accident,
  // and the placeholder has no '[', ',', '-' or '=' for CLI11 to act on.
  tag_ = "\x01tach-verbatim-" + std::to_string(::getpid()) + "-";
  const auto placeholder = [this](std::string original) {
    originals_.push_back(std::move(original));
    return tag_ + std::to_string(originals_.size() - 1);
  };
  bool after_marker = false;  // after "--" every argument is a positional value
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (would_be_split(a)) {
      args_.push_back(placeholder(std::move(a)));
      continue;
    }
    if (!after_marker && a == "--") after_marker = true;
    // The value inside "--name=[...]" and "-k[...]" is split the same way.
    if (!after_marker && a.size() > 2 && a[0] == '-') {
      const size_t eq = a.find('=');
      const size_t value_at = a[1] != '-' ? 2 : eq == std::string::npos ? a.size() : eq + 1;
      if (would_be_split(a.substr(value_at))) {
        args_.push_back(a.substr(0, value_at) + placeholder(a.substr(value_at)));
        continue;
      }
    }
    args_.push_back(std::move(a));
  }
}

std::string VerbatimArgs::restore(const std::string& value) const {
  if (value.compare(0, tag_.size(), tag_) != 0) return value;
  const std::string index = value.substr(tag_.size());
  if (index.empty() || !std::all_of(index.begin(), index.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return value;
  const size_t k = std::stoul(index);
  return k < originals_.size() ? originals_[k] : value;
}

void VerbatimArgs::restore_in(CLI::App& app) const {
  for (CLI::Option* opt : app.get_options()) {
    if (opt->get_type_size_max() == 0) continue;  // flags take no value
    opt->transform([this](const std::string& value) { return restore(value); });
  }
  for (CLI::App* sub : app.get_subcommands({})) restore_in(*sub);
}

std::vector<std::string> VerbatimArgs::for_parse() const { return {args_.rbegin(), args_.rend()}; }

}  // namespace tach::cli
