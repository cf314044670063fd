// core::StreamGraph on CUDA: stream capture of tach's stream into a cudaGraph_t, instantiated once.
#include "core/stream_graph.h"

#include <cuda_runtime.h>

#include <string>

#include "cuda/cuda_error.h"
#include "cuda/stream.h"
#include "tach/error.h"

namespace tach::core {

struct StreamGraph::Impl {
  int device = 0;
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  size_t nodes = 0;
};

bool StreamGraph::supported(Device device) { return device.kind == DeviceKind::cuda && cuda_available(); }

StreamGraph::StreamGraph(Device device, const std::function<void()>& work) : impl_(std::make_unique<Impl>()) {
  check(supported(device), "a graph of " + device.str() + "'s work: only CUDA devices capture graphs");
  impl_->device = device.index;
  cudaStream_t s = cuda::stream(device.index);
  // Thread-local: another thread's unrelated CUDA calls neither break this capture nor get caught in it.
  cuda::check(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
  try {
    work();
  } catch (...) {
    cudaGraph_t partial = nullptr;
    cudaStreamEndCapture(s, &partial);  // leave the stream usable again
    if (partial) cudaGraphDestroy(partial);
    cudaGetLastError();
    throw;
  }
  cuda::check(cudaStreamEndCapture(s, &impl_->graph),
              "cudaStreamEndCapture (the work did something a graph cannot hold)");
  cuda::check(cudaGraphGetNodes(impl_->graph, nullptr, &impl_->nodes), "cudaGraphGetNodes");
  cuda::check(cudaGraphInstantiate(&impl_->exec, impl_->graph, 0), "cudaGraphInstantiate");
}

StreamGraph::~StreamGraph() {
  if (!impl_) return;
  if (impl_->exec) cudaGraphExecDestroy(impl_->exec);
  if (impl_->graph) cudaGraphDestroy(impl_->graph);
}

void StreamGraph::replay() const {
  cuda::check(cudaGraphLaunch(impl_->exec, cuda::stream(impl_->device)), "cudaGraphLaunch");
}

int64_t StreamGraph::nodes() const { return int64_t(impl_->nodes); }

}  // namespace tach::core
