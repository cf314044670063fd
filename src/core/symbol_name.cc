#include "core/symbol_name.h"

#include <cxxabi.h>

#include <cstdlib>
#include <memory>
#include <string_view>

namespace tach::core {

namespace {

constexpr std::string_view kAnonymous = "(anonymous namespace)";

// The position of the '(' that opens the parameter list: the first one at template depth 0 that
// is not part of "(anonymous namespace)".
size_t parameter_list_start(const std::string& s) {
  int depth = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '<') ++depth;
    if (c == '>') --depth;
    if (c == '(' && depth == 0 && s.compare(i, kAnonymous.size(), kAnonymous) != 0) return i;
  }
  return std::string::npos;
}

}  // namespace

std::string readable_kernel_name(const std::string& symbol) {
  if (symbol.rfind("_Z", 0) != 0) return symbol;
  int status = 0;
  const std::unique_ptr<char, void (*)(void*)> demangled(abi::__cxa_demangle(symbol.c_str(), nullptr, nullptr, &status),
                                                         std::free);
  if (status != 0 || !demangled) return symbol;
  std::string name = demangled.get();
  if (const size_t open = parameter_list_start(name); open != std::string::npos) name.resize(open);
  const std::string anonymous_scope = std::string(kAnonymous) + "::";
  for (size_t at; (at = name.find(anonymous_scope)) != std::string::npos;) name.erase(at, anonymous_scope.size());
  if (name.rfind("void ", 0) == 0) name.erase(0, 5);  // a template function's return type
  return name;
}

}  // namespace tach::core
