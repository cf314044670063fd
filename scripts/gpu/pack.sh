#!/usr/bin/env bash
# Run here, before a session's first call to a lent GPU machine: builds the CUDA backend for
# Hopper (sm_90 only: half of nvcc's time) and packs what the GPU machine needs into .gpu/
# (ignored by git; name it in the call's `carry`). That machine starts bare, reaches no package
# registry and has its own CUDA 13 (cudart, cuBLASLt), so the pack holds tach, the GPU test
# binaries, and the shared libraries from this machine that it lacks, never the C library or
# CUDA's own, as .gpu/pack.tar.xz (~40 MB). Then, on the GPU machine: scripts/gpu/check.sh.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${BUILD_DIR:-build-gpu}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DTACH_CUDA=ON \
  -DTACH_BUILD_BENCH=OFF > /dev/null
ninja -C "$build" tach test_cuda test_cuda_ops test_cuda_models
stage="$build/gpu-pack"
rm -rf "$stage" .gpu && mkdir -p "$stage/bin" "$stage/lib" .gpu
cp "$build/tach" "$build/tests/test_cuda" "$build/tests/test_cuda_ops" "$build/tests/test_cuda_models" "$stage/bin/"
strip "$stage"/bin/*
# Everything the binaries load from this machine except the C runtime and CUDA (the GPU machine's
# driver and toolkit provide those, in the versions that match its driver).
ldd "$stage"/bin/* | awk '/=> \// {print $3}' | sort -u |
  grep -vE '/(libc|libm|libdl|librt|libpthread|libresolv|ld-linux[^/]*|libstdc\+\+|libgcc_s|libcuda|libcudart|libcublas|libcublasLt|libcupti|libnvidia[^/]*)\.so' |
  xargs -r -I{} cp -L {} "$stage/lib/"
# CUPTI goes apart, as a fallback behind the GPU machine's own (which matches its driver).
mkdir -p "$stage/lib-fallback"
ldd "$stage"/bin/tach | awk '/libcupti/ {print $3}' | xargs -r -I{} cp -L {} "$stage/lib-fallback/"
# Compressed: the libraries alone are ~150 MB (oneDNN, OpenBLAS, ICU's data), the tree a call
# carries at most 64 MiB with the repository's own ~25 MB. xz -9e's 64 MiB window also finds the
# four binaries' shared code (each links libtach): 40 MB where the default gave 45.
tar -C "$stage" -cf - bin lib lib-fallback | xz -9e -T1 > .gpu/pack.tar.xz
exclude=$(git rev-parse --git-path info/exclude)
mkdir -p "$(dirname "$exclude")"
grep -qx '/.gpu/' "$exclude" 2>/dev/null || echo '/.gpu/' >> "$exclude"
du -sh .gpu
