# Every dependency is a Debian package; scripts/setup.sh installs them.
find_package(Threads REQUIRED)
find_package(OpenMP REQUIRED COMPONENTS CXX)
find_package(nlohmann_json 3.10 REQUIRED)
find_package(CLI11 CONFIG QUIET)
if(NOT CLI11_FOUND)
  find_path(CLI11_INCLUDE_DIR CLI/CLI.hpp REQUIRED)
  add_library(CLI11::CLI11 INTERFACE IMPORTED)
  set_target_properties(CLI11::CLI11 PROPERTIES INTERFACE_INCLUDE_DIRECTORIES ${CLI11_INCLUDE_DIR})
endif()

# GEMM: oneDNN (chosen by measurement, docs/perf.md) and OpenBLAS (kept for comparison
# and as the BLAS the benchmark compares against).
find_package(dnnl CONFIG QUIET)
if(NOT dnnl_FOUND)
  find_library(DNNL_LIBRARY dnnl REQUIRED)
  find_path(DNNL_INCLUDE_DIR oneapi/dnnl/dnnl.hpp REQUIRED)
  add_library(DNNL::dnnl UNKNOWN IMPORTED)
  set_target_properties(DNNL::dnnl PROPERTIES IMPORTED_LOCATION ${DNNL_LIBRARY}
    INTERFACE_INCLUDE_DIRECTORIES ${DNNL_INCLUDE_DIR})
endif()
find_library(OPENBLAS_LIBRARY openblas REQUIRED)
find_path(OPENBLAS_INCLUDE_DIR cblas.h PATH_SUFFIXES openblas x86_64-linux-gnu/openblas-pthread REQUIRED)
add_library(tach_openblas INTERFACE)
target_link_libraries(tach_openblas INTERFACE ${OPENBLAS_LIBRARY})
target_include_directories(tach_openblas INTERFACE ${OPENBLAS_INCLUDE_DIR})

# Tokenizers: PCRE2 (regex with JIT and Unicode properties) and utf8proc (Unicode data).
find_package(PkgConfig REQUIRED)
pkg_check_modules(PCRE2 REQUIRED IMPORTED_TARGET libpcre2-8)
pkg_check_modules(UTF8PROC REQUIRED IMPORTED_TARGET libutf8proc)

if(TACH_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()
if(TACH_BUILD_BENCH)
  find_package(benchmark REQUIRED)
endif()

# Datasets: libcsv (RFC 4180 CSV/TSV) and yaml-cpp (run configs).
find_path(CSV_INCLUDE_DIR csv.h REQUIRED)
find_library(CSV_LIBRARY csv REQUIRED)
add_library(tach_csv INTERFACE)
target_link_libraries(tach_csv INTERFACE ${CSV_LIBRARY})
target_include_directories(tach_csv INTERFACE ${CSV_INCLUDE_DIR})
find_package(yaml-cpp REQUIRED)
# Traces: ISA-L's igzip inflates trace.json.gz (about twice zlib's speed, CRC-32 included: it was
# a third of tach analyze's CPU, docs/perf.md); zlib is the other readers' (Parquet pages, ...).
find_package(ZLIB REQUIRED)
pkg_check_modules(ISAL IMPORTED_TARGET libisal)
if(NOT ISAL_FOUND)
  message(FATAL_ERROR "tach: ISA-L (libisal) not found: tach analyze inflates gzipped traces with it. "
                      "Debian/Ubuntu: apt install libisal-dev (scripts/setup.sh installs it)")
endif()
find_package(CURL REQUIRED)
find_package(OpenSSL REQUIRED COMPONENTS Crypto)
# Reports: librsvg (and cairo under it) renders the charts' SVG to PNG (opened at first use: its
# headers are needed here, its library at run time); libzip packs the slide deck. Downloads: libcurl,
# likewise opened at first use.
pkg_check_modules(RSVG REQUIRED IMPORTED_TARGET librsvg-2.0 cairo)
pkg_check_modules(LIBZIP REQUIRED IMPORTED_TARGET libzip)
# Parquet datasets: snappy, zstd and zlib decompress the pages (the footer and page headers are
# read by tach's own compact-protocol reader, src/data/thrift_compact.h).
pkg_check_modules(ZSTD REQUIRED IMPORTED_TARGET libzstd)
find_path(SNAPPY_INCLUDE_DIR snappy-c.h REQUIRED)
find_library(SNAPPY_LIBRARY snappy REQUIRED)
add_library(tach_snappy INTERFACE)
target_link_libraries(tach_snappy INTERFACE ${SNAPPY_LIBRARY})
target_include_directories(tach_snappy INTERFACE ${SNAPPY_INCLUDE_DIR})
# Data-parallel training (src/dist/): Open MPI gives the ranks and moves the gradients. Without it
# tach builds and trains in one process, and refuses to run under mpirun with several ranks.
find_package(MPI COMPONENTS C QUIET)
if(MPI_C_FOUND)
  message(STATUS "tach: MPI ${MPI_C_VERSION} found: data-parallel training (mpirun, srun) is built")
else()
  message(STATUS "tach: no MPI found (Debian: libopenmpi-dev): data-parallel training is not built")
endif()
