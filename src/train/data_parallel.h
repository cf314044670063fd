// Data-parallel training over MPI ranks (dist/): every rank holds the whole model, takes its share
// of each global batch, and the gradients are summed over the ranks before the optimizer step, so
// every rank takes the same step and the weights stay equal without being sent.
//
// A global batch is N·B rows of the epoch's order (N ranks, --batch-size B per rank). Rank r takes
// its rows r, r+N, r+2N, ... as PyTorch's DistributedSampler interleaves them. A batch that does
// not divide (the epoch's last) leaves some ranks a row fewer, or none: each rank's loss is
// weighted by its share of the global batch's rows (rows_r / rows) and the weighted gradients are
// summed, which is exactly the gradient of the mean over the global batch. So N ranks at batch B
// take the steps of one process at batch N·B, to rounding, with no row repeated or dropped
// (DistributedSampler instead pads the epoch with repeated rows).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "dist/communicator.h"
#include "dist/gradient_reducer.h"
#include "train/parameters.h"

namespace tach::train {

// The layer a parameter belongs to, from its Hugging Face name (".layer.3.", ".layers.3."), or -1
// for the tensors outside the layers (embeddings, shared tables, the head).
int layer_of(const std::string& name);

// This rank's rows of a global batch: positions rank, rank + size, ...
std::vector<int64_t> rank_rows(const std::vector<int64_t>& global, int rank, int size);

class DataParallel {
 public:
  // Buckets every trainable gradient of `params` (bucket_bytes each, DDP's 25 MB by default).
  DataParallel(dist::Communicator& comm, ParameterTable& params, int64_t bucket_bytes);
  int rank() const { return comm_.rank(); }
  int size() const { return comm_.size(); }
  dist::Communicator& comm() { return comm_; }
  dist::GradientReducer& reducer() { return *reducer_; }
  // Rows of a micro-batch over every rank.
  int64_t global_rows(int64_t local_rows);
  // True on every rank when it is true on any (a stop request, say).
  bool any(bool flag);

 private:
  dist::Communicator& comm_;
  std::unique_ptr<dist::GradientReducer> reducer_;
};

}  // namespace tach::train
