// The CUDA libraries tach opens at their first use instead of linking them (cuda/library_loader.h):
// a process that runs no GPU GEMM and no GPU profile never maps cuBLASLt or CUPTI, and a library
// that is missing is an error naming it, what needs it and where it was looked for. Loading needs
// no GPU, so these run on any machine with the CUDA build.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#if TACH_HAS_CUDA
#include "cuda/library_loader.h"
#endif

namespace tach {
namespace {

#if TACH_HAS_CUDA
std::string mapped_files() {
  std::ifstream maps("/proc/self/maps");
  std::ostringstream s;
  s << maps.rdbuf();
  return s.str();
}

TEST(CudaLibraryLoader, NothingMapsCublasLtOrCuptiBeforeTheirFirstUse) {
  // This test links all of tach, as the tach executable does. Linked, cuBLASLt alone was some 200
  // MiB of every process's memory (its .bss and the pages its initialisers touch).
  const std::string maps = mapped_files();
  ASSERT_FALSE(maps.empty());
  EXPECT_EQ(maps.find("libcublasLt"), std::string::npos);
  EXPECT_EQ(maps.find("libcupti"), std::string::npos);
}

TEST(CudaLibraryLoader, AMissingLibraryIsNamedWithWhatNeedsItAndWhereItWasLookedFor) {
  const cuda::OpenedLibrary lib =
      cuda::open_library({"libtach-absent.so.7", "/nonexistent/cuda/lib/libtach-absent.so.7", "GEMMs on the GPU"});
  EXPECT_EQ(lib.handle, nullptr);
  EXPECT_NE(lib.error.find("libtach-absent.so.7 (needed for GEMMs on the GPU) did not load"), std::string::npos)
      << lib.error;
  EXPECT_NE(lib.error.find("LD_LIBRARY_PATH"), std::string::npos) << lib.error;
  EXPECT_NE(lib.error.find("then as /nonexistent/cuda/lib/libtach-absent.so.7"), std::string::npos) << lib.error;
}

TEST(CudaLibraryLoader, TheToolkitsFileIsTriedAfterTheSoname) {
  const cuda::OpenedLibrary lib = cuda::open_library({"libtach-absent.so.7", "libc.so.6", "a test"});
  ASSERT_NE(lib.handle, nullptr) << lib.error;
  EXPECT_TRUE(lib.error.empty());
  std::string missing;
  void (*exit_fn)(int) = nullptr;
  cuda::resolve(lib.handle, exit_fn, "exit", &missing);
  EXPECT_NE(exit_fn, nullptr);
  int (*absent)() = nullptr;
  cuda::resolve(lib.handle, absent, "tach_no_such_symbol", &missing);
  cuda::resolve(lib.handle, absent, "tach_nor_this", &missing);
  EXPECT_EQ(absent, nullptr);
  EXPECT_EQ(missing, "tach_no_such_symbol, tach_nor_this");
}
#else
TEST(CudaLibraryLoader, NeedsTheCudaBuild) { GTEST_SKIP() << "tach was built without CUDA (TACH_CUDA=OFF)"; }
#endif

}  // namespace
}  // namespace tach
