#include "analyze/op_averages.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <string_view>
#include <tuple>
#include <unordered_map>

#include "analyze/roofline.h"
#include "tach/error.h"

namespace tach::analyze {
namespace {

// Events torch drops before building its tree (profiler_util._filter_name).
bool filtered_out(const std::string& name) {
  return name == "[memory]" || name == "[OutOfMemory]" || name == "profiler::_record_function_enter" ||
         name == "profiler::_record_function_enter_new" || name == "profiler::_record_function_exit" ||
         name == "aten::is_leaf" || name == "aten::output_nr" || name == "aten::_version";
}

bool cpu_memory_type(int device_type) { return device_type == 0 || device_type == 2 || device_type == 5; }

// The CPU bytes of the [memory] events inside [start, end] (any thread, as torch matches them):
// prefix sums over them by time.
class MemoryInside {
 public:
  explicit MemoryInside(const Trace& t) {
    std::vector<std::pair<int64_t, int64_t>> mem;
    for (const auto& m : t.memory)
      if (cpu_memory_type(m.device_type)) mem.emplace_back(m.ts_ns, m.bytes);
    std::sort(mem.begin(), mem.end());
    ts_.reserve(mem.size());
    prefix_.assign(1, 0);
    for (const auto& [ts, bytes] : mem) {
      ts_.push_back(ts);
      prefix_.push_back(prefix_.back() + bytes);
    }
  }
  int64_t operator()(int64_t start, int64_t end) const {
    const auto lo = std::lower_bound(ts_.begin(), ts_.end(), start);
    const auto hi = std::upper_bound(ts_.begin(), ts_.end(), end);
    return prefix_[size_t(hi - ts_.begin())] - prefix_[size_t(lo - ts_.begin())];
  }

 private:
  std::vector<int64_t> ts_, prefix_;
};

constexpr uint32_t kProfilerStepRow = UINT32_MAX;  // every ProfilerStep#N: one row

// An event whose children are all done, as its parent and its row need it.
struct Done {
  uint32_t signature = 0;
  uint32_t row_name = 0;  // the name id, or kProfilerStepRow
  int64_t total_ns = 0, kernel_ns = 0, device_ns = 0, memory = 0;
  int64_t children_cpu_ns = 0, children_device_ns = 0, children_memory = 0;
  uint32_t children = 0;
};

// An event on a thread's stack of open ones. Its first child waits, unfolded, until a second
// arrives or the event ends: a child with its parent's name that is the parent's only child is
// merged into it (torch's _remove_dup_nodes: aten::div_ calling aten::div_ counts once, its
// kernels lifted up).
struct Open {
  Done node;
  int64_t end_ns = 0;
  std::optional<Done> only_child;
};

struct Key {
  uint32_t name;
  RowKind kind;
  uint32_t shapes;
  std::vector<uint32_t> stack;  // frame name ids, innermost first
  bool operator<(const Key& o) const {
    return std::tie(name, kind, shapes, stack) < std::tie(o.name, o.kind, o.shapes, o.stack);
  }
};

// The op table folded from the events as torch's tree would have them, one thread's stack of open
// events at a time: memory holds the stacks (as deep as the nesting), never a node per event.
class Folder {
 public:
  Folder(const Trace& t, GroupBy group_by, int stack_depth)
      : t_(t), group_by_(group_by), stack_depth_(stack_depth), memory_(t) {
    // Kernels, copies and sets under the op whose External id they carry.
    for (const auto& d : t.device)
      if (d.category != Category::gpu_user_annotation && d.external_id != 0)
        kernel_ns_[d.external_id] += d.end_ns - d.start_ns;
    for (const Signature& s : t.signatures) {
      const std::string& name = t.strings.str(s.name);
      skipped_.push_back(filtered_out(name));
      row_names_.push_back(name.rfind("ProfilerStep#", 0) == 0 ? kProfilerStepRow : s.name);
    }
  }

  std::vector<OpRow> run() {
    std::unordered_map<uint32_t, std::vector<Open>> open;
    for (const CpuEvent& e : t_.cpu) {  // by start, the enclosing event first
      if (skipped_[e.signature]) continue;
      const Signature& s = t_.signature(e);
      Done d;
      d.signature = e.signature;
      d.row_name = row_names_[e.signature];
      d.total_ns = e.end_ns - e.start_ns;
      d.memory = memory_(e.start_ns, e.end_ns);
      // Runtime calls carry an External id too, but are no frontend ops; c10d works take no part.
      if (e.id != 0 && !s.is_async && (s.category == Category::cpu_op || s.category == Category::user_annotation))
        if (const auto k = kernel_ns_.find(e.id); k != kernel_ns_.end()) {
          d.kernel_ns = k->second;
          kernel_ns_.erase(k);  // the first op with the id takes its kernels
        }
      if (s.is_async) {
        fold(d, {}, true);
        continue;
      }
      auto& stack = open[e.thread];
      while (!stack.empty() && (e.start_ns >= stack.back().end_ns || e.end_ns > stack.back().end_ns)) close(stack);
      stack.push_back(Open{d, e.end_ns, std::nullopt});
    }
    for (auto& [thread, stack] : open)
      while (!stack.empty()) close(stack);
    for (const auto& d : t_.device) {
      OpRow& r = row(Key{d.name, RowKind::device, 0, {}});
      r.calls += 1;
      r.self_device_ns += d.end_ns - d.start_ns;
      r.device_ns += d.end_ns - d.start_ns;
    }
    return std::move(rows_);
  }

 private:
  // The top of stack has ended: its first child settled, its totals made, and it handed to its
  // parent (or folded, at the top level).
  void close(std::vector<Open>& stack) {
    Open& top = stack.back();
    Done d = top.node;
    if (top.only_child) {
      const Done& c = *top.only_child;
      if (d.children == 1 && c.row_name == d.row_name) {
        d.kernel_ns = c.kernel_ns;
        d.children_cpu_ns = c.children_cpu_ns;
        d.children_device_ns = c.children_device_ns;
        d.children_memory = c.children_memory;
        d.children = c.children;
      } else {
        fold(c, stack, false);
      }
    }
    d.device_ns = d.kernel_ns + d.children_device_ns;
    stack.pop_back();
    if (stack.empty()) return fold(d, stack, false);
    Open& parent = stack.back();
    if (parent.node.children == 0) {
      parent.only_child = d;
    } else {
      if (parent.only_child) fold(*parent.only_child, stack, false);
      parent.only_child.reset();
      fold(d, stack, false);
    }
    parent.node.children += 1;
    parent.node.children_cpu_ns += d.total_ns;
    parent.node.children_device_ns += d.device_ns;
    parent.node.children_memory += d.memory;
  }

  // Adds an event to its row; ancestors: the open events that hold it, outermost first.
  void fold(const Done& d, const std::vector<Open>& ancestors, bool is_async) {
    const Signature& s = t_.signatures[d.signature];
    if (s.category == Category::python_function) return;  // frames nest but are no rows
    Key key{d.row_name, s.category == Category::user_annotation ? RowKind::user_annotation : RowKind::cpu, 0, {}};
    if (group_by_ == GroupBy::shape) key.shapes = s.shapes;
    if (group_by_ == GroupBy::stack)
      for (size_t i = ancestors.size(); i-- > 0 && int(key.stack.size()) < stack_depth_;) {
        const Signature& a = t_.signatures[ancestors[i].node.signature];
        if (a.category == Category::python_function) key.stack.push_back(a.name);
      }
    OpRow& r = row(std::move(key));
    if (r.precision.empty()) r.precision = gemm_precision(t_.strings.str(s.types));
    const int64_t device_ns = is_async ? 0 : d.device_ns;
    r.calls += 1;
    r.cpu_ns += d.total_ns;
    r.device_ns += device_ns;
    r.cpu_memory += d.memory;
    r.flops += s.flops;
    if (!is_async) {
      r.self_cpu_ns += d.total_ns - d.children_cpu_ns;
      r.self_device_ns += device_ns - d.children_device_ns;
      r.self_cpu_memory += d.memory - d.children_memory;
    }
  }

  OpRow& row(Key key) {
    const auto it = index_.find(key);
    if (it != index_.end()) return rows_[it->second];
    OpRow r;
    r.name = key.name == kProfilerStepRow ? std::string("ProfilerStep*") : t_.strings.str(key.name);
    r.kind = key.kind;
    if (group_by_ == GroupBy::shape && key.kind != RowKind::device) r.shapes = t_.strings.str(key.shapes);
    for (const uint32_t f : key.stack) r.stack.push_back(t_.strings.str(f));
    index_.emplace(std::move(key), rows_.size());
    rows_.push_back(std::move(r));
    return rows_.back();
  }

  const Trace& t_;
  const GroupBy group_by_;
  const int stack_depth_;
  const MemoryInside memory_;
  std::unordered_map<int64_t, int64_t> kernel_ns_;  // External id: its kernels' summed time
  std::vector<bool> skipped_;                       // by signature: events torch filters out
  std::vector<uint32_t> row_names_;                 // by signature: the row's name id
  std::map<Key, size_t> index_;
  std::vector<OpRow> rows_;
};

}  // namespace

const char* row_kind_name(RowKind k) {
  switch (k) {
    case RowKind::cpu: return "cpu";
    case RowKind::user_annotation: return "user_annotation";
    case RowKind::device: return "device";
  }
  return "cpu";
}

GroupBy parse_group_by(const std::string& s) {
  if (s == "name" || s.empty()) return GroupBy::name;
  if (s == "shape") return GroupBy::shape;
  if (s == "stack") return GroupBy::stack;
  throw UsageError("--group-by " + s + ": choose name, shape or stack");
}

std::vector<OpRow> op_averages(const Trace& t, GroupBy group_by, int stack_depth) {
  return Folder(t, group_by, stack_depth).run();
}

void merge_rows(std::vector<OpRow>& into, const std::vector<OpRow>& rows) {
  using RowKey = std::tuple<std::string, RowKind, std::string, std::vector<std::string>>;
  std::map<RowKey, size_t> index;
  for (size_t i = 0; i < into.size(); ++i)
    index.emplace(RowKey{into[i].name, into[i].kind, into[i].shapes, into[i].stack}, i);
  for (const auto& r : rows) {
    const RowKey key{r.name, r.kind, r.shapes, r.stack};
    const auto it = index.find(key);
    if (it == index.end()) {
      index.emplace(key, into.size());
      into.push_back(r);
      continue;
    }
    OpRow& o = into[it->second];
    o.calls += r.calls;
    o.self_cpu_ns += r.self_cpu_ns;
    o.cpu_ns += r.cpu_ns;
    o.self_device_ns += r.self_device_ns;
    o.device_ns += r.device_ns;
    o.flops += r.flops;
    o.self_cpu_memory += r.self_cpu_memory;
    o.cpu_memory += r.cpu_memory;
  }
}

std::string stable_frame(const std::string& frame) {
  static constexpr std::string_view kAt = " at 0x";
  std::string out;
  out.reserve(frame.size());
  size_t i = 0;
  while (i < frame.size()) {
    const size_t at = frame.find(kAt, i);
    if (at == std::string::npos) break;
    size_t end = at + kAt.size();
    while (end < frame.size() && std::isxdigit(static_cast<unsigned char>(frame[end]))) ++end;
    out.append(frame, i, at - i);
    if (end == at + kAt.size()) out.append(kAt);  // " at 0x" with no digits after it is text
    i = end;
  }
  out.append(frame, i, std::string::npos);
  return out;
}

const std::vector<std::string>& sort_columns() {
  static const std::vector<std::string> columns = {
      "self_cpu", "cpu", "self_device", "device", "calls", "flops", "self_cpu_memory", "cpu_memory", "name"};
  return columns;
}

void sort_rows(std::vector<OpRow>& rows, const std::string& column) {
  const auto& cols = sort_columns();
  if (std::find(cols.begin(), cols.end(), column) == cols.end()) {
    std::string list;
    for (const auto& c : cols) list += (list.empty() ? "" : ", ") + c;
    throw UsageError("--sort-by " + column + ": choose one of " + list);
  }
  auto value = [&](const OpRow& r) -> int64_t {
    if (column == "self_cpu") return r.self_cpu_ns;
    if (column == "cpu") return r.cpu_ns;
    if (column == "self_device") return r.self_device_ns;
    if (column == "device") return r.device_ns;
    if (column == "calls") return r.calls;
    if (column == "flops") return r.flops;
    if (column == "self_cpu_memory") return r.self_cpu_memory;
    if (column == "cpu_memory") return r.cpu_memory;
    return 0;
  };
  std::stable_sort(rows.begin(), rows.end(), [&](const OpRow& a, const OpRow& b) {
    if (column != "name") {
      const int64_t x = value(a), y = value(b);
      if (x != y) return x > y;
    }
    return std::tie(a.name, a.shapes, a.stack) < std::tie(b.name, b.shapes, b.stack);
  });
}

}  // namespace tach::analyze
