#!/usr/bin/env bash
# Run here, before a session's first call to a lent GPU machine: builds the CUDA backend for
# Hopper (sm_90 only: half of nvcc's time) and packs what the GPU machine needs into .gpu/
# (ignored by git; name it in the call's `carry`). That machine starts bare, reaches no package
# registry and has its own CUDA 13 (cudart, cuBLASLt), so the pack holds tach, the GPU test
# binaries, and the shared libraries from this machine that it lacks, never the C library or
# CUDA's own, as .gpu/pack.tar.xz (~30 MB). Then, on the GPU machine: scripts/gpu/check.sh.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${BUILD_DIR:-build-gpu}
# The GPU test binaries to pack (each adds ~2 MB compressed; a call's tree holds 64 MiB in all).
tests=${GPU_TESTS:-"test_cuda test_cuda_ops test_cuda_ops_bf16 test_cuda_linear test_cuda_attention_bf16 test_cuda_models test_cuda_bf16_models test_cuda_train test_cuda_infer_attention"}
# NO_BUILD=1 packs what is built (when the tree holds edits that are not to go into the pack).
if [ "${NO_BUILD:-0}" != 1 ]; then
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DTACH_CUDA=ON \
    -DTACH_BUILD_BENCH=OFF > /dev/null
  ninja -C "$build" tach $tests
fi
stage="$build/gpu-pack"
rm -rf "$stage" .gpu && mkdir -p "$stage/bin" "$stage/lib" .gpu
cp "$build/tach" "$stage/bin/"
for t in $tests; do cp "$build/tests/$t" "$stage/bin/"; done
strip "$stage"/bin/*
# Everything the binaries load from this machine except the C runtime and CUDA (the GPU machine's
# driver and toolkit provide those, in the versions that match its driver).
ldd "$stage"/bin/* | awk '/=> \// {print $3}' | sort -u |
  grep -vE '/(libc|libm|libdl|librt|libpthread|libresolv|ld-linux[^/]*|libstdc\+\+|libgcc_s|libcuda|libcudart|libcublas|libcublasLt|libcupti|libnvidia[^/]*)\.so' |
  xargs -r -I{} cp -L {} "$stage/lib/"
# ICU's data (31 MB, 7.5 once compressed) comes only through librsvg's libxml2, which reads it for
# documents in encodings other than UTF-8; tach's SVGs are UTF-8. The call's tree may hold 64 MiB
# with the repository's ~34, so the data library is replaced by an empty ICU common-data archive:
# the 32-byte header ("CmnD", format 1) and an entry count of 0, what ICU itself builds without
# data. A lookup there finds nothing and reports ICU's missing-data error; nothing tach runs on the
# GPU machine asks.
icu_data=$(ls "$stage"/lib/libicudata.so.* 2>/dev/null | head -1 || true)
if [ -n "$icu_data" ]; then
  icu_major=${icu_data##*.so.}
  cat > "$build/icu_empty_data.c" <<C
__attribute__((aligned(16), visibility("default"))) const unsigned char icudt${icu_major}_dat[36] = {
  32, 0, 0xda, 0x27,                 /* header size, magic */
  20, 0, 0, 0, 0, 0, 2, 0,           /* UDataInfo: size, reserved, little-endian, ASCII, 2-byte UChar */
  'C', 'm', 'n', 'D', 1, 0, 0, 0,    /* common data, format version 1 */
  0, 0, 0, 0,                        /* data version */
  0, 0, 0, 0, 0, 0, 0, 0,            /* padding to the header size */
  0, 0, 0, 0};                       /* entry count */
C
  cc -shared -fPIC -o "$icu_data" -Wl,-soname,"$(basename "$icu_data")" "$build/icu_empty_data.c"
fi
# CUPTI goes apart, as a fallback behind the GPU machine's own (which matches its driver). tach
# opens it at its first use (ldd does not list it): the toolkit's copy it was built with, under its
# soname, the name tach asks the loader for.
# CUPTI_FALLBACK=0 leaves it out (1 MiB; scripts/gpu/check.sh finds the machine's toolkit's and
# PyTorch's wheel's).
mkdir -p "$stage/lib-fallback"
cupti=$(sed -n 's/^CUDA_cupti_LIBRARY:FILEPATH=//p' "$build/CMakeCache.txt")
if [ "${CUPTI_FALLBACK:-1}" = 1 ] && [ -n "$cupti" ] && [ -e "$cupti" ]; then
  cupti_soname=$(readelf -d "$cupti" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
  cp -L "$cupti" "$stage/lib-fallback/${cupti_soname:-$(basename "$cupti")}"
fi
# Compressed: the libraries alone are ~90 MB (oneDNN, OpenBLAS), the tree a call carries at most
# 64 MiB with the repository's own ~42 MB. A 192 MiB window finds the binaries' shared code (each
# links libtach) across the whole archive.
tar -C "$stage" -cf - bin lib lib-fallback | xz --lzma2=preset=9e,dict=192MiB,nice=273 -T1 > .gpu/pack.tar.xz
exclude=$(git rev-parse --git-path info/exclude)
mkdir -p "$(dirname "$exclude")"
grep -qx '/.gpu/' "$exclude" 2>/dev/null || echo '/.gpu/' >> "$exclude"
du -sh .gpu
# What the call will carry: the tracked tree and the pack, against the device tool's 64 MiB.
tracked=$(git ls-files -z | xargs -0 stat -c %s | awk '{s += $1} END {print s}')
packed=$(stat -c %s .gpu/pack.tar.xz)
total_mib=$(( (tracked + packed) / 1048576 ))
echo "the call carries ${total_mib} MiB (tracked $((tracked / 1048576)) MiB + pack $((packed / 1048576)) MiB) of 64"
[ "$total_mib" -lt 63 ] || {
  echo "over the device tool's 64 MiB: leave more out of the pack, or hide the fixtures the GPU machine" \
    "does not read around the call (scripts/gpu/trim_tree.sh hide, then restore)" >&2
  exit 1
}

