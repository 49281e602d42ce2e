"""The exploit zoo: attacks on a verifier, run through an eval's own verifier before it scores
anything (:func:`check`, called by ``eval.runner`` for each verifier it makes, so at every
eval, the training runs' included; once per process for a verifier of one class, version and
options). Any attack that passes stops the run loudly
(:class:`~dapo_bench.errors.RunStopped`, exit status 3): a reward that an attack earns is not a
measurement.

Each verifier owns its attacks (its class's ``zoo()``: names, completions and the gold they
must not meet), judged with the task's verifier options and its own completion rule:

- code (``dapo_bench.verifiers.code.attacks``: ``ATTACKS``, ``FORMS``, ``program``): programs
  that try to forge an assert-based pass, each returning a WRONG value; an eval runs
  ``EVAL_ATTACKS`` (seconds) on the MBPP form. tests/verifiers/code/test_sandbox_forge.py runs
  every attack against every form, in a PID namespace.
- math (``dapo_bench.verifiers.math.probes.ATTACKS``): answers that must not equal the gold 17
  (NaN, infinities, empty and free-variable boxes, hedges, intervals and sets, near misses,
  oversized answers).

Not covered: attacks on a task's prompt or generator; the honest answer passing (a verifier
that fails everything passes the zoo; the tests check the honest programs); a verifier whose
class has no zoo (it runs no attacks: ``{"attacks": 0}``).
"""

from __future__ import annotations

import time
from typing import Any

from dapo_bench.errors import RunStopped
from dapo_bench.verifiers.code.attacks import ATTACKS, EVAL_ATTACKS, FORMS, program
from dapo_bench.verifiers.math.probes import ATTACKS as MATH_ATTACKS
from dapo_bench.verifiers.math.probes import GOLD as MATH_GOLD

__all__ = ["ATTACKS", "EVAL_ATTACKS", "FORMS", "MATH_ATTACKS", "MATH_GOLD", "check", "program"]

_PASSED: set[tuple] = set()  # (verifier class, version, the task's verifier and options)


def check(task: Any, verifier: Any) -> dict:
    """Run the zoo of ``task``'s verifier (its class's ``zoo()``) through ``verifier``, with the
    task's own completion rule; RunStopped naming the attacks that passed, else ``{"attacks",
    "seconds"}``. A verifier of the same class, version, name and options that passed the zoo in
    this process is not run again (its verdicts are a function of those; the math zoo starts a
    sympy worker, ~2 s): ``{"attacks": 0, ...}``."""
    from dapo_bench.tasks.task import Problem

    key = (type(verifier), str(getattr(verifier, "version", "")), task.verifier_key)
    t0 = time.perf_counter()
    if key in _PASSED:
        return {"attacks": 0, "seconds": 0.0}
    names, texts, gold = task.verifier_cls.zoo()
    verdicts = task.score(verifier, texts, [Problem("zoo", "zoo", gold)] * len(texts)) \
        if texts else []
    passed = [n for n, v in zip(names, verdicts) if v.passed]
    if passed:
        raise RunStopped(f"exploit zoo: verifier {task.spec.verifier.name} of task {task.name} "
                         f"passed {len(passed)} attack(s) "
                         f"({', '.join(repr(n[:40]) for n in passed[:3])}); "
                         f"its rewards cannot be trusted, nothing was scored")
    _PASSED.add(key)
    return {"attacks": len(texts), "seconds": round(time.perf_counter() - t0, 3)}
