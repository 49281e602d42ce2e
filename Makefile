# The two set-up commands of the README. Each installs what it needs on a fresh machine.
PY ?= python3
export PIP_DISABLE_PIP_VERSION_CHECK = 1

.PHONY: install install-dev demo test lint

install:
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e .

install-dev:
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e '.[dev]'

# Main job: DAPO on the embedded arith default, offline, CPU.
demo: install
	dapo-bench train --method dapo

# All tests. Attacking programs (tests marked 'hostile') run in their own PID namespace, a
# second wall around the sandbox: a stray kill(-1) or fork bomb there cannot reach this shell.
test: install-dev
	$(PY) -m pytest -q -m "not hostile and not slow"
	unshare --pid --fork --mount-proc $(PY) -m pytest -q -m hostile -p no:cacheprovider

lint:
	$(PY) -m ruff check dapo_bench verifiers tests bench
