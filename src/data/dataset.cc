// read_dataset: picks the reader from the format, then the text and label columns.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "data/records.h"
#include "tach/dataset.h"
#include "model/hub.h"
#include "tach/error.h"

namespace tach {

namespace {

std::string read_file(const std::string& path) {
  std::error_code ec;
  check(std::filesystem::is_regular_file(path, ec), "dataset " + path + ": not found (or not a file)");
  std::ifstream in(path, std::ios::binary);
  check(static_cast<bool>(in), "dataset " + path + ": cannot open");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string detect_format(const std::string& path, const std::string& format) {
  if (format != "auto") {
    check(format == "csv" || format == "tsv" || format == "jsonl" || format == "json",
          "dataset format '" + format + "' is not one of auto, csv, tsv, jsonl, json");
    return format;
  }
  std::string ext = std::filesystem::path(path).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  if (ext == ".csv") return "csv";
  if (ext == ".tsv" || ext == ".tab") return "tsv";
  if (ext == ".jsonl" || ext == ".ndjson") return "jsonl";
  if (ext == ".json") return "json";
  throw Error("dataset " + path + ": cannot tell the format from the extension '" + ext +
              "'; say it with --dataset-format csv|tsv|jsonl|json");
}

std::string joined(const std::vector<std::string>& names) {
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : ", ") + ("'" + n + "'");
  return s;
}

size_t column_index(const data::Records& r, const std::string& name, const std::string& role, const std::string& path) {
  for (size_t i = 0; i < r.columns.size(); ++i)
    if (r.columns[i] == name) return i;
  throw Error("dataset " + path + ": no " + role + " column '" + name + "'; the columns are " + joined(r.columns) +
              " (choose with --" + role + "-column; files without a header number their columns from 0)");
}

}  // namespace

Dataset read_dataset(const DatasetOptions& options) {
  check(!options.path.empty(), "no dataset path given");
  if (model::is_hub_dataset_spec(options.path)) {  // hf://datasets/ORG/NAME[@REV][/PATH]: the Hub's cache
    DatasetOptions local = options;
    local.path = model::hub_dataset_file(options.path, model::HubSettings::from_environment());
    Dataset d = read_dataset(local);
    d.path = options.path + " (" + local.path + ")";
    return d;
  }
  const std::string bytes = read_file(options.path);
  Dataset d;
  d.path = options.path;
  d.format = detect_format(options.path, options.format);
  data::Records r;
  if (d.format == "csv" || d.format == "tsv")
    r = data::read_delimited(options.path, bytes, d.format == "csv" ? ',' : '\t', options.header, options.text_column);
  else if (d.format == "jsonl")
    r = data::read_jsonl(options.path, bytes);
  else
    r = data::read_json_splits(options.path, bytes, options.split);
  d.split = r.split;
  d.columns = r.columns;
  const std::string where = options.path + (r.split.empty() ? "" : " (split '" + r.split + "')");
  check(!r.rows.empty(), "dataset " + where + " is empty: no records to read");

  // JSON [text, label] pairs have no names: the text is first, the label second.
  const bool pairs = d.format == "json" && r.columns == std::vector<std::string>{"0", "1"};
  const size_t text_col = pairs ? 0 : column_index(r, options.text_column, "text", options.path);
  const bool has_label = pairs || !options.label_column.empty();  // texts only (tach embed) when empty
  const size_t label_col = pairs ? 1 : has_label ? column_index(r, options.label_column, "label", options.path) : 0;
  const bool has_pair = !options.text_pair_column.empty();
  const size_t pair_col = has_pair ? column_index(r, options.text_pair_column, "text-pair", options.path) : 0;
  d.examples.reserve(r.rows.size());
  for (size_t i = 0; i < r.rows.size(); ++i) {
    auto& row = r.rows[i];
    Example e{std::move(row[text_col]), has_pair ? std::move(row[pair_col]) : std::string(),
              has_label ? std::move(row[label_col]) : std::string(), r.row_numbers[i]};
    check(!has_label || !e.label.empty(), "dataset " + where + ": record " + std::to_string(e.source_row) + " has no label in column '" +
                                r.columns[label_col] + "'");
    d.examples.push_back(std::move(e));
  }
  return d;
}

void shuffle_examples(std::vector<Example>& examples, uint64_t seed) {
  std::mt19937_64 rng(seed);
  // Fisher-Yates with our own index draw: std::shuffle's sequence is implementation-defined.
  for (size_t i = examples.size(); i > 1; --i) std::swap(examples[i - 1], examples[rng() % i]);
}

}  // namespace tach
