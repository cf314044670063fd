# Thin wrapper over CMake. `make run` and `make test` are the README's two commands.
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: setup configure build run test test-all bench bench-peers bench-train-peers bench-recipe bench-qwen2 bench-decoders golden smoke sanitize fuzz clean

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

smoke: build
	$(BUILD)/tach classify --model preset:bert-tiny --batch 2 --seq-len 16 --repeat 3

bench: build
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
	cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DTACH_SANITIZE=address,undefined -DTACH_BUILD_BENCH=OFF
	cmake --build build-asan -j $(JOBS)
	cd build-asan && ASAN_OPTIONS=detect_leaks=1 ctest -j $(JOBS) --output-on-failure

fuzz:
	TACH_FUZZ=1 scripts/setup.sh
	CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTACH_BUILD_FUZZ=ON \
	  -DTACH_BUILD_TESTS=OFF -DTACH_BUILD_BENCH=OFF -DTACH_CUDA=OFF
	cmake --build build-fuzz -j $(JOBS)

clean:
	rm -rf $(BUILD) build-asan build-fuzz
