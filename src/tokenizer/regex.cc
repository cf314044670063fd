#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenizer/regex.h"

#include <pcre2.h>

namespace tach::tokenizer {

struct Regex::Impl {
  pcre2_code* code = nullptr;
};

namespace {
// One JIT stack per thread, large enough for long inputs to patterns with nested repeats.
pcre2_match_context* thread_match_context() {
  struct Holder {
    pcre2_match_context* ctx = pcre2_match_context_create(nullptr);
    pcre2_jit_stack* stack = pcre2_jit_stack_create(64 * 1024, 4 * 1024 * 1024, nullptr);
    Holder() { pcre2_jit_stack_assign(ctx, nullptr, stack); }
    ~Holder() {
      pcre2_jit_stack_free(stack);
      pcre2_match_context_free(ctx);
    }
  };
  thread_local Holder h;
  return h.ctx;
}
}  // namespace

Regex::Regex(const std::string& pattern, bool literal, const std::string& where) : impl_(std::make_unique<Impl>()) {
  int err = 0;
  PCRE2_SIZE offset = 0;
  // PCRE2 refuses UCP beside LITERAL (and a literal has no character classes for it to change).
  const uint32_t options = PCRE2_UTF | PCRE2_NO_UTF_CHECK | (literal ? PCRE2_LITERAL : PCRE2_UCP);
  impl_->code =
      pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), options, &err, &offset, nullptr);
  if (impl_->code == nullptr) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(err, msg, sizeof msg);
    throw Error(where + ": pattern does not compile at offset " + std::to_string(offset) + ": " +
                reinterpret_cast<const char*>(msg));
  }
  pcre2_jit_compile(impl_->code, PCRE2_JIT_COMPLETE);  // falls back to the interpreter if JIT is unavailable
}

Regex::~Regex() { pcre2_code_free(impl_->code); }

std::vector<std::pair<size_t, size_t>> Regex::find_all(std::string_view text) const {
  std::vector<std::pair<size_t, size_t>> out;
  pcre2_match_data* md = pcre2_match_data_create_from_pattern(impl_->code, nullptr);
  pcre2_match_context* ctx = thread_match_context();
  size_t pos = 0;
  while (pos <= text.size()) {
    const int rc = pcre2_match(impl_->code, reinterpret_cast<PCRE2_SPTR>(text.data()), text.size(), pos,
                               PCRE2_NO_UTF_CHECK, md, ctx);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      pcre2_match_data_free(md);
      PCRE2_UCHAR msg[256];
      pcre2_get_error_message(rc, msg, sizeof msg);
      throw Error(std::string("regex match failed: ") + reinterpret_cast<const char*>(msg));
    }
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
    const size_t a = ov[0], b = ov[1];
    if (b > a) {
      out.emplace_back(a, b);
      pos = b;
    } else {
      // Empty match: step over one code point.
      pos = a + 1;
      while (pos < text.size() && (static_cast<unsigned char>(text[pos]) & 0xc0) == 0x80) ++pos;
    }
  }
  pcre2_match_data_free(md);
  return out;
}

std::unique_ptr<Regex> make_pattern(const JsonAt& j) {
  if (j.has("String")) return std::make_unique<Regex>(j.str("String"), true, j.file + ": " + j.path);
  if (j.has("Regex")) return std::make_unique<Regex>(j.str("Regex"), false, j.file + ": " + j.path);
  j.fail("expected {\"String\": ...} or {\"Regex\": ...}");
}

}  // namespace tach::tokenizer
