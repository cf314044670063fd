#include "dist/gradient_reducer.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <sstream>

#include "core/trace.h"

namespace tach::dist {

GradientReducer::GradientReducer(Communicator& comm, std::vector<GradientSlice> grads, int64_t bucket_bytes)
    : comm_(comm) {
  // The backward's order: higher layers first; the tensors outside the layers last. Stable, so
  // within a layer the table's order holds, the same on every rank.
  std::stable_sort(grads.begin(), grads.end(), [](const GradientSlice& a, const GradientSlice& b) {
    const int ka = a.layer < 0 ? -1 : a.layer, kb = b.layer < 0 ? -1 : b.layer;
    return ka > kb;
  });
  const int64_t cap = std::max<int64_t>(1, bucket_bytes / 4);
  for (const GradientSlice& g : grads) {
    if (g.count == 0) continue;
    if (buckets_.empty() || buckets_.back().count + g.count > cap) {
      // A bucket never spans the layers and the tensors after them: those are ready only at the end.
      buckets_.emplace_back();
      buckets_.back().ready_after = g.layer;
    } else if (g.layer < 0 && buckets_.back().ready_after >= 0) {
      buckets_.emplace_back();
      buckets_.back().ready_after = -1;
    }
    Bucket& b = buckets_.back();
    b.slices.push_back(g);
    b.count += g.count;
    b.ready_after = g.layer < 0 ? -1 : std::min(b.ready_after, g.layer);
  }
  for (Bucket& b : buckets_) b.buffer = Tensor::empty({b.count}, DType::f32, Device::cpu(), MemoryCategory::workspace);
}

double GradientReducer::bucket_bytes() const {
  double bytes = 0;
  for (const Bucket& b : buckets_) bytes += double(b.count) * 4;
  return bytes;
}

void GradientReducer::begin() {
  next_ = 0;
  for (Bucket& b : buckets_) b.pending.reset();
}

void GradientReducer::start(Bucket& b, size_t index) {
  std::ostringstream what;
  what.precision(3);
  what << "all_reduce of gradient bucket " << index << " (" << double(b.count) * 4 / 1e6 << " MB)";
  Bucket* bp = &b;
  Communicator* comm = &comm_;
  b.pending = comm_.submit(what.str(), double(b.count) * 4, [bp, comm] {
    float* flat = bp->buffer.data<float>();
    int64_t at = 0;
    for (const GradientSlice& s : bp->slices) {
      std::memcpy(flat + at, s.data, size_t(s.count) * sizeof(float));
      at += s.count;
    }
    comm->sum_now(flat, bp->count);
    at = 0;
    for (const GradientSlice& s : bp->slices) {
      std::memcpy(s.data, flat + at, size_t(s.count) * sizeof(float));
      at += s.count;
    }
  });
}

void GradientReducer::layer_done(int layer) {
  // Buckets are in the order they become ready: start the ready prefix.
  while (next_ < buckets_.size() && buckets_[next_].ready_after >= 0 && buckets_[next_].ready_after >= layer) {
    start(buckets_[next_], next_);
    ++next_;
  }
}

ReduceTimes GradientReducer::finish() {
  for (; next_ < buckets_.size(); ++next_) start(buckets_[next_], next_);
  ReduceTimes t;
  const auto wait_start = std::chrono::steady_clock::now();
  for (Bucket& b : buckets_) {
    comm_.wait(b.pending);
    t.communication_s += double(b.pending->end_ns - b.pending->start_ns) * 1e-9;
    t.bytes += b.pending->bytes;
  }
  t.exposed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wait_start).count();
  t.buckets = int(buckets_.size());
  return t;
}

}  // namespace tach::dist
