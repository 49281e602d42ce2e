"""Math answer verifier: extraction, normalisation, exact and sympy equivalence, bounded.

    from dapo_bench.verifiers.math import verify
    verify("... so the answer is $\\boxed{\\frac12}$.", "0.5")   # Verdict(passed=True, ...)

Public API: :func:`verify`, :func:`verify_batch`, :func:`extract_answer`,
:func:`extract_gold_from_solution`, :func:`normalize_answer` and :class:`MathVerifier`
(registered as ``"math"`` in ``VERIFIERS``). The rules are in the docstrings of ``verifier``
(gold forms, reasons, verdict details), ``extract`` and ``spans`` (where the answer is),
``normalize`` (numbers, separators, rounding, percent), ``plaintext`` (plain-text and SymPy
spellings read as LaTeX), ``structure`` (the shapes of answers), ``exact`` (canonical forms
of radicals and polynomials, decided without sympy),
``match`` (when two shapes are equal: lists, labels, relations vs intervals, choices) and
``symbolic`` (sympy); docs/math-verifier.md puts them together. Importing this package
imports neither sympy nor torch; sympy runs only in worker processes.
"""

from dapo_bench.verifiers.math.extract import extract_answer, extract_gold_from_solution
from dapo_bench.verifiers.math.verifier import (
    MathVerifier,
    normalize_answer,
    verify,
    verify_batch,
)

__all__ = [
    "MathVerifier",
    "extract_answer",
    "extract_gold_from_solution",
    "normalize_answer",
    "verify",
    "verify_batch",
]
