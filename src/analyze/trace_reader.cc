#include "analyze/trace_reader.h"

#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <string_view>
#include <vector>

#include "tach/error.h"

namespace tach::analyze {
namespace {

using namespace std::string_view_literals;

using nlohmann::json;

// Where the bytes come from: fill() returns how many it wrote, 0 at the end.
class Source {
 public:
  virtual ~Source() = default;
  virtual size_t fill(char* buffer, size_t capacity) = 0;
  virtual std::string error() const { return {}; }
};

// gzip decoded as the scanner asks for bytes, plain files passed through. Errors are kept, not
// thrown, so that a truncated gzip stream is reported as such rather than as the JSON it cut short.
class GzipSource : public Source {
 public:
  explicit GzipSource(const std::string& path) {
    file_ = gzopen(path.c_str(), "rb");
    check(file_ != nullptr, path + ": cannot open (" + std::string(std::strerror(errno)) + ")");
    gzbuffer(file_, 1 << 17);
  }
  ~GzipSource() override { gzclose(file_); }
  GzipSource(const GzipSource&) = delete;
  GzipSource& operator=(const GzipSource&) = delete;

  size_t fill(char* buffer, size_t capacity) override {
    if (!error_.empty()) return 0;
    const int n = gzread(file_, buffer, static_cast<unsigned>(capacity));
    int errnum = Z_OK;
    const char* message = gzerror(file_, &errnum);
    if (n < 0 || (errnum != Z_OK && errnum != Z_STREAM_END)) {
      // Z_BUF_ERROR at the end: the gzip stream stopped before its end (a copy cut short).
      error_ = errnum == Z_BUF_ERROR ? "the gzip stream is truncated (the file was cut short)"
                                     : std::string("gzip error: ") + (message ? message : "unknown");
    }
    return n > 0 ? size_t(n) : 0;
  }
  std::string error() const override { return error_; }

 private:
  gzFile file_ = nullptr;
  std::string error_;
};

class TextSource : public Source {
 public:
  explicit TextSource(const std::string& text) : text_(text) {}
  size_t fill(char* buffer, size_t capacity) override {
    const size_t n = std::min(capacity, text_.size() - offset_);
    std::memcpy(buffer, text_.data() + offset_, n);
    offset_ += n;
    return n;
  }

 private:
  const std::string& text_;
  size_t offset_ = 0;
};

struct ParseFail {
  int64_t position;
  std::string what;
  bool at_end;  // the input ended where more was needed
};

struct Number {
  bool is_integer = false;
  int64_t integer = 0;
  double real = 0;
  double value() const { return is_integer ? double(integer) : real; }
};

// A JSON scanner over a refilled buffer: strings, numbers and literals read or skipped in place.
class Scanner {
 public:
  explicit Scanner(Source& source) : source_(source), buffer_(1 << 18) { p_ = end_ = buffer_.data(); }

  int peek() {
    if (p_ == end_ && !refill()) return -1;
    return static_cast<unsigned char>(*p_);
  }
  int get() {
    const int c = peek();
    if (c >= 0) ++p_;
    return c;
  }
  int64_t position() const { return consumed_ + (p_ - buffer_.data()); }

  [[noreturn]] void fail(const std::string& what) {
    const bool at_end = peek() < 0;
    throw ParseFail{position(), what, at_end};
  }

  void skip_ws() {
    for (;;) {
      while (p_ < end_ && (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t')) ++p_;
      if (p_ < end_ || !refill()) return;
    }
  }
  void expect(char c) {
    skip_ws();
    if (get() != c) fail(std::string("expected '") + c + "'");
  }

  // After the opening quote: the string's text into out (escapes decoded; out is not cleared).
  void string_into(std::string* out) {
    for (;;) {
      const char* start = p_;
      while (p_ < end_ && *p_ != '"' && *p_ != '\\' && static_cast<unsigned char>(*p_) >= 0x20) ++p_;
      if (out) out->append(start, size_t(p_ - start));
      const int c = peek();
      if (c < 0) fail("a string is not closed");
      if (c != '"' && c != '\\' && c >= 0x20) continue;  // the buffer ended mid-string: refilled
      ++p_;
      if (c == '"') return;
      if (c != '\\') fail("a control character inside a string");
      const int e = get();
      char plain = 0;
      switch (e) {
        case '"': plain = '"'; break;
        case '\\': plain = '\\'; break;
        case '/': plain = '/'; break;
        case 'b': plain = '\b'; break;
        case 'f': plain = '\f'; break;
        case 'n': plain = '\n'; break;
        case 'r': plain = '\r'; break;
        case 't': plain = '\t'; break;
        case 'u': {
          uint32_t cp = hex4();
          if (cp >= 0xD800 && cp < 0xDC00) {  // a surrogate pair
            if (get() != '\\' || get() != 'u') fail("a lone surrogate in a \\u escape");
            const uint32_t low = hex4();
            if (low < 0xDC00 || low >= 0xE000) fail("a lone surrogate in a \\u escape");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          } else if (cp >= 0xDC00 && cp < 0xE000) {
            fail("a lone surrogate in a \\u escape");
          }
          if (out) append_utf8(*out, cp);
          continue;
        }
        default: fail("an invalid escape in a string");
      }
      if (out) out->push_back(plain);
    }
  }

  Number number() {
    char text[64];
    const size_t n = number_text(text);
    Number out;
    if (n == 0) fail("expected a value");
    if (std::none_of(text, text + n, [](char c) { return c == '.' || c == 'e' || c == 'E'; })) {
      const auto r = std::from_chars(text, text + n, out.integer);
      if (r.ec == std::errc() && r.ptr == text + n) {
        out.is_integer = true;
        return out;
      }
    }
    const auto r = std::from_chars(text, text + n, out.real);
    if (r.ptr != text + n || (r.ec != std::errc() && r.ec != std::errc::result_out_of_range))
      fail("a malformed number");
    return out;
  }

  // A time in µs, as torch writes them, to whole ns from its digits: a double holds an epoch
  // timestamp (1.7e15 µs, as older traces and HTA's write) to a quarter µs only. Fractions past
  // the ns are rounded; a time beyond ±4.6e15 µs (146 years) is left unset, so that a start plus
  // a duration, and their difference, stay inside int64 ns.
  std::optional<int64_t> microseconds_as_ns() {
    char text[64];
    const size_t n = number_text(text);
    if (n == 0) fail("expected a value");
    const char* end = text + n;
    if (std::any_of(static_cast<const char*>(text), end, [](char c) { return c == 'e' || c == 'E'; })) {
      double v = 0;
      const auto r = std::from_chars(text, end, v);
      if (r.ptr != end || (r.ec != std::errc() && r.ec != std::errc::result_out_of_range)) fail("a malformed number");
      if (!std::isfinite(v) || std::fabs(v) >= 4.6e15) return std::nullopt;
      return std::llround(v * 1000.0);
    }
    const bool negative = text[0] == '-';
    const char* p = text + (negative ? 1 : 0);
    const char* dot = std::find(p, end, '.');
    if (p == end) fail("a malformed number");
    int64_t whole = 0;
    if (dot != p) {
      const auto r = std::from_chars(p, dot, whole);
      if (r.ptr != dot || r.ec == std::errc::invalid_argument) fail("a malformed number");
      if (r.ec != std::errc() || whole >= 4600000000000000LL) return std::nullopt;
    }
    int64_t fraction = 0;  // ns
    if (dot != end) {
      const char* f = dot + 1;
      if (f == end && dot == p) fail("a malformed number");
      for (int k = 0; k < 3; ++k) fraction = fraction * 10 + (f + k < end ? digit(f[k]) : 0);
      if (f + 3 < end && digit(f[3]) >= 5) ++fraction;
      for (const char* q = f + 3; q < end; ++q) (void)digit(*q);
    }
    const int64_t ns = whole * 1000 + fraction;
    return negative ? -ns : ns;
  }

  void literal(const char* word) {
    for (const char* w = word; *w; ++w)
      if (get() != *w) fail(std::string("an invalid literal (expected ") + word + ")");
  }

  // Any value, read and dropped.
  void skip_value(int depth = 0) {
    skip_ws();
    const int c = peek();
    if (depth > kMaxDepth) fail("nested more than 512 levels deep");
    switch (c) {
      case '{':
        ++p_;
        object([&](const std::string&) { skip_value(depth + 1); });
        return;
      case '[':
        ++p_;
        array([&] { skip_value(depth + 1); });
        return;
      case '"':
        ++p_;
        string_into(nullptr);
        return;
      case 't': literal("true"); return;
      case 'f': literal("false"); return;
      case 'n': literal("null"); return;
      default: (void)number();
    }
  }

  // Any value, built (the small top-level fields).
  json value(int depth = 0) {
    skip_ws();
    const int c = peek();
    if (depth > kMaxDepth) fail("nested more than 512 levels deep");
    switch (c) {
      case '{': {
        ++p_;
        json o = json::object();
        object([&](const std::string& k) { o[k] = value(depth + 1); });
        return o;
      }
      case '[': {
        ++p_;
        json a = json::array();
        array([&] { a.push_back(value(depth + 1)); });
        return a;
      }
      case '"': {
        ++p_;
        std::string s;
        string_into(&s);
        return json(std::move(s));
      }
      case 't': literal("true"); return json(true);
      case 'f': literal("false"); return json(false);
      case 'n': literal("null"); return json(nullptr);
      default: {
        const Number n = number();
        return n.is_integer ? json(n.integer) : json(n.real);
      }
    }
  }

  // After '{': on_key(key) for each member, which must read or skip its value.
  template <class F>
  void object(F&& on_key) {
    std::string key;
    skip_ws();
    if (peek() == '}') {
      ++p_;
      return;
    }
    for (;;) {
      skip_ws();
      if (get() != '"') fail("expected a key");
      key.clear();
      string_into(&key);
      expect(':');
      on_key(static_cast<const std::string&>(key));
      skip_ws();
      const int c = get();
      if (c == ',') continue;
      if (c == '}') return;
      fail("expected ',' or '}'");
    }
  }

  // After '[': on_element() for each element, which must read or skip it.
  template <class F>
  void array(F&& on_element) {
    skip_ws();
    if (peek() == ']') {
      ++p_;
      return;
    }
    for (;;) {
      on_element();
      skip_ws();
      const int c = get();
      if (c == ',') continue;
      if (c == ']') return;
      fail("expected ',' or ']'");
    }
  }

 private:
  static constexpr int kMaxDepth = 512;

  // The characters of a number, into text (64 bytes); returns how many.
  size_t number_text(char* text) {
    size_t n = 0;
    for (int c = peek(); c >= 0 && (std::isdigit(c) || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E');
         c = peek()) {
      if (n + 1 >= 64) fail("a number too long");
      text[n++] = char(c);
      ++p_;
    }
    return n;
  }
  int digit(char c) {
    if (c < '0' || c > '9') fail("a malformed number");
    return c - '0';
  }

  bool refill() {
    if (at_end_) return false;
    consumed_ += end_ - buffer_.data();
    const size_t n = source_.fill(buffer_.data(), buffer_.size());
    p_ = buffer_.data();
    end_ = p_ + n;
    at_end_ = n == 0;
    return n > 0;
  }

  uint32_t hex4() {
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) {
      const int c = get();
      v <<= 4;
      if (c >= '0' && c <= '9') v |= uint32_t(c - '0');
      else if (c >= 'a' && c <= 'f') v |= uint32_t(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F') v |= uint32_t(c - 'A' + 10);
      else fail("an invalid \\u escape");
    }
    return v;
  }

  static void append_utf8(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
      out.push_back(char(cp));
    } else if (cp < 0x800) {
      out.push_back(char(0xC0 | (cp >> 6)));
      out.push_back(char(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
      out.push_back(char(0xE0 | (cp >> 12)));
      out.push_back(char(0x80 | ((cp >> 6) & 0x3F)));
      out.push_back(char(0x80 | (cp & 0x3F)));
    } else {
      out.push_back(char(0xF0 | (cp >> 18)));
      out.push_back(char(0x80 | ((cp >> 12) & 0x3F)));
      out.push_back(char(0x80 | ((cp >> 6) & 0x3F)));
      out.push_back(char(0x80 | (cp & 0x3F)));
    }
  }

  Source& source_;
  std::vector<char> buffer_;
  const char* p_ = nullptr;
  const char* end_ = nullptr;
  int64_t consumed_ = 0;
  bool at_end_ = false;
};

// The trace's structure: the top-level fields, and each event's fields into one RawEvent.
class TraceParser {
 public:
  TraceParser(Scanner& s, const TraceCallbacks& callbacks) : s_(s), callbacks_(callbacks) {}

  void document() {
    s_.skip_ws();
    const int c = s_.peek();
    if (c == '{') {
      s_.get();
      root_seen_ = true;
      s_.object([&](const std::string& key) {
        s_.skip_ws();
        if (key == "traceEvents" && s_.peek() == '[') {
          s_.get();
          saw_events_ = true;
          events();
        } else if (key == "traceEvents") {
          s_.skip_value();
        } else {
          json v = s_.value();
          if (callbacks_.field) callbacks_.field(key, std::move(v));
        }
      });
    } else if (c == '[') {  // Chrome's other layout: a bare array of events
      s_.get();
      root_seen_ = true;
      saw_events_ = true;
      events();
    } else {
      s_.skip_value();
      root_seen_ = true;
    }
    s_.skip_ws();
    if (s_.peek() >= 0) s_.fail("more after the end of the document");
  }

  bool root_seen() const { return root_seen_; }
  bool saw_events() const { return saw_events_; }
  // The event array's elements: objects (events), and anything else (skipped).
  int64_t event_objects() const { return event_objects_; }
  int64_t other_elements() const { return other_elements_; }

 private:
  void events() {
    s_.array([&] {
      s_.skip_ws();
      if (s_.peek() != '{') {
        s_.skip_value();
        ++other_elements_;
        return;
      }
      s_.get();
      ++event_objects_;
      event_.clear();
      s_.object([&](const std::string& key) { event_field(key); });
      if (callbacks_.event) callbacks_.event(event_);
    });
  }

  // Keys compare as string_views: lengths first, so the many args no analysis reads (grid, block,
  // registers per thread, ...) cost a length check each, not a strlen and a memcmp.
  void event_field(std::string_view key) {
    if (key == "ph"sv) return string(event_.ph);
    if (key == "cat"sv) return string(event_.cat);
    if (key == "name"sv) return string(event_.name);
    if (key == "ts"sv) return time(event_.ts_ns);
    if (key == "dur"sv) return time(event_.dur_ns);
    if (key == "pid"sv) return id(event_.pid);
    if (key == "tid"sv) return id(event_.tid);
    if (key == "args"sv) {
      s_.skip_ws();
      if (s_.peek() != '{') return s_.skip_value();
      s_.get();
      s_.object([&](const std::string& k) { arg(k); });
      return;
    }
    s_.skip_value();
  }

  void arg(std::string_view key) {
    // "External id"; kineto before 2022 wrote "external id".
    if (key == "External id"sv || key == "external id"sv) return integer(event_.external_id);
    if (key == "correlation"sv) return integer(event_.correlation);
    if (key == "device"sv) return integer(event_.device);
    if (key == "stream"sv) return integer(event_.stream);
    if (key == "flops"sv) return integer(event_.flops);
    if (key == "Bytes"sv) return integer(event_.bytes);
    if (key == "Total Allocated"sv) return integer(event_.total_allocated);
    if (key == "Total Reserved"sv) return integer(event_.total_reserved);
    if (key == "Device Type"sv) return integer(event_.device_type);
    if (key == "Device Id"sv) return integer(event_.device_id);
    if (key == "name"sv) return string(event_.arg_name);
    if (key == "Input Dims"sv) return dims();
    if (key == "Input type"sv) return types();
    s_.skip_value();
  }

  void string(std::string& out) {
    s_.skip_ws();
    if (s_.peek() != '"') return s_.skip_value();
    s_.get();
    out.clear();
    s_.string_into(&out);
  }
  bool is_number_start() {
    const int c = s_.peek();
    return c == '-' || (c >= '0' && c <= '9');
  }
  void time(std::optional<int64_t>& out) {
    s_.skip_ws();
    if (!is_number_start()) return s_.skip_value();
    out = s_.microseconds_as_ns();
  }
  // A whole number; a fraction is rounded, one out of range is dropped.
  static std::optional<int64_t> whole(const Number& n) {
    if (n.is_integer) return n.integer;
    if (std::isfinite(n.real) && std::fabs(n.real) < 9e18) return std::llround(n.real);
    return std::nullopt;
  }
  void integer(std::optional<int64_t>& out) {
    s_.skip_ws();
    if (!is_number_start()) return s_.skip_value();
    out = whole(s_.number());
  }
  // pids and tids: numbers, or strings ("Spans", "PyTorch Profiler") given a stable number.
  void id(int64_t& out) {
    s_.skip_ws();
    if (is_number_start()) {
      out = whole(s_.number()).value_or(0);
      return;
    }
    if (s_.peek() != '"') return s_.skip_value();
    s_.get();
    scratch_.clear();
    s_.string_into(&scratch_);
    int64_t n = 0;
    const auto r = std::from_chars(scratch_.data(), scratch_.data() + scratch_.size(), n);
    out = r.ec == std::errc() && r.ptr == scratch_.data() + scratch_.size() && !scratch_.empty()
              ? n
              : static_cast<int64_t>(std::hash<std::string>{}(scratch_)&0x3fffffffffffffffULL) | (int64_t(1) << 62);
  }

  // "Input Dims": one list per input. torch's input_shapes shows a tensor's shape, and [] for a
  // scalar and for a list of tensors (whose shapes the trace lists but torch's shapes() omits).
  void dims() {
    s_.skip_ws();
    if (s_.peek() != '[') return s_.skip_value();
    s_.get();
    event_.has_dims = true;
    event_.shapes = "[";
    bool first = true;
    s_.array([&] {
      if (!first) event_.shapes += ", ";
      first = false;
      std::vector<int64_t> shape;
      s_.skip_ws();
      if (s_.peek() == '[') {
        s_.get();
        bool plain = true;
        s_.array([&] {
          s_.skip_ws();
          if (plain && is_number_start()) {
            shape.push_back(whole(s_.number()).value_or(0));
          } else {
            plain = false;
            s_.skip_value();
          }
        });
        if (!plain) shape.clear();
      } else {
        s_.skip_value();
      }
      event_.shapes += '[';
      for (size_t k = 0; k < shape.size(); ++k) {
        if (k) event_.shapes += ", ";
        event_.shapes += std::to_string(shape[k]);
      }
      event_.shapes += ']';
      event_.dims.push_back(std::move(shape));
    });
    event_.shapes += ']';
  }

  // "Input type": ["float", "Scalar", ...] kept as text, "[float, Scalar]".
  void types() {
    s_.skip_ws();
    if (s_.peek() != '[') return s_.skip_value();
    s_.get();
    event_.types = "[";
    bool first = true;
    s_.array([&] {
      if (!first) event_.types += ", ";
      first = false;
      s_.skip_ws();
      if (s_.peek() == '"') {
        s_.get();
        s_.string_into(&event_.types);
      } else {
        s_.skip_value();
      }
    });
    event_.types += ']';
  }

  Scanner& s_;
  const TraceCallbacks& callbacks_;
  RawEvent event_;
  std::string scratch_;
  bool root_seen_ = false, saw_events_ = false;
  int64_t event_objects_ = 0, other_elements_ = 0;
};

void parse(const std::string& name, Source& source, const TraceCallbacks& callbacks) {
  Scanner scanner(source);
  TraceParser parser(scanner, callbacks);
  try {
    parser.document();
  } catch (const ParseFail& f) {
    if (!source.error().empty()) throw Error(name + ": " + source.error());
    if (f.at_end && f.position == 0) throw Error(name + ": not a trace: the file is empty");
    if (f.at_end && parser.root_seen())
      throw Error(name + ": the JSON stops at byte " + std::to_string(f.position) +
                  " before the trace's end (truncated: the profiler was stopped mid-write, or a copy was cut short)");
    throw Error(name + ": not a trace: malformed JSON at byte " + std::to_string(f.position) + " (" + f.what + ")");
  }
  if (!source.error().empty()) throw Error(name + ": " + source.error());
  check(parser.saw_events(), name + ": not a trace: a JSON document without traceEvents (torch.profiler's " +
                                 "export_chrome_trace and tensorboard_trace_handler write *.pt.trace.json[.gz])");
  check(parser.event_objects() > 0 || parser.other_elements() == 0,
        name + ": not a trace: its event array holds " + std::to_string(parser.other_elements()) +
            " values and no event (a trace's events are objects with ph, name, ts, ...)");
}

}  // namespace

void RawEvent::clear() {
  ph.clear();
  cat.clear();
  name.clear();
  ts_ns.reset();
  dur_ns.reset();
  pid = tid = 0;
  external_id.reset();
  correlation.reset();
  device.reset();
  stream.reset();
  flops.reset();
  bytes.reset();
  total_allocated.reset();
  total_reserved.reset();
  device_type.reset();
  device_id.reset();
  arg_name.clear();
  has_dims = false;
  dims.clear();
  shapes.clear();
  types.clear();
}

void read_trace_file(const std::string& path, const TraceCallbacks& callbacks) {
  GzipSource source(path);
  parse(path, source, callbacks);
}

void read_trace_text(const std::string& name, const std::string& text, const TraceCallbacks& callbacks) {
  TextSource source(text);
  parse(name, source, callbacks);
}

}  // namespace tach::analyze
