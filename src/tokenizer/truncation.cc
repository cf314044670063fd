#include "tokenizer/truncation.h"

#include <algorithm>
#include <utility>

#include "tach/error.h"

namespace tach::tokenizer {

namespace {
Encoding slice(const Encoding& e, size_t start, size_t stop) {
  Encoding o;
  auto cut = [&](const auto& v) { return std::decay_t<decltype(v)>(v.begin() + long(start), v.begin() + long(stop)); };
  o.ids = cut(e.ids);
  o.tokens = cut(e.tokens);
  o.offsets = cut(e.offsets);
  o.type_ids = cut(e.type_ids);
  o.special_tokens_mask = cut(e.special_tokens_mask);
  o.attention_mask = cut(e.attention_mask);
  o.word_ids = cut(e.word_ids);
  o.sequence_ids = cut(e.sequence_ids);
  return o;
}
}  // namespace

void truncate(Encoding& e, size_t max_len, size_t stride, Side direction) {
  const size_t len = e.ids.size();
  if (max_len >= len) return;
  if (max_len == 0) {
    Encoding all = std::move(e);
    e = Encoding();
    e.overflowing.push_back(std::move(all));
    return;
  }
  check(stride < max_len, "truncation stride " + std::to_string(stride) +
                              " must be smaller than the length it "
                              "truncates to (" +
                              std::to_string(max_len) + ")");
  const size_t step = max_len - stride;
  std::vector<std::pair<size_t, size_t>> parts;
  if (direction == Side::right) {
    for (size_t start = 0;; start += step) {
      const size_t stop = std::min(start + max_len, len);
      parts.emplace_back(start, stop);
      if (stop == len) break;
    }
  } else {
    for (size_t back = 0; back < len; back += step) {
      const size_t stop = len - back;
      const size_t start = stop > max_len ? stop - max_len : 0;
      parts.emplace_back(start, stop);
      if (start == 0) break;
    }
  }
  Encoding head = slice(e, parts[0].first, parts[0].second);
  for (size_t i = 1; i < parts.size(); ++i) head.overflowing.push_back(slice(e, parts[i].first, parts[i].second));
  e = std::move(head);
}

void truncate_encodings(Encoding& a, Encoding* b, const Truncation& t, size_t max_length) {
  const size_t total = a.ids.size() + (b ? b->ids.size() : 0);
  if (total <= max_length) return;
  const size_t to_remove = total - max_length;
  switch (t.strategy) {
    case Truncation::Strategy::longest_first: {
      if (!b) {
        truncate(a, total - to_remove, t.stride, t.direction);
        return;
      }
      size_t n1 = a.ids.size(), n2 = b->ids.size();
      const bool swap = n1 > n2;
      if (swap) std::swap(n1, n2);
      n2 = n1 > max_length ? n1 : std::max(n1, max_length - n1);
      if (n1 + n2 > max_length) {
        n1 = max_length / 2;
        n2 = n1 + max_length % 2;
      }
      if (swap) std::swap(n1, n2);
      truncate(a, n1, t.stride, t.direction);
      truncate(*b, n2, t.stride, t.direction);
      return;
    }
    case Truncation::Strategy::only_first:
    case Truncation::Strategy::only_second: {
      const bool first = t.strategy == Truncation::Strategy::only_first;
      check(first || b != nullptr, "truncation only_second needs a pair of sequences");
      Encoding& target = first ? a : *b;
      const size_t n = target.ids.size();
      check(n > to_remove, std::string("truncation ") + (first ? "only_first" : "only_second") + ": the " +
                               (first ? "first" : "second") + " sequence has " + std::to_string(n) +
                               " tokens, too few to remove the " + std::to_string(to_remove) + " needed");
      truncate(target, n - to_remove, t.stride, t.direction);
      return;
    }
  }
}

size_t padded_length(size_t length, const Padding& p) {
  if (p.pad_to_multiple_of > 0 && length % p.pad_to_multiple_of > 0)
    length += p.pad_to_multiple_of - length % p.pad_to_multiple_of;
  return length;
}

void pad(Encoding& e, size_t target, const Padding& p) {
  for (auto& o : e.overflowing) pad(o, target, p);
  if (e.ids.size() >= target) return;
  const size_t n = target - e.ids.size();
  auto fill = [&](auto& v, const auto& value) {
    if (p.direction == Side::left) v.insert(v.begin(), n, value);
    else v.insert(v.end(), n, value);
  };
  fill(e.ids, p.pad_id);
  fill(e.tokens, p.pad_token);
  fill(e.offsets, std::pair<uint32_t, uint32_t>{0, 0});
  fill(e.type_ids, p.pad_type_id);
  fill(e.special_tokens_mask, 1);
  fill(e.attention_mask, 0);
  fill(e.word_ids, -1);
  fill(e.sequence_ids, -1);
}

}  // namespace tach::tokenizer
