"""Sandboxed code verifier: run model-written Python against tests; a reward that cannot be
faked, without letting the program touch anything else.

    from dapo_bench.verifiers.code import run_tests, Limits
    run_tests("print(sum(map(int, input().split())))",
              {"inputs": ["1 2\n"], "outputs": ["3\n"]}).passed   # True

Layout: `formats` (test forms), `compare` (output comparison, parent side), `limits`,
`pool` (pre-loaded workers, one per core) -> `worker` (per-test watchdog) -> `child`
(confined fork running the tests in process) -> `harness` (one test); `layers`, `landlock`
and `probe` (containment and its self-check); `api` (what is exported here).
See the README section "Code verifier and sandbox" for rules, limits and what the sandbox
does NOT protect against.
"""

from dapo_bench.verifiers.code.api import (
    CodeVerifier,
    check_layers,
    extract_code,
    run_tests,
    run_tests_batch,
)
from dapo_bench.verifiers.code.formats import decode_lcb_private, parse_tests
from dapo_bench.verifiers.code.limits import Limits

__all__ = [
    "CodeVerifier", "Limits", "check_layers", "decode_lcb_private", "extract_code",
    "parse_tests", "run_tests", "run_tests_batch",
]
