// SHA256SUMS for a run directory, in sha256sum's own format, and its check.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "model/hub_files.h"
#include "model/safetensors_writer.h"
#include "tach/error.h"
#include "tach/report.h"

namespace fs = std::filesystem;

namespace tach {

namespace {

constexpr const char* kManifest = "SHA256SUMS";

// Every regular file under dir (symlinks to files followed, as sha256sum reads them), relative,
// sorted; the manifest itself and the temporary files of an atomic write left out.
std::vector<std::string> artefacts(const fs::path& dir) {
  std::vector<std::string> out;
  for (auto it = fs::recursive_directory_iterator(dir); it != fs::recursive_directory_iterator(); ++it) {
    if (!it->is_regular_file()) continue;
    const std::string rel = fs::relative(it->path(), dir).generic_string();
    if (rel == kManifest || rel.rfind(std::string(kManifest) + ".tmp-", 0) == 0) continue;
    out.push_back(rel);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// sha256sum's escaping: a name with '\\' or '\n' gets a leading '\\' on its line, and those
// characters are written as "\\\\" and "\\n".
std::string manifest_line(const std::string& digest, const std::string& name) {
  if (name.find_first_of("\\\n") == std::string::npos) return digest + "  " + name + "\n";
  std::string escaped;
  for (char c : name) escaped += c == '\\' ? std::string("\\\\") : c == '\n' ? std::string("\\n") : std::string(1, c);
  return "\\" + digest + "  " + escaped + "\n";
}

// One line back into (digest, name); nullopt when it is not a sha256sum line.
std::optional<std::pair<std::string, std::string>> parse_line(std::string line) {
  const bool escaped = !line.empty() && line[0] == '\\';
  if (escaped) line.erase(0, 1);
  if (line.size() < 66 || line[64] != ' ' || (line[65] != ' ' && line[65] != '*')) return std::nullopt;
  std::string digest = line.substr(0, 64);
  if (digest.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos) return std::nullopt;
  std::transform(digest.begin(), digest.end(), digest.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  std::string name;
  const std::string raw = line.substr(66);
  for (size_t i = 0; i < raw.size(); ++i) {
    if (escaped && raw[i] == '\\' && i + 1 < raw.size()) {
      const char next = raw[++i];
      if (next != '\\' && next != 'n') return std::nullopt;
      name += next == 'n' ? '\n' : '\\';
    } else {
      name += raw[i];
    }
  }
  if (name.empty()) return std::nullopt;
  return std::make_pair(digest, name);
}

}  // namespace

int64_t write_manifest(const std::string& run_dir) {
  check(fs::is_directory(run_dir), run_dir + ": not a directory");
  std::string text;
  const auto files = artefacts(run_dir);
  for (const auto& f : files) text += manifest_line(model::sha256_of_file((fs::path(run_dir) / f).string()), f);
  model::write_file_atomically((fs::path(run_dir) / kManifest).string(), text);
  return int64_t(files.size());
}

ManifestCheck verify_manifest(const std::string& run_dir) {
  const fs::path path = fs::path(run_dir) / kManifest;
  check(fs::is_regular_file(path),
        path.string() + " does not exist: write it first with `tach manifest " + run_dir + "`");
  std::ifstream in(path, std::ios::binary);
  std::map<std::string, std::string> listed;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    const auto entry = parse_line(line);
    check(entry.has_value(), path.string() + ":" + std::to_string(n) +
                                 ": not a SHA256SUMS line (want 64 hex digits, two spaces and a file name)");
    check(listed.emplace(entry->second, entry->first).second,
          path.string() + ":" + std::to_string(n) + ": " + entry->second + " is listed twice");
  }
  ManifestCheck c;
  for (const auto& [name, digest] : listed) {
    const fs::path file = fs::path(run_dir) / name;
    if (!fs::is_regular_file(file)) c.missing.push_back(name);
    else if (model::sha256_of_file(file.string()) != digest) c.changed.push_back(name);
    else ++c.verified;
  }
  for (const auto& f : artefacts(run_dir))
    if (!listed.count(f)) c.added.push_back(f);
  return c;
}

}  // namespace tach
