#include "train/data_parallel.h"

#include <regex>

namespace tach::train {

int layer_of(const std::string& name) {
  // Every family names its blocks ".layer.N." (BERT, DistilBERT, RoBERTa, MPNet) or ".layers.N."
  // (the decoders, ModernBERT); LoRA's tensors keep the name of the module they adapt.
  static const std::regex layer(R"((^|\.)layers?\.(\d+)\.)");
  std::smatch m;
  return std::regex_search(name, m, layer) ? std::stoi(m[2].str()) : -1;
}

std::vector<int64_t> rank_rows(const std::vector<int64_t>& global, int rank, int size) {
  std::vector<int64_t> rows;
  for (size_t i = size_t(rank); i < global.size(); i += size_t(size)) rows.push_back(global[i]);
  return rows;
}

DataParallel::DataParallel(dist::Communicator& comm, ParameterTable& params, int64_t bucket_bytes) : comm_(comm) {
  std::vector<dist::GradientSlice> grads;
  for (Parameter& p : params.entries())
    if (p.trainable && p.grad.defined()) grads.push_back({p.grad.data<float>(), p.grad.numel(), layer_of(p.name)});
  reducer_ = std::make_unique<dist::GradientReducer>(comm, std::move(grads), bucket_bytes);
}

int64_t DataParallel::global_rows(int64_t local_rows) {
  double rows = double(local_rows);
  comm_.sum(&rows, 1, "all_reduce of the micro-batch's row count");
  return int64_t(rows);
}

bool DataParallel::any(bool flag) {
  double v = flag ? 1 : 0;
  comm_.sum(&v, 1, "all_reduce of the stop flag");
  return v > 0;
}

}  // namespace tach::train
