#include "train/run_names.h"

#include <cctype>
#include <ctime>

namespace tach::train {

std::string utc_stamp() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", &tm);
  return buf;
}

std::string model_name_for_runs(const std::string& model) {
  const size_t cut = model.find_last_of("/:");
  std::string name = model.substr(cut == std::string::npos ? 0 : cut + 1);
  for (char& ch : name)
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '-' && ch != '.' && ch != '_') ch = '-';
  return name;
}

}  // namespace tach::train
