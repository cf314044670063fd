#include "analyze/trace_reader.h"

#include <isa-l/igzip_lib.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
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

// The file read in blocks; gzip (by its first two bytes, not the name) inflated by ISA-L's igzip as
// the scanner asks for bytes, each member's CRC-32 checked, members one after another as zlib's
// gzread reads them; anything else passed through. Errors are kept, not thrown, so that a
// truncated gzip stream is reported as such rather than as the JSON it cut short.
class GzipSource : public Source {
 public:
  explicit GzipSource(const std::string& path) : in_(1 << 18) {
    file_ = std::fopen(path.c_str(), "rb");
    check(file_ != nullptr, path + ": cannot open (" + std::string(std::strerror(errno)) + ")");
    read_in();
    gzip_ = left_ >= 2 && in_[0] == 0x1f && in_[1] == 0x8b;
    if (gzip_) start_member();
  }
  ~GzipSource() override { std::fclose(file_); }
  GzipSource(const GzipSource&) = delete;
  GzipSource& operator=(const GzipSource&) = delete;

  size_t fill(char* buffer, size_t capacity) override {
    if (!error_.empty()) return 0;
    if (!gzip_) {
      if (left_ == 0) read_in();
      const size_t n = std::min(capacity, left_);
      std::memcpy(buffer, next_, n);
      next_ += n;
      left_ -= n;
      return n;
    }
    while (!done_) {
      if (state_.avail_in == 0) {
        read_in();
        state_.next_in = next_;
        state_.avail_in = static_cast<uint32_t>(left_);
      }
      const bool no_input = state_.avail_in == 0;
      state_.next_out = reinterpret_cast<uint8_t*>(buffer);
      state_.avail_out = static_cast<uint32_t>(std::min<size_t>(capacity, UINT32_MAX));
      const int r = isal_inflate(&state_);
      const size_t n = capacity - state_.avail_out;
      if (r != ISAL_DECOMP_OK) {
        error_ = r == ISAL_INCORRECT_CHECKSUM ? "the gzip stream is corrupt (its CRC-32 does not match its data)"
                                              : "the gzip stream is corrupt (igzip error " + std::to_string(r) + ")";
        return n;
      }
      if (state_.block_state == ISAL_BLOCK_FINISH) next_member();
      if (n > 0) return n;
      if (no_input && !done_) {  // the file ended inside a member
        error_ = "the gzip stream is truncated (the file was cut short)";
        return 0;
      }
    }
    return 0;
  }
  std::string error() const override { return error_; }

 private:
  // More of the file once the last block is used up.
  void read_in() {
    left_ = std::fread(in_.data(), 1, in_.size(), file_);
    next_ = in_.data();
    if (left_ == 0 && std::ferror(file_)) error_ = std::string("cannot read (") + std::strerror(errno) + ")";
  }
  void start_member() {
    uint8_t* next = next_;
    const uint32_t left = static_cast<uint32_t>(left_);
    isal_inflate_init(&state_);
    state_.crc_flag = ISAL_GZIP;  // the header parsed, the CRC-32 and length checked
    state_.next_in = next;
    state_.avail_in = left;
  }
  // After a member: another one where gzip's magic bytes follow; anything else ends the stream
  // (zlib ignores trailing bytes too).
  void next_member() {
    if (state_.avail_in < 2) {
      const size_t kept = state_.avail_in;
      std::memmove(in_.data(), state_.next_in, kept);
      left_ = kept + std::fread(in_.data() + kept, 1, in_.size() - kept, file_);
      next_ = in_.data();
    } else {
      next_ = state_.next_in;
      left_ = state_.avail_in;
    }
    if (left_ >= 2 && next_[0] == 0x1f && next_[1] == 0x8b) start_member();
    else done_ = true;
  }

  std::FILE* file_ = nullptr;
  std::vector<uint8_t> in_;
  uint8_t* next_ = nullptr;  // the file's bytes not yet given to igzip (or, plain, to the scanner)
  size_t left_ = 0;
  bool gzip_ = false, done_ = false;
  inflate_state state_{};
  std::string error_;
};

class TextSource : public Source {
 public:
  TextSource(const std::string& text, size_t chunk) : text_(text), chunk_(chunk) {}
  size_t fill(char* buffer, size_t capacity) override {
    const size_t n = std::min({capacity, chunk_, text_.size() - offset_});
    std::memcpy(buffer, text_.data() + offset_, n);
    offset_ += n;
    return n;
  }

 private:
  const std::string& text_;
  size_t chunk_;
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
      p_ = plain_run(p_, end_);
      if (out) out->append(start, size_t(p_ - start));
      const int c = peek();
      if (c < 0) fail("a string is not closed");
      if (c != '"' && c != '\\' && c >= 0x20) continue;  // the buffer ended mid-string: refilled
      ++p_;
      if (c == '"') return;
      if (c != '\\') fail("a control character inside a string");
      escape(out);
    }
  }

  // After the opening quote of a key: its text, viewing the buffer where the key lies whole in it
  // without escapes (nearly always), else decoded into a scratch string. The view holds only
  // until the scanner reads on: callers look at it before anything else.
  std::string_view key() {
    fill_to(kKeyWindow);
    const char* stop = plain_run(p_, end_);
    if (stop < end_ && *stop == '"') {
      const std::string_view text(p_, size_t(stop - p_));
      p_ = stop + 1;
      return text;
    }
    key_.clear();
    string_into(&key_);
    return key_;
  }

  Number number() {
    const auto [text, end] = number_text();
    Number out;
    if (text == end) fail("expected a value");
    if (plain_integer(text, end, out.integer)) {
      out.is_integer = true;
      return out;
    }
    if (std::none_of(text, end, [](char c) { return c == '.' || c == 'e' || c == 'E'; })) {
      const auto r = std::from_chars(text, end, out.integer);
      if (r.ec == std::errc() && r.ptr == end) {
        out.is_integer = true;
        return out;
      }
    }
    const auto r = std::from_chars(text, end, out.real);
    if (r.ptr != end || (r.ec != std::errc() && r.ec != std::errc::result_out_of_range)) fail("a malformed number");
    return out;
  }

  // A time in µs, as torch writes them, to whole ns from its digits: a double holds an epoch
  // timestamp (1.7e15 µs, as older traces and HTA's write) to a quarter µs only. Fractions past
  // the ns are rounded; a time beyond ±4.6e15 µs (146 years) is left unset, so that a start plus
  // a duration, and their difference, stay inside int64 ns.
  std::optional<int64_t> microseconds_as_ns() {
    const auto [text, end] = number_text();
    if (text == end) fail("expected a value");
    int64_t whole = 0;
    if (plain_integer(text, end, whole))  // torch's usual µs: no fraction, 16 digits at most
      return whole < 4600000000000000LL && whole > -4600000000000000LL ? std::optional<int64_t>(whole * 1000)
                                                                       : std::nullopt;
    if (std::any_of(text, end, [](char c) { return c == 'e' || c == 'E'; })) {
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
        object(ignore_key, [&](int) { skip_value(depth + 1); });
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
        object(copy_key, [&](std::string&& k) { o[k] = value(depth + 1); });
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

  // After '{': for each member, on_key(classify(key)), which must read or skip its value. The key
  // is in view only while classify looks at it (key()): classify turns it into what on_key needs.
  template <class Classify, class F>
  void object(Classify&& classify, F&& on_key) {
    skip_ws();
    if (peek() == '}') {
      ++p_;
      return;
    }
    for (;;) {
      skip_ws();
      if (get() != '"') fail("expected a key");
      auto what = classify(key());
      expect(':');
      on_key(std::move(what));
      skip_ws();
      const int c = get();
      if (c == ',') continue;
      if (c == '}') return;
      fail("expected ',' or '}'");
    }
  }
  static int ignore_key(std::string_view) { return 0; }
  static std::string copy_key(std::string_view key) { return std::string(key); }

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

  // Keys are looked at in place when they lie whole in the buffer: this many bytes are kept ahead
  // of one (longer keys, rare, are copied).
  static constexpr size_t kKeyWindow = 256;
  static constexpr size_t kMaxNumber = 63;  // characters

  // The first byte at or after p that ends a run of plain string text: a quote, a backslash or a
  // control character; end when none does. Eight bytes a step (SWAR): a byte's flag is exact for
  // the lowest match of each test, which is the one taken.
  static const char* plain_run(const char* p, const char* end) {
    constexpr uint64_t ones = 0x0101010101010101ULL, highs = 0x8080808080808080ULL;
    while (end - p >= 8) {
      uint64_t x;
      std::memcpy(&x, p, 8);
      const uint64_t quote = x ^ (ones * '"'), backslash = x ^ (ones * '\\');
      const uint64_t found = ((quote - ones) & ~quote) | ((backslash - ones) & ~backslash) | ((x - ones * 0x20) & ~x);
      const uint64_t stops = found & highs;
      if (stops != 0) return p + (__builtin_ctzll(stops) >> 3);
      p += 8;
    }
    while (p < end && *p != '"' && *p != '\\' && static_cast<unsigned char>(*p) >= 0x20) ++p;
    return p;
  }

  // After a backslash: the escape decoded into out (nothing kept when out is null).
  void escape(std::string* out) {
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
        return;
      }
      default: fail("an invalid escape in a string");
    }
    if (out) out->push_back(plain);
  }

  static bool number_char(char c) {
    return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E';
  }
  // The characters of a number, viewed in the buffer (kept whole there) and passed over; the view
  // holds until the scanner reads on.
  std::pair<const char*, const char*> number_text() {
    fill_to(kMaxNumber + 1);
    const char* text = p_;
    const char* limit = std::min(end_, text + kMaxNumber + 1);
    const char* q = text;
    while (q < limit && number_char(*q)) ++q;
    if (q - text > static_cast<std::ptrdiff_t>(kMaxNumber)) {
      p_ = text + kMaxNumber;
      fail("a number too long");
    }
    p_ = q;
    return {text, q};
  }
  // An optional '-' and 1 to 18 digits (no overflow): the value, as from_chars would read it.
  static bool plain_integer(const char* text, const char* end, int64_t& value) {
    const bool negative = text < end && *text == '-';
    const char* p = text + (negative ? 1 : 0);
    if (p == end || end - p > 18) return false;
    int64_t v = 0;
    for (; p < end; ++p) {
      const unsigned d = static_cast<unsigned char>(*p) - unsigned('0');
      if (d > 9) return false;
      v = v * 10 + int64_t(d);
    }
    value = negative ? -v : v;
    return true;
  }
  int digit(char c) {
    if (c < '0' || c > '9') fail("a malformed number");
    return c - '0';
  }

  // Reads more once the buffer is used up.
  bool refill() {
    if (at_end_) return false;
    consumed_ += end_ - buffer_.data();
    const size_t n = source_.fill(buffer_.data(), buffer_.size());
    p_ = buffer_.data();
    end_ = p_ + n;
    at_end_ = n == 0;
    return n > 0;
  }
  // At least n bytes ahead where the input holds them: what is left moves to the buffer's start
  // and the rest is filled behind it.
  void fill_to(size_t n) {
    if (size_t(end_ - p_) >= n || at_end_) return;
    const size_t left = size_t(end_ - p_);
    consumed_ += p_ - buffer_.data();
    std::memmove(buffer_.data(), p_, left);
    p_ = buffer_.data();
    end_ = p_ + left;
    while (size_t(end_ - p_) < n) {
      const size_t got = source_.fill(buffer_.data() + (end_ - p_), buffer_.size() - size_t(end_ - p_));
      if (got == 0) {
        at_end_ = true;
        return;
      }
      end_ += got;
    }
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
  std::string key_;  // a key that could not be viewed in place
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
      s_.object(Scanner::copy_key, [&](std::string&& key) {
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
      s_.object(field_of, [&](Field f) { event_field(f); });
      if (callbacks_.event) callbacks_.event(event_);
    });
  }

  // The event fields and args tach reads; any other key's value is skipped.
  enum class Field : uint8_t { other, ph, cat, name, ts, dur, pid, tid, args };
  enum class Arg : uint8_t {
    other,
    external_id,
    correlation,
    device,
    stream,
    flops,
    bytes,
    total_allocated,
    total_reserved,
    device_type,
    device_id,
    name,
    input_dims,
    input_type
  };

  // Whether key, of N - 1 characters, is word: a compare of known size, done inline.
  template <size_t N>
  static bool is(std::string_view key, const char (&word)[N]) {
    return std::memcmp(key.data(), word, N - 1) == 0;
  }
  // Keys by length first: the many keys no analysis reads (grid, block, registers per thread, Ev
  // Idx, ...) cost a switch and a compare or two each.
  static Field field_of(std::string_view key) {
    switch (key.size()) {
      case 2:
        if (is(key, "ph")) return Field::ph;
        if (is(key, "ts")) return Field::ts;
        break;
      case 3:
        if (is(key, "cat")) return Field::cat;
        if (is(key, "dur")) return Field::dur;
        if (is(key, "pid")) return Field::pid;
        if (is(key, "tid")) return Field::tid;
        break;
      case 4:
        if (is(key, "name")) return Field::name;
        if (is(key, "args")) return Field::args;
        break;
      default: break;
    }
    return Field::other;
  }
  static Arg arg_of(std::string_view key) {
    switch (key.size()) {
      case 4:
        if (is(key, "name")) return Arg::name;  // thread_name metadata
        break;
      case 5:
        if (is(key, "flops")) return Arg::flops;
        if (is(key, "Bytes")) return Arg::bytes;
        break;
      case 6:
        if (is(key, "device")) return Arg::device;
        if (is(key, "stream")) return Arg::stream;
        break;
      case 9:
        if (is(key, "Device Id")) return Arg::device_id;
        break;
      case 10:
        if (is(key, "Input Dims")) return Arg::input_dims;
        if (is(key, "Input type")) return Arg::input_type;
        break;
      case 11:
        // "External id"; kineto before 2022 wrote "external id".
        if (is(key, "External id") || is(key, "external id")) return Arg::external_id;
        if (is(key, "correlation")) return Arg::correlation;
        if (is(key, "Device Type")) return Arg::device_type;
        break;
      case 14:
        if (is(key, "Total Reserved")) return Arg::total_reserved;
        break;
      case 15:
        if (is(key, "Total Allocated")) return Arg::total_allocated;
        break;
      default: break;
    }
    return Arg::other;
  }

  void event_field(Field field) {
    switch (field) {
      case Field::ph: return string(event_.ph);
      case Field::cat: return string(event_.cat);
      case Field::name: return string(event_.name);
      case Field::ts: return time(event_.ts_ns);
      case Field::dur: return time(event_.dur_ns);
      case Field::pid: return id(event_.pid);
      case Field::tid: return id(event_.tid);
      case Field::args:
        s_.skip_ws();
        if (s_.peek() != '{') return s_.skip_value();
        s_.get();
        s_.object(arg_of, [&](Arg a) { arg(a); });
        return;
      case Field::other: break;
    }
    s_.skip_value();
  }

  void arg(Arg a) {
    switch (a) {
      case Arg::external_id: return integer(event_.external_id);
      case Arg::correlation: return integer(event_.correlation);
      case Arg::device: return integer(event_.device);
      case Arg::stream: return integer(event_.stream);
      case Arg::flops: return integer(event_.flops);
      case Arg::bytes: return integer(event_.bytes);
      case Arg::total_allocated: return integer(event_.total_allocated);
      case Arg::total_reserved: return integer(event_.total_reserved);
      case Arg::device_type: return integer(event_.device_type);
      case Arg::device_id: return integer(event_.device_id);
      case Arg::name: return string(event_.arg_name);
      case Arg::input_dims: return dims();
      case Arg::input_type: return types();
      case Arg::other: break;
    }
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

void read_trace_text(const std::string& name, const std::string& text, const TraceCallbacks& callbacks, size_t chunk) {
  TextSource source(text, std::max<size_t>(chunk, 1));
  parse(name, source, callbacks);
}

}  // namespace tach::analyze
