// Tensor: a dtype, a shape, strides (in elements) and a device, over storage that is either
// owned (allocated and counted by the allocator) or a view (of another tensor, or of an
// mmapped file, kept alive by a shared handle).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tach/device.h"
#include "tach/dtype.h"
#include "tach/memory.h"

namespace tach {

using Shape = std::vector<int64_t>;
std::string shape_str(const Shape& shape);  // "[2, 768]"
int64_t shape_numel(const Shape& shape);

// A block of bytes on one device. Owned storage is returned to the allocator and uncounted
// on destruction; borrowed storage keeps its owner alive through `keepalive`.
class Storage {
 public:
  static std::shared_ptr<Storage> allocate(Device device, size_t bytes, MemoryCategory category);
  static std::shared_ptr<Storage> borrow(Device device, void* data, size_t bytes,
                                         std::shared_ptr<const void> keepalive);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  Device device() const { return device_; }
  bool owned() const { return owned_; }
  MemoryCategory category() const { return category_; }

 private:
  Storage() = default;
  void* data_ = nullptr;
  size_t bytes_ = 0;
  Device device_;
  MemoryCategory category_ = MemoryCategory::other;
  bool owned_ = false;
  std::shared_ptr<const void> keepalive_;
};

class Tensor {
 public:
  Tensor() = default;
  // A new contiguous tensor, uninitialised.
  static Tensor empty(const Shape& shape, DType dtype, Device device = Device::cpu(),
                      MemoryCategory category = MemoryCategory::activations);
  static Tensor zeros(const Shape& shape, DType dtype, Device device = Device::cpu(),
                      MemoryCategory category = MemoryCategory::activations);
  // A contiguous view over borrowed bytes (an mmapped file, a caller's buffer).
  static Tensor from_borrowed(void* data, const Shape& shape, DType dtype, std::shared_ptr<const void> keepalive,
                              Device device = Device::cpu());

  bool defined() const { return storage_ != nullptr; }
  DType dtype() const { return dtype_; }
  Device device() const { return storage_ ? storage_->device() : Device::cpu(); }
  const Shape& shape() const { return shape_; }
  const Shape& strides() const { return strides_; }
  int dim() const { return static_cast<int>(shape_.size()); }
  int64_t size(int d) const;  // negative d counts from the end
  int64_t numel() const { return shape_numel(shape_); }
  size_t nbytes() const { return dtype_bytes(dtype_, static_cast<size_t>(numel())); }
  bool is_contiguous() const;
  // True when the bytes are borrowed (e.g. mmapped), not allocated by tach.
  bool is_view_of_borrowed() const { return storage_ && !storage_->owned(); }
  const std::shared_ptr<Storage>& storage() const { return storage_; }

  void* raw() const { return static_cast<char*>(storage_->data()) + offset_bytes_; }
  template <typename T>
  T* data() const {
    return static_cast<T*>(raw());
  }

  // Views share storage. reshape needs a contiguous tensor; narrow keeps strides.
  Tensor reshape(const Shape& shape) const;
  Tensor narrow(int d, int64_t start, int64_t length) const;
  // A contiguous copy in dtype (conversions round to nearest even), on the CPU.
  Tensor to(DType dtype, MemoryCategory category = MemoryCategory::activations) const;
  Tensor contiguous() const;
  // A contiguous copy on `device`, same dtype (a strided source is gathered first on the CPU).
  // Returns when the bytes have arrived. Copying to the device the tensor is on makes a copy too.
  Tensor to_device(Device device, MemoryCategory category = MemoryCategory::activations) const;
  // This tensor where `device` is: itself when it is there already (no copy), else to_device.
  Tensor on(Device device, MemoryCategory category = MemoryCategory::activations) const {
    return this->device() == device ? *this : to_device(device, category);
  }
  std::string describe() const;  // "f32[2, 768] cpu"

 private:
  std::shared_ptr<Storage> storage_;
  size_t offset_bytes_ = 0;
  Shape shape_;
  Shape strides_;
  DType dtype_ = DType::f32;
};

Shape contiguous_strides(const Shape& shape);

}  // namespace tach
