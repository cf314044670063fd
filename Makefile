# Thin wrapper over CMake. `make run` and `make test` are the README's two commands.
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: setup configure build run test test-all test-unit test-golden test-slow test-gpu smoke bench-gemm \
  benchmark benchmark-gpu benchmark-all slurm slurm-cpu slurm-gpu bench-dist report report-pdf report-pptx report-full quick-report manifest verify-manifest release \
  bench-peers bench-train-peers bench-recipe bench-qwen2 bench-decoders golden sanitize fuzz fuzz-campaign lint format clean

# The run directory the report, manifest and release targets work on: the newest under runs/
# unless given (make report RUN=runs/<id>).
RUN ?= $(shell ls -td runs/*/ 2>/dev/null | head -1)
need-run = @test -n "$(RUN)" || { echo "no run directory under runs/: run make benchmark first, or give RUN=runs/<id>"; exit 1; }

# The development-only virtualenv with torch, transformers and onnxruntime (scripts/peers/README.md).
REF_PYTHON ?= $(HOME)/tach-ref/bin/python

setup:
	scripts/setup.sh

configure: setup
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)

build: configure
	cmake --build $(BUILD) -j $(JOBS)

# The main job on the built-in default: a sweep of DistilBERT-base (synthetic weights), batch 1-32
# at seq 128, f32, on the CPU, into runs/<run_id>/ (under 2 minutes on 2 cores).
run: build
	$(BUILD)/tach info
	$(BUILD)/tach bench

# The test suite without the slow label (CI runs this).
test: build
	cd $(BUILD) && ctest -j $(JOBS) --output-on-failure -LE slow

test-all: build
	cd $(BUILD) && ctest -j $(JOBS) --output-on-failure

# One label each: unit, golden, slow, gpu (skips without a GPU); timing marks the tests that
# compare timed runs (make sanitize leaves them out).
test-unit test-golden test-slow test-gpu: test-%: build
	cd $(BUILD) && ctest -j $(JOBS) --output-on-failure -L '^$*$$'

# Seconds: the built-in tiny model, one forward, one tiny sweep, through the CLI.
smoke: build
	$(BUILD)/tach classify --model preset:bert-tiny --batch 2 --seq-len 16 --repeat 3
	$(BUILD)/tach bench --model preset:bert-tiny -b 1,2 -s 16 --runs 3 --no-progress --runs-dir $(BUILD)/smoke-runs

# The benchmark targets write run directories under runs/ (MODEL=... picks a model; default the
# built-in DistilBERT-base with synthetic weights).
MODEL ?=
model-flag = $(if $(MODEL),--model $(MODEL))

# The inference sweep on the best device here (a GPU when one is usable).
benchmark: build
	$(BUILD)/tach bench $(model-flag)

# The same sweep on the GPU, f32 and bf16; an error naming the reason where no GPU is usable.
benchmark-gpu: build
	$(BUILD)/tach bench $(model-flag) --device cuda --dtype f32,bf16

# The inference sweep with its profile and report (tach run), then the training sweep.
benchmark-all: build
	$(BUILD)/tach run $(model-flag)
	$(BUILD)/tach bench --train $(model-flag)

# The benchmark sweep as a SLURM job array (tach bench --slurm; docs/cli.md): one task per curve
# over batch sizes, each writing its points into runs/<id>/; `make report` once they are in.
# SLURM_FLAGS adds settings: SLURM_FLAGS="--slurm-partition gpu --slurm-time 30:00".
SLURM_FLAGS ?=
slurm: build
	$(BUILD)/tach bench $(model-flag) --slurm $(SLURM_FLAGS)

slurm-cpu: build
	$(BUILD)/tach bench $(model-flag) --device cpu --slurm $(SLURM_FLAGS)

# One GPU per task, f32 and bf16.
slurm-gpu: build
	$(BUILD)/tach bench $(model-flag) --device cuda --dtype f32,bf16 --slurm --slurm-gpus-per-task 1 $(SLURM_FLAGS)

# Data-parallel scaling here: 2 MPI ranks x 1 thread against 1 process x 2 threads at global batch
# 32, and tach's all-reduce against plain MPI_Allreduce (docs/perf.md; needs ../shared's MiniLM).
bench-dist: build
	TACH=$(BUILD)/tach scripts/dist_scaling.sh

report: build
	$(need-run)
	$(BUILD)/tach report $(RUN)

report-pdf: build
	$(need-run)
	$(BUILD)/tach report --pdf $(RUN)

# The slide deck: a title slide, one slide per chart with its numbers, the findings (and plots/*.png).
report-pptx: build
	$(need-run)
	$(BUILD)/tach report --pptx $(RUN)

# Every report format of the run (HTML, PDF, PNG figures, slides), then its manifest.
report-full: build
	$(need-run)
	$(BUILD)/tach report --pdf --png --pptx $(RUN)
	$(BUILD)/tach manifest $(RUN)

# A short sweep (batch 1 and 8, 5 runs each), profiled and reported, in about a minute.
quick-report: build
	$(BUILD)/tach run $(model-flag) -b 1,8 --runs 5

manifest: build
	$(need-run)
	$(BUILD)/tach manifest $(RUN)

verify-manifest: build
	$(need-run)
	$(BUILD)/tach verify $(RUN)

# release/<run id>/: the run's reports (HTML, PDF, slides), its figures (plots/), summaries, tables, TensorBoard events and
# log, with SHA256SUMS over them, verified before it is called done.
release: report-full
	rm -rf release/$$(basename $(RUN)) && mkdir -p release/$$(basename $(RUN))
	cd $(RUN) && cp -r --parents $$(ls -d report.html report.pdf report.pptx summary.txt summary.json detailed_metrics.csv \
	  performance_report.md config.json results.jsonl run.log tensorboard plots 2>/dev/null) \
	  $(CURDIR)/release/$$(basename $(RUN))/
	$(BUILD)/tach manifest release/$$(basename $(RUN))
	$(BUILD)/tach verify release/$$(basename $(RUN))

# The GEMM microbenchmark (Google Benchmark): oneDNN against OpenBLAS at the model's shapes.
bench-gemm: build
	OPENBLAS_CORETYPE=$${OPENBLAS_CORETYPE:-SKYLAKEX} $(BUILD)/bench/tach_bench_gemm --benchmark_repetitions=5 \
	  --benchmark_report_aggregates_only=true

# DistilBERT-base at seq 128, batch 1/8/32: tach vs PyTorch eager vs ONNX Runtime, same weights
# and inputs, alternating in rounds (docs/perf.md).
bench-peers: build
	test -f $(BUILD)/golden/distilbert-base-random/model.safetensors || \
	  $(REF_PYTHON) scripts/golden/make_encoder_fixtures.py --base $(BUILD)/golden
	$(REF_PYTHON) scripts/peers/encoder_peers.py --model $(BUILD)/golden/distilbert-base-random --tach $(BUILD)/tach

# A DistilBERT-base training step (batch 8 and 32, seq 128, f32) on tach and PyTorch eager, alternating.
bench-train-peers: build
	test -f $(BUILD)/golden/distilbert-base-random/model.safetensors || \
	  $(REF_PYTHON) scripts/golden/make_encoder_fixtures.py --base $(BUILD)/golden
	$(REF_PYTHON) scripts/peers/train_peers.py --model $(BUILD)/golden/distilbert-base-random --tach $(BUILD)/tach

# The MiniLM SST-2 fine-tuning recipe on tach and PyTorch, 3 seeds each (about an hour on 2 cores).
bench-recipe: build
	$(REF_PYTHON) scripts/peers/minilm_sst2_recipe.py --tach $(BUILD)/tach --model $$(../shared/tools/get-minilm)

# A Qwen2.5-0.5B-sized classifier, f32 and bf16: tach vs PyTorch eager, same run (docs/perf.md).
bench-qwen2: build
	test -f $(BUILD)/golden/qwen2.5-0.5b-random-bf16/model.safetensors || \
	  $(REF_PYTHON) scripts/golden/make_qwen2_fixtures.py --base $(BUILD)/golden
	$(REF_PYTHON) scripts/peers/qwen2_peers.py --models $(BUILD)/golden --tach $(BUILD)/tach

# Llama-3.2-1B- and Qwen3-0.6B-sized causal LMs (random weights, f32): prefill at batch 1 and 8 against
# PyTorch eager and ONNX Runtime, batch-1 decode against PyTorch eager, same run (docs/perf.md).
bench-decoders: build
	test -f $(BUILD)/golden/qwen3-0.6b-random/model.safetensors || \
	  (cd scripts/golden && $(REF_PYTHON) make_decoder_fixtures.py --base ../../$(BUILD)/golden)
	$(REF_PYTHON) scripts/peers/decoder_peers.py $(BUILD)/golden/llama-3.2-1b-random $(BUILD)/golden/qwen3-0.6b-random \
	  --tach $(BUILD)/tach

# Regenerate the committed golden fixtures (needs REF_PYTHON).
golden:
	$(REF_PYTHON) scripts/golden/make_encoder_fixtures.py tests/fixtures/encoders
	$(REF_PYTHON) scripts/golden/make_qwen2_fixtures.py tests/fixtures/decoders
	cd scripts/golden && $(REF_PYTHON) make_decoder_fixtures.py ../../tests/fixtures/decoders

# The whole suite under AddressSanitizer and UBSan.
sanitize: setup
	cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DTACH_SANITIZE=address,undefined -DTACH_BUILD_BENCH=OFF \
	  -DTACH_PYTHON=OFF
	cmake --build build-asan -j $(JOBS)
	cd build-asan && ASAN_OPTIONS=detect_leaks=1 LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan_libraries.supp ctest -j $(JOBS) --output-on-failure -LE timing

# clang-format and clang-tidy (Debian's, version 14) with the repository's .clang-format and .clang-tidy:
# every tracked C++ file formatted, every translation unit of the build (not the .cu files, which
# clang-tidy 14 cannot parse for CUDA 13, nor the fuzz targets, built apart) without a warning.
# About an hour on 2 cores.
CXX_SOURCES = $(shell git ls-files '*.cc' '*.h' '*.cu' '*.cuh')
lint: build
	TACH_LINT=1 scripts/setup.sh
	clang-format --dry-run --Werror $(CXX_SOURCES)
	run-clang-tidy -p $(BUILD) -j $(JOBS) -quiet '^$(CURDIR)/(src|tools|tests|bench|examples|python)/.*\.cc$$'

# Rewrites the tracked C++ files in the house format (what lint's first half checks).
format:
	TACH_LINT=1 scripts/setup.sh
	clang-format -i $(CXX_SOURCES)

fuzz:
	TACH_FUZZ=1 scripts/setup.sh
	CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTACH_BUILD_FUZZ=ON \
	  -DTACH_BUILD_TESTS=OFF -DTACH_BUILD_BENCH=OFF -DTACH_CUDA=OFF -DTACH_PYTHON=OFF
	cmake --build build-fuzz -j $(JOBS)

# Every parser's campaign from its corpus: 10^6 runs or 30 minutes each (tests/fuzz/campaign.sh;
# FUZZ_FLAGS="-s 600 parquet" for fewer).
FUZZ_FLAGS ?=
fuzz-campaign: fuzz
	nice -n 19 tests/fuzz/campaign.sh $(FUZZ_FLAGS)

clean:
	rm -rf $(BUILD) build-asan build-fuzz
