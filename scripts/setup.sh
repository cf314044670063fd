#!/usr/bin/env bash
# Installs the Debian/Ubuntu packages tach builds against. Idempotent: installs only what is
# missing and says what. Works as root or through sudo.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config
  nlohmann-json3-dev     # JSON (configs, safetensors headers, results)
  libcli11-dev           # command line
  libdnnl-dev            # oneDNN: GEMM and fused linear layers (chosen by measurement, docs/perf.md)
  ocl-icd-opencl-dev opencl-headers   # Debian's oneDNN CMake config probes for OpenCL (its GPU runtime)
  libopenblas-dev        # OpenBLAS: the GEMM comparison and BLAS checks in tach info
  libyaml-cpp-dev        # YAML run configs
  libcsv-dev             # CSV/TSV datasets (RFC 4180 quoting, multi-line fields)
  zlib1g-dev             # gzip (Parquet pages, test fixtures)
  libisal-dev            # tach analyze: ISA-L's igzip inflates gzipped traces
  librsvg2-dev libcairo2-dev   # tach report --png: the charts' SVG rendered to PNG
  libzip-dev             # tach report --pptx: the slide deck's zip package
  libsnappy-dev libzstd-dev   # Parquet datasets: the pages' compressions
  libcurl4-openssl-dev libssl-dev   # downloads from the Hugging Face Hub (HTTPS); SHA-256/SHA-1 to verify them
  libutf8proc-dev libpcre2-dev   # Unicode data and regex for the tokenizers
  libgtest-dev libgmock-dev libbenchmark-dev   # tests and kernel benchmarks
  pybind11-dev python3-dev python3-numpy python3-pytest   # the Python module (import tach) and its tests
  openmpi-bin libopenmpi-dev   # data-parallel training: tach train under mpirun (ranks, all-reduces)
  slurm-client           # tach bench --slurm submits sweeps with sbatch
  munge slurmctld slurmd # the tests start a single-node SLURM on localhost to run them through
  clang-format           # the tests check the sources' format (.clang-format; make format rewrites them)
  chromium chromium-driver python3-selenium     # tests open the HTML reports in a real (headless) browser; tach report --pdf
  libreoffice-impress    # tests render tach report --pptx's deck headless, as a user's LibreOffice opens it
)
if [ "${TACH_FUZZ:-0}" = 1 ]; then packages+=(clang libclang-rt-dev); fi
if [ "${TACH_LINT:-0}" = 1 ]; then packages+=(clang-tidy); fi   # make lint

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages already installed"
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "setup: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  sudo="sudo"
fi
echo "setup: installing ${missing[*]}"
# munge's install makes its key as the munge user through su, which containers (and CI roots)
# refuse; a key already in place is kept and only has its owner set. 1 KiB from the kernel's
# random source, as mungekey makes it.
if [[ " ${missing[*]} " == *" munge "* ]] && [ ! -e /etc/munge/munge.key ]; then
  $sudo mkdir -p /etc/munge
  $sudo sh -c 'umask 077 && head -c 1024 /dev/urandom > /etc/munge/munge.key'
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
