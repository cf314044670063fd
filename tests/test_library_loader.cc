// The libraries tach opens at their first use instead of linking them (core/library_loader.h): a
// process that runs no GPU GEMM, no GPU profile, no PNG and no download never maps cuBLASLt, CUPTI,
// librsvg or libcurl, and a library that is missing is an error naming it, what needs it and where
// it was looked for.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "core/library_loader.h"

namespace tach {
namespace {

std::string mapped_files() {
  std::ifstream maps("/proc/self/maps");
  std::ostringstream s;
  s << maps.rdbuf();
  return s.str();
}

TEST(LibraryLoader, NothingMapsTheLibrariesOpenedAtFirstUseBeforeThatUse) {
  // This test links all of tach, as the tach executable does. Linked, cuBLASLt alone was some 200
  // MiB of every process's memory (its .bss and the pages its initialisers touch); librsvg and
  // libcurl brought some 60 libraries (cairo, GLib, a TLS stack) to every start.
  const std::string maps = mapped_files();
  ASSERT_FALSE(maps.empty());
  for (const char* name : {"libcublasLt", "libcupti", "librsvg", "libcairo", "libcurl"})
    EXPECT_EQ(maps.find(name), std::string::npos) << name << " is mapped before its first use";
}

TEST(LibraryLoader, AMissingLibraryIsNamedWithWhatNeedsItAndWhereItWasLookedFor) {
  const OpenedLibrary lib =
      open_library({"libtach-absent.so.7", "/nonexistent/cuda/lib/libtach-absent.so.7",
                    "the CUDA toolkit tach was built with", "GEMMs on the GPU", kCudaLibraryRemedy});
  EXPECT_EQ(lib.handle, nullptr);
  EXPECT_NE(lib.error.find("libtach-absent.so.7 (needed for GEMMs on the GPU) did not load"), std::string::npos)
      << lib.error;
  EXPECT_NE(lib.error.find("LD_LIBRARY_PATH"), std::string::npos) << lib.error;
  EXPECT_NE(lib.error.find("then as /nonexistent/cuda/lib/libtach-absent.so.7 (the CUDA toolkit tach was built with)"),
            std::string::npos)
      << lib.error;
  EXPECT_NE(lib.error.find(kCudaLibraryRemedy), std::string::npos) << lib.error;
}

TEST(LibraryLoader, TheFallbackFileIsTriedAfterTheSoname) {
  const OpenedLibrary lib = open_library({"libtach-absent.so.7", "libc.so.6", "the C library", "a test", "none"});
  ASSERT_NE(lib.handle, nullptr) << lib.error;
  EXPECT_TRUE(lib.error.empty());
  std::string missing;
  void (*exit_fn)(int) = nullptr;
  resolve(lib.handle, exit_fn, "exit", &missing);
  EXPECT_NE(exit_fn, nullptr);
  int (*absent)() = nullptr;
  resolve(lib.handle, absent, "tach_no_such_symbol", &missing);
  resolve(lib.handle, absent, "tach_nor_this", &missing);
  EXPECT_EQ(absent, nullptr);
  EXPECT_EQ(missing, "tach_no_such_symbol, tach_nor_this");
}

}  // namespace
}  // namespace tach
