#include "data/dataset_kind.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace tach::data {

namespace {

std::string lower_extension(const std::string& path) {
  std::string ext = std::filesystem::path(path).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return ext;
}

}  // namespace

DatasetKind guess_dataset_kind(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return DatasetKind::unknown;
  std::string head(64 * 1024, '\0');
  f.read(head.data(), std::streamsize(head.size()));
  head.resize(size_t(f.gcount()));
  if (head.rfind("\xEF\xBB\xBF", 0) == 0) head.erase(0, 3);  // a UTF-8 byte order mark
  const size_t first = head.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return DatasetKind::unknown;
  // JSON (an object, a list, or JSONL lines of objects): told apart by the keys each task uses;
  // the head may end mid-record, so keys are looked for, not parsed.
  if (head[first] == '{' || head[first] == '[') {
    const auto has = [&](const char* key) { return head.find(std::string("\"") + key + "\"") != std::string::npos; };
    if (has("paragraphs") || (has("question") && has("context"))) return DatasetKind::squad;
    if (has("tokens")) return DatasetKind::tagged_json;
    return DatasetKind::unknown;
  }
  // CoNLL: -DOCSTART-, or non-blank lines of one column count, a token and at least one more (a
  // text's lines vary in their words).
  std::istringstream lines(head.substr(first));
  std::string line;
  int checked = 0;
  size_t columns = 0;
  while (checked < 8 && std::getline(lines, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    if (line.rfind("-DOCSTART-", 0) == 0) return DatasetKind::conll;
    std::istringstream words(line);
    size_t n = 0;
    for (std::string w; words >> w;) ++n;
    if (n < 2 || (columns && n != columns)) {
      checked = 0;  // not CoNLL text
      break;
    }
    columns = n;
    ++checked;
  }
  if (checked > 0) return DatasetKind::conll;
  // Not CoNLL text: a table by its extension (its rows' words vary).
  const std::string ext = lower_extension(path);
  return ext == ".csv" || ext == ".tsv" || ext == ".tab" ? DatasetKind::table : DatasetKind::unknown;
}

std::string dataset_kind_name(DatasetKind kind, const std::string& path) {
  switch (kind) {
    case DatasetKind::table: {
      const std::string ext = lower_extension(path);
      return "a table (" + (ext.empty() ? std::string("csv") : ext.substr(1)) + " rows)";
    }
    case DatasetKind::squad: return "SQuAD data";
    case DatasetKind::tagged_json: return "JSON records with tokens and tags";
    case DatasetKind::conll: return "CoNLL text";
    case DatasetKind::unknown: break;
  }
  return "";
}

std::string dataset_kind_task(DatasetKind kind) {
  switch (kind) {
    case DatasetKind::squad: return "question-answering";
    case DatasetKind::tagged_json:
    case DatasetKind::conll: return "token-classification";
    case DatasetKind::table: return "sequence-classification";
    case DatasetKind::unknown: break;
  }
  return "";
}

std::string dataset_kind_reader(DatasetKind kind) {
  switch (kind) {
    case DatasetKind::squad: return "a question-answering model";
    case DatasetKind::tagged_json:
    case DatasetKind::conll: return "a token classifier";
    case DatasetKind::table: return "a sequence classifier";
    case DatasetKind::unknown: break;
  }
  return "";
}

std::string other_task_data_message(const std::string& path, DatasetKind found, const std::string& expected,
                                    const std::string& fix) {
  return path + ": this file is " + dataset_kind_name(found, path) + ", which " + dataset_kind_reader(found) +
         " reads, not " + expected + "; " + fix;
}

}  // namespace tach::data
