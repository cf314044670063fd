// The op table torch prints (profiler.key_averages()), computed from a trace file alone.
//
// torch builds it from the same events it exports, so the trace holds everything it needs:
// - nesting: per thread, an event is the child of the innermost event whose [start, end) holds
//   it (c10d's collective works start and end on different threads and take no part);
// - a child with its parent's name that is the parent's only child is merged into it (aten::div_
//   calling aten::div_ counts once), its kernels lifted up;
// - self CPU time: the event's time less its children's; device time: the kernels, copies and
//   sets whose "External id" is the op's, plus its children's; self device time: its own;
// - CPU memory: the bytes of every CPU "[memory]" event inside [start, end] (any thread, as torch
//   matches them), less its children's for the self column;
// - Python frames (with_stack) nest but are no rows; ProfilerStep#N rows are one ProfilerStep*.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analyze/trace.h"

namespace tach::analyze {

enum class RowKind { cpu, user_annotation, device };
const char* row_kind_name(RowKind k);

struct OpRow {
  std::string name;
  RowKind kind = RowKind::cpu;
  std::string shapes;              // --group-by shape: torch's input_shapes, "[[64, 32], [32, 96]]"
  std::vector<std::string> stack;  // --group-by stack: the enclosing Python frames, innermost first
  std::string precision;           // f32, bf16, f16 from the first call's input types; "" unknown
  int64_t calls = 0;
  // Times in ns (the trace's resolution); the JSON and the table show µs.
  int64_t self_cpu_ns = 0, cpu_ns = 0, self_device_ns = 0, device_ns = 0;
  int64_t flops = 0;
  int64_t self_cpu_memory = 0, cpu_memory = 0;  // bytes
};

enum class GroupBy { name, shape, stack };
// "name" | "shape" | "stack"; anything else is a usage error naming the choices.
GroupBy parse_group_by(const std::string& s);

// One row per key (in no particular order: sort_rows orders them), folded event by event over
// per-thread stacks of open events: beyond the trace, memory grows with the rows and the nesting
// depth, not the events. stack_depth: frames kept for GroupBy::stack (torch's group_by_stack_n).
std::vector<OpRow> op_averages(const Trace& trace, GroupBy group_by, int stack_depth = 5);

// Adds b's rows into a's by key (several traces of one run); rows of `rows` that share a key are
// summed too.
void merge_rows(std::vector<OpRow>& into, const std::vector<OpRow>& rows);

// A Python frame as another process would name it. torch keys --group-by stack on each frame's
// text as it is, and names a C function by its repr, which holds the address of the object it is
// bound to ("<built-in method view of Tensor object at 0x7fd7ea11c740>"): the same line of code
// is another frame in every process and often at every call. " at 0x…" is dropped; the file, line
// and function, and a module's name ("nn.Module: Linear_0", numbered as the program creates its
// modules) are kept: they are the same from run to run of one program. One trace's table keeps the
// frames as torch does; several traces of a run, and two runs compared, match the stable frames.
std::string stable_frame(const std::string& frame);

// Columns --sort-by takes: calls, self_cpu, cpu, self_device, device, flops, self_cpu_memory,
// cpu_memory, name. Numbers sort descending, names ascending; ties by name.
const std::vector<std::string>& sort_columns();
void sort_rows(std::vector<OpRow>& rows, const std::string& column);

}  // namespace tach::analyze
