#include "tach/device.h"

#include <charconv>

#include "tach/error.h"

namespace tach {

std::string Device::str() const {
  return kind == DeviceKind::cpu ? std::string("cpu") : "cuda:" + std::to_string(index);
}

Device parse_device(const std::string& text) {
  if (text == "cpu") return Device::cpu();
  if (text == "cuda" || text == "gpu") return Device::cuda(0);
  if (text.rfind("cuda:", 0) == 0) {
    int index = -1;
    const char* first = text.data() + 5;
    const char* last = text.data() + text.size();
    auto [ptr, ec] = std::from_chars(first, last, index);
    if (ec == std::errc() && ptr == last && first != last && index >= 0) return Device::cuda(index);
  }
  throw Error("unknown device '" + text + "': expected cpu, cuda or cuda:N");
}

}  // namespace tach
