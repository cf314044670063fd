// Gradients summed over the ranks in buckets, each bucket's all-reduce started as soon as the
// backward has finished every gradient in it, as PyTorch's DistributedDataParallel does: the
// last layers' gradients travel while the first layers' are still being computed.
//
// Buckets are fixed once: the gradients in the order the backward finishes them (the last layer
// first, then down to layer 0, then the tensors outside the layers: embeddings, shared tables,
// the head), cut at bucket_bytes. Every rank cuts them the same way and starts them in the same
// order, which MPI's collectives require. A bucket's gradients are copied into one buffer, summed
// in place, and copied back.
#pragma once

#include <cstdint>
#include <vector>

#include "dist/communicator.h"
#include "tach/tensor.h"

namespace tach::dist {

struct GradientSlice {
  float* data = nullptr;
  int64_t count = 0;
  int layer = -1;  // final once this layer's backward is done; -1: only once the whole backward is
};

// One step's communication, for the step's breakdown.
struct ReduceTimes {
  double communication_s = 0;  // the worker's time in this step's all-reduces
  double exposed_s = 0;        // of it, what the step waited for after its backward
  double bytes = 0;            // summed per rank
  int buckets = 0;
};

class GradientReducer {
 public:
  GradientReducer(Communicator& comm, std::vector<GradientSlice> grads, int64_t bucket_bytes);
  // Before the backward whose gradients are to be summed (the step's last micro-batch).
  void begin();
  // The backward has finished layer `layer` (layers finish from the last down to 0).
  void layer_done(int layer);
  // Starts what is left, waits for every bucket (each under the communicator's deadline), and
  // says how long the step's communication took and how much of it the backward did not hide.
  ReduceTimes finish();
  int bucket_count() const { return int(buckets_.size()); }
  double bucket_bytes() const;  // every bucket's bytes: what one step sends per rank

 private:
  struct Bucket {
    std::vector<GradientSlice> slices;
    int ready_after = 0;  // the lowest layer among its slices; -1 when any is outside the layers
    int64_t count = 0;
    Tensor buffer;  // f32 [count], workspace
    CollectivePtr pending;
  };
  void start(Bucket& b, size_t index);

  Communicator& comm_;
  std::vector<Bucket> buckets_;
  size_t next_ = 0;  // buckets before it are started
};

}  // namespace tach::dist
