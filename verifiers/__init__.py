"""Verifiers: turn a model's answer into a binary reward. Imports no torch.

Installed as ``dapo_bench.verifiers``. Each verifier returns a :class:`Verdict`, never a bare
bool. A verifier that cannot decide within the item's deadline says so (``reason="timeout"``):
like a worker that died, that is a failure of the verifying machinery (``Verdict.infra_error``),
reported and left out of rewards and metrics, never a 0.

    from dapo_bench.verifiers.math import verify
    verify("... so the answer is \\boxed{\\frac12}", "0.5").passed  # True
"""

from dapo_bench.verifiers.base import VERIFIERS, Verdict, Verifier

__all__ = ["VERIFIERS", "Verdict", "Verifier"]
