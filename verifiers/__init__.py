"""Verifiers: turn a model's answer into a binary reward. Imports no torch.

Installed as ``dapo_bench.verifiers``. Each verifier returns a :class:`Verdict`, never a bare
bool; a verifier that cannot decide says so (``reason="timeout"``) and scores 0.

    from dapo_bench.verifiers.math import verify
    verify("... so the answer is \\boxed{\\frac12}", "0.5").passed  # True
"""

from dapo_bench.verifiers.base import VERIFIERS, Verdict, Verifier

__all__ = ["VERIFIERS", "Verdict", "Verifier"]
