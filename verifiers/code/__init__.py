"""Sandboxed code verifier: run model-written Python against tests; a reward that the program
cannot forge, without letting it touch anything else.

    from dapo_bench.verifiers.code import run_tests, Limits
    run_tests("print(sum(map(int, input().split())))",
              {"inputs": ["1 2\n"], "outputs": ["3\n"]}).passed   # True

Layout: `formats` (test forms) and `scan` (what assert-based checks proxy), `compare` (output
comparison, parent side), `limits`, `pool` (pre-loaded workers, one per core) -> `worker`
(per-test watchdog) -> `child` (confined fork running stdin/call tests, with `harness`) or, for
assert-based tests, `zygote` (forks the program process: `proxy.serve`) and `checker` (the
checker server running the checks through `proxy.Remote`); `values` (the plain data that
crosses) and `wire` (framing); `layers`, `landlock` and `probe` (containment and its
self-check); `kind` (a completion's program, impossible tests for canaries), `attacks` (the
exploit zoo); `api` (what is exported here). docs/code-sandbox.md says what is contained and
what is not.
"""

from dapo_bench.verifiers.code.api import CodeVerifier, check_layers, run_tests, run_tests_batch
from dapo_bench.verifiers.code.formats import decode_lcb_private, parse_tests
from dapo_bench.verifiers.code.kind import extract_code
from dapo_bench.verifiers.code.limits import Limits

__all__ = [
    "CodeVerifier", "Limits", "check_layers", "decode_lcb_private", "extract_code",
    "parse_tests", "run_tests", "run_tests_batch",
]
