"""Programs that try to forge an assert-based pass: every attack x every assert form, each
program's function returning a WRONG value (2 for f(2), where the checks want 5): all must fail.

ATTACKS is the table (in dapo_bench/eval/zoo.py, whose eval-time zoo runs a part of it): name
-> (code run when the program loads, code run inside the call). Adding an attack is one line
there. FORMS are the four assert forms (HumanEval, HumanEval with a
tolerance check, MBPP, LeetCode). The ``memory_lookup`` attack returns the RIGHT value when it
finds any test code in its own process (objects, frames, raw memory), so it fails only while
the program process never holds the checks.

Run ONLY inside a PID namespace, like tests/verifiers/code/test_sandbox_hostile.py (whose
fixture and ``run`` helper this file uses): ``unshare --pid --fork --mount-proc python3 -m
pytest -q -m hostile -p no:cacheprovider tests/verifiers/code/test_sandbox_forge.py``.
"""

from __future__ import annotations

import pytest
from test_sandbox_hostile import cv, run  # noqa: F401 - cv is the module fixture

from dapo_bench.eval.zoo import ATTACKS, FORMS, program

pytestmark = pytest.mark.hostile


def test_the_honest_program_passes_every_form(cv):  # noqa: F811 - the fixture
    for form, (shape, tests) in FORMS.items():
        body = "def f(x):\n    return 2 * x + 1\n" if shape == "fn" else \
            "class Solution:\n    def f(self, x):\n        return 2 * x + 1\n"
        assert run(cv, body, tests).passed, form


@pytest.mark.parametrize("form", sorted(FORMS))
@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_attack_cannot_forge_a_pass(cv, attack, form):  # noqa: F811 - the fixture
    v = run(cv, program(attack, form), FORMS[form][1])
    assert not v.passed and v.reason != "ok", v
    assert "ok" not in v.details["statuses"], v
