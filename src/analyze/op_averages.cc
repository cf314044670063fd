#include "analyze/op_averages.h"

#include <algorithm>
#include <map>
#include <numeric>
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

std::string row_name(const std::string& name) {
  return name.rfind("ProfilerStep#", 0) == 0 ? std::string("ProfilerStep*") : name;
}

// The event tree torch builds, over the kept CPU events in (start, -end) order.
struct Node {
  uint32_t event = 0;  // index into Trace::cpu
  int32_t parent = -1;
  std::vector<uint32_t> children;  // node indices
  int64_t kernel_ns = 0;           // own kernels (External id), replaced by a merged child's
  int64_t device_ns = 0;           // own kernels and the children's
  int64_t memory = 0;              // CPU bytes of [memory] events inside [start, end]
  bool alive = true;
};

bool cpu_memory_type(int device_type) { return device_type == 0 || device_type == 2 || device_type == 5; }

std::vector<Node> build_tree(const Trace& t) {
  std::vector<Node> nodes;
  nodes.reserve(t.cpu.size());
  for (uint32_t i = 0; i < t.cpu.size(); ++i)
    if (!filtered_out(t.strings.str(t.cpu[i].name))) nodes.push_back(Node{i, -1, {}, 0, 0, 0, true});
  std::stable_sort(nodes.begin(), nodes.end(), [&](const Node& a, const Node& b) {
    const CpuEvent& x = t.cpu[a.event];
    const CpuEvent& y = t.cpu[b.event];
    return x.start_ns != y.start_ns ? x.start_ns < y.start_ns : x.end_ns > y.end_ns;
  });
  // Nesting per thread: a stack of open parents, popped while the next event is not inside.
  std::unordered_map<int64_t, std::vector<uint32_t>> open;
  for (uint32_t n = 0; n < nodes.size(); ++n) {
    const CpuEvent& e = t.cpu[nodes[n].event];
    if (e.is_async) continue;
    auto& stack = open[e.tid];
    while (!stack.empty()) {
      const CpuEvent& p = t.cpu[nodes[stack.back()].event];
      if (e.start_ns >= p.end_ns || e.end_ns > p.end_ns) {
        stack.pop_back();
      } else {
        nodes[stack.back()].children.push_back(n);
        nodes[n].parent = static_cast<int32_t>(stack.back());
        break;
      }
    }
    stack.push_back(n);
  }
  // Memory inside each event: prefix sums over the CPU [memory] events by time.
  std::vector<std::pair<int64_t, int64_t>> mem;
  for (const auto& m : t.memory) mem.emplace_back(m.ts_ns, cpu_memory_type(m.device_type) ? m.bytes : 0);
  std::sort(mem.begin(), mem.end());
  std::vector<int64_t> prefix(mem.size() + 1, 0);
  for (size_t i = 0; i < mem.size(); ++i) prefix[i + 1] = prefix[i] + mem[i].second;
  for (auto& node : nodes) {
    const CpuEvent& e = t.cpu[node.event];
    const auto lo = std::lower_bound(mem.begin(), mem.end(), std::make_pair(e.start_ns, INT64_MIN));
    const auto hi = std::upper_bound(mem.begin(), mem.end(), std::make_pair(e.end_ns, INT64_MAX));
    node.memory = prefix[size_t(hi - mem.begin())] - prefix[size_t(lo - mem.begin())];
  }
  // Kernels, copies and sets under the op whose External id they carry (runtime calls carry it
  // too, but are no frontend ops).
  std::unordered_map<int64_t, uint32_t> by_external;
  for (uint32_t n = 0; n < nodes.size(); ++n) {
    const CpuEvent& e = t.cpu[nodes[n].event];
    if (e.external_id != 0 && !e.is_async &&
        (e.category == Category::cpu_op || e.category == Category::user_annotation))
      by_external.emplace(e.external_id, n);
  }
  for (const auto& d : t.device) {
    if (d.category == Category::gpu_user_annotation || d.external_id == 0) continue;
    const auto it = by_external.find(d.external_id);
    if (it != by_external.end()) nodes[it->second].kernel_ns += d.end_ns - d.start_ns;
  }
  // A child that is its same-named parent's only child is merged into it (_remove_dup_nodes).
  for (bool changed = true; changed;) {
    changed = false;
    for (uint32_t n = 0; n < nodes.size(); ++n) {
      Node& child = nodes[n];
      if (!child.alive || child.parent < 0) continue;
      Node& parent = nodes[size_t(child.parent)];
      if (parent.children.size() != 1 ||
          row_name(t.strings.str(t.cpu[parent.event].name)) != row_name(t.strings.str(t.cpu[child.event].name)))
        continue;
      parent.children = child.children;
      parent.kernel_ns = child.kernel_ns;
      for (const uint32_t c : child.children) nodes[c].parent = child.parent;
      child.alive = false;
      changed = true;
    }
  }
  // Device time bottom-up: children follow their parents in this order.
  for (size_t n = nodes.size(); n-- > 0;) {
    Node& node = nodes[n];
    if (!node.alive) continue;
    node.device_ns = t.cpu[node.event].is_async ? 0 : node.kernel_ns;
    if (!t.cpu[node.event].is_async)
      for (const uint32_t c : node.children) node.device_ns += nodes[c].device_ns;
  }
  return nodes;
}

struct Key {
  std::string name;
  RowKind kind;
  std::string shapes;
  std::vector<std::string> stack;
  bool operator<(const Key& o) const {
    return std::tie(name, kind, shapes, stack) < std::tie(o.name, o.kind, o.shapes, o.stack);
  }
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
  const std::vector<Node> nodes = build_tree(t);
  std::map<Key, size_t> index;
  std::vector<OpRow> rows;
  auto row_for = [&](Key key) -> OpRow& {
    const auto it = index.find(key);
    if (it != index.end()) return rows[it->second];
    index.emplace(key, rows.size());
    OpRow r;
    r.name = key.name;
    r.kind = key.kind;
    r.shapes = std::move(key.shapes);
    r.stack = std::move(key.stack);
    rows.push_back(std::move(r));
    return rows.back();
  };
  for (const auto& node : nodes) {
    if (!node.alive) continue;
    const CpuEvent& e = t.cpu[node.event];
    if (e.category == Category::python_function) continue;
    Key key{row_name(t.strings.str(e.name)),
            e.category == Category::user_annotation ? RowKind::user_annotation : RowKind::cpu,
            {},
            {}};
    if (group_by == GroupBy::shape) key.shapes = t.strings.str(e.shapes);
    if (group_by == GroupBy::stack)
      for (int32_t p = node.parent; p >= 0 && int(key.stack.size()) < stack_depth; p = nodes[size_t(p)].parent)
        if (t.cpu[nodes[size_t(p)].event].category == Category::python_function)
          key.stack.push_back(t.strings.str(t.cpu[nodes[size_t(p)].event].name));
    OpRow& r = row_for(std::move(key));
    if (r.precision.empty()) r.precision = gemm_precision(t.strings.str(e.types));
    const int64_t total = e.end_ns - e.start_ns;
    int64_t children_cpu = 0, children_device = 0, children_memory = 0;
    for (const uint32_t c : node.children) {
      const CpuEvent& ce = t.cpu[nodes[c].event];
      children_cpu += ce.end_ns - ce.start_ns;
      children_device += nodes[c].device_ns;
      children_memory += nodes[c].memory;
    }
    r.calls += 1;
    r.cpu_ns += total;
    r.device_ns += node.device_ns;
    r.cpu_memory += node.memory;
    r.flops += e.flops;
    if (!e.is_async) {
      r.self_cpu_ns += total - children_cpu;
      r.self_device_ns += node.device_ns - children_device;
      r.self_cpu_memory += node.memory - children_memory;
    }
  }
  for (const auto& d : t.device) {
    OpRow& r = row_for(Key{t.strings.str(d.name), RowKind::device, {}, {}});
    r.calls += 1;
    r.self_device_ns += d.end_ns - d.start_ns;
    r.device_ns += d.end_ns - d.start_ns;
  }
  return rows;
}

void merge_rows(std::vector<OpRow>& into, const std::vector<OpRow>& rows) {
  std::map<Key, size_t> index;
  for (size_t i = 0; i < into.size(); ++i)
    index.emplace(Key{into[i].name, into[i].kind, into[i].shapes, into[i].stack}, i);
  for (const auto& r : rows) {
    const Key key{r.name, r.kind, r.shapes, r.stack};
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
