# Warnings apply to tach's own targets only, through this interface library.
add_library(tach_warnings INTERFACE)
target_compile_options(tach_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor>)
