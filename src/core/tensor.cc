#include "tach/tensor.h"

#include <cstring>
#include <sstream>

#include "core/allocator.h"
#include "tach/error.h"

namespace tach {

std::string shape_str(const Shape& shape) {
  std::ostringstream os;
  os << '[';
  for (size_t i = 0; i < shape.size(); ++i) os << (i ? ", " : "") << shape[i];
  os << ']';
  return os.str();
}

int64_t shape_numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

Shape contiguous_strides(const Shape& shape) {
  Shape strides(shape.size());
  int64_t s = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = s;
    s *= shape[i];
  }
  return strides;
}

std::shared_ptr<Storage> Storage::allocate(Device device, size_t bytes, MemoryCategory category) {
  std::shared_ptr<Storage> s(new Storage());
  s->data_ = core::allocate_bytes(device, bytes, category);
  s->bytes_ = bytes;
  s->device_ = device;
  s->category_ = category;
  s->owned_ = true;
  return s;
}

std::shared_ptr<Storage> Storage::borrow(Device device, void* data, size_t bytes,
                                         std::shared_ptr<const void> keepalive) {
  std::shared_ptr<Storage> s(new Storage());
  s->data_ = data;
  s->bytes_ = bytes;
  s->device_ = device;
  s->keepalive_ = std::move(keepalive);
  return s;
}

Storage::~Storage() {
  if (owned_) core::deallocate_bytes(device_, data_, bytes_, category_);
}

static void check_shape(const Shape& shape) {
  for (int64_t d : shape) check(d >= 0, "tensor shape " + shape_str(shape) + " has a negative dimension");
}

Tensor Tensor::empty(const Shape& shape, DType dtype, Device device, MemoryCategory category) {
  check_shape(shape);
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = shape;
  t.strides_ = contiguous_strides(shape);
  t.storage_ = Storage::allocate(device, dtype_bytes(dtype, static_cast<size_t>(shape_numel(shape))), category);
  return t;
}

Tensor Tensor::zeros(const Shape& shape, DType dtype, Device device, MemoryCategory category) {
  Tensor t = empty(shape, dtype, device, category);
  core::zero_bytes(device, t.raw(), t.nbytes());
  return t;
}

Tensor Tensor::from_borrowed(void* data, const Shape& shape, DType dtype, std::shared_ptr<const void> keepalive,
                             Device device) {
  check_shape(shape);
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = shape;
  t.strides_ = contiguous_strides(shape);
  t.storage_ =
      Storage::borrow(device, data, dtype_bytes(dtype, static_cast<size_t>(shape_numel(shape))), std::move(keepalive));
  return t;
}

int64_t Tensor::size(int d) const {
  const int n = dim();
  if (d < 0) d += n;
  check(d >= 0 && d < n, "dimension " + std::to_string(d) + " out of range for " + describe());
  return shape_[d];
}

bool Tensor::is_contiguous() const { return strides_ == contiguous_strides(shape_); }

Tensor Tensor::reshape(const Shape& shape) const {
  check(is_contiguous(), "reshape of a non-contiguous tensor " + describe() + ": call contiguous() first");
  check(shape_numel(shape) == numel(), "cannot reshape " + describe() + " to " + shape_str(shape));
  Tensor t = *this;
  t.shape_ = shape;
  t.strides_ = contiguous_strides(shape);
  return t;
}

Tensor Tensor::narrow(int d, int64_t start, int64_t length) const {
  const int n = dim();
  if (d < 0) d += n;
  check(d >= 0 && d < n, "narrow: dimension out of range for " + describe());
  check(start >= 0 && length >= 0 && start + length <= shape_[d],
        "narrow: [" + std::to_string(start) + ", " + std::to_string(start + length) + ") outside dimension " +
            std::to_string(d) + " of " + describe());
  check(dtype_bits(dtype_) % 8 == 0, "narrow is not defined for sub-byte dtype " + std::string(dtype_name(dtype_)));
  Tensor t = *this;
  t.shape_[d] = length;
  t.offset_bytes_ += static_cast<size_t>(start * strides_[d]) * static_cast<size_t>(dtype_bits(dtype_) / 8);
  return t;
}

Tensor Tensor::contiguous() const {
  if (is_contiguous()) return *this;
  return to(dtype_);
}

Tensor Tensor::to_device(Device device, MemoryCategory category) const {
  check(defined(), "to_device: the tensor is undefined");
  if (!is_contiguous()) {
    check(this->device().kind == DeviceKind::cpu,
          "to_device: " + describe() + " is strided on a GPU; only contiguous device tensors can be copied");
    return contiguous().to_device(device, category);
  }
  Tensor out = empty(shape_, dtype_, device, category);
  core::copy_bytes(device, out.raw(), this->device(), raw(), nbytes());
  return out;
}

Tensor Tensor::to(DType dtype, MemoryCategory category) const {
  check(device().kind == DeviceKind::cpu, "Tensor::to on " + device().str() + " is not supported yet");
  Tensor out = empty(shape_, dtype, Device::cpu(), category);
  const int64_t n = numel();
  if (n == 0) return out;
  if (is_contiguous()) {
    if (dtype == dtype_) {
      std::memcpy(out.raw(), raw(), nbytes());
    } else if (dtype == DType::f32) {
      convert_to_f32(dtype_, raw(), out.data<float>(), static_cast<size_t>(n));
    } else if (dtype_ == DType::f32) {
      convert_from_f32(dtype, data<float>(), out.raw(), static_cast<size_t>(n));
    } else {
      Tensor tmp = to(DType::f32);
      convert_from_f32(dtype, tmp.data<float>(), out.raw(), static_cast<size_t>(n));
    }
    return out;
  }
  // Strided: gather element by element into a contiguous f32 or same-dtype buffer.
  check(dtype_bits(dtype_) % 8 == 0, "cannot copy a strided sub-byte tensor");
  const size_t esize = static_cast<size_t>(dtype_bits(dtype_) / 8);
  Tensor gathered = dtype == dtype_ ? out : empty(shape_, dtype_, Device::cpu());
  std::vector<int64_t> index(shape_.size(), 0);
  auto* dst = static_cast<char*>(gathered.raw());
  const auto* src = static_cast<const char*>(raw());
  for (int64_t i = 0; i < n; ++i) {
    int64_t off = 0;
    for (size_t k = 0; k < index.size(); ++k) off += index[k] * strides_[k];
    std::memcpy(dst + static_cast<size_t>(i) * esize, src + static_cast<size_t>(off) * esize, esize);
    for (size_t k = index.size(); k-- > 0;) {
      if (++index[k] < shape_[k]) break;
      index[k] = 0;
    }
  }
  return dtype == dtype_ ? out : gathered.to(dtype, category);
}

std::string Tensor::describe() const {
  return std::string(dtype_name(dtype_)) + shape_str(shape_) + " " + device().str();
}

}  // namespace tach
