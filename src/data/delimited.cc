// CSV and TSV through libcsv, which does the RFC 4180 state machine (quotes, escapes, fields
// spanning lines). Python's csv module is the reference: AG News' TSV quotes fields with "".
#include <csv.h>

#include <cstdlib>
#include <memory>

#include "data/records.h"
#include "tach/error.h"

namespace tach::data {

namespace {

struct Collector {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> current;
};

void on_field(void* field, size_t size, void* user) {
  static_cast<Collector*>(user)->current.emplace_back(static_cast<const char*>(field), size);
}

void on_record(int /*terminator*/, void* user) {
  auto* c = static_cast<Collector*>(user);
  c->rows.push_back(std::move(c->current));
  c->current.clear();
}

bool is_number(const std::string& s) {
  if (s.empty()) return false;
  char* end = nullptr;
  std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size();
}

// Some column holds numbers in every record after the first (up to 50 of them) and not in the first.
bool first_record_heads_a_number_column(const std::vector<std::vector<std::string>>& rows) {
  if (rows.size() < 2) return false;
  for (size_t col = 0; col < rows[0].size(); ++col) {
    if (is_number(rows[0][col])) continue;
    bool numbers = true;
    for (size_t i = 1; i < rows.size() && i <= 50 && numbers; ++i)
      if (rows[i].size() != 1 || !rows[i][0].empty())  // not a blank line
        numbers = col < rows[i].size() && is_number(rows[i][col]);
    if (numbers) return true;
  }
  return false;
}

// libcsv trims spaces and tabs around unquoted fields by default; csv and pandas keep them.
int no_space(unsigned char) { return 0; }

}  // namespace

Records read_delimited(const std::string& path, const std::string& bytes, char delimiter, const std::string& header,
                       const std::string& header_probe) {
  std::string_view text(bytes);
  if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);
  csv_parser parser;
  check(csv_init(&parser, CSV_STRICT | CSV_STRICT_FINI | CSV_APPEND_NULL) == 0, path + ": cannot start the CSV parser");
  std::unique_ptr<csv_parser, void (*)(csv_parser*)> guard(&parser, [](csv_parser* p) { csv_free(p); });
  csv_set_delim(&parser, static_cast<unsigned char>(delimiter));
  csv_set_space_func(&parser, no_space);
  Collector c;
  const size_t used = csv_parse(&parser, text.data(), text.size(), on_field, on_record, &c);
  if (used != text.size() || csv_fini(&parser, on_field, on_record, &c) != 0) {
    throw Error(path + ": malformed " + (delimiter == '\t' ? "TSV" : "CSV") + " near record " +
                std::to_string(c.rows.size() + 1) + " (byte " + std::to_string(used) +
                "): " + csv_strerror(csv_error(&parser)) + " (a quote inside an unquoted field, or an unclosed quote)");
  }
  Records r;
  if (c.rows.empty()) return r;
  check(header == "auto" || header == "yes" || header == "no", "header must be auto, yes or no, not '" + header + "'");
  // auto: the first record is a header when it names the column asked for; or, when that column
  // is asked for by a name (not a 0-based index, which only a file without a header offers), when
  // the first record looks like one, as Python's csv.Sniffer judges it: a field that is not a
  // number above a column of numbers (SST-2's "text<TAB>label" over 0s and 1s, asked for a
  // column it does not have, so that the error lists its real columns).
  const bool probe_is_index =
      !header_probe.empty() && header_probe.find_first_not_of("0123456789") == std::string::npos;
  bool has_header = header == "yes";
  if (header == "auto") {
    for (const auto& f : c.rows[0]) has_header = has_header || f == header_probe;
    has_header = has_header || (!probe_is_index && first_record_heads_a_number_column(c.rows));
  }
  size_t first = 0;
  if (has_header) {
    r.columns = c.rows[0];
    first = 1;
  } else {
    for (size_t i = 0; i < c.rows[0].size(); ++i) r.columns.push_back(std::to_string(i));
  }
  for (size_t i = first; i < c.rows.size(); ++i) {
    auto& row = c.rows[i];
    if (row.size() == 1 && row[0].empty()) continue;  // a blank line
    check(row.size() == r.columns.size(),
          path + ": record " + std::to_string(i + 1) + " has " + std::to_string(row.size()) + " fields, the " +
              (has_header ? "header has " : "first record has ") + std::to_string(r.columns.size()));
    r.rows.push_back(std::move(row));
    r.row_numbers.push_back(static_cast<int64_t>(i + 1));
  }
  return r;
}

}  // namespace tach::data
