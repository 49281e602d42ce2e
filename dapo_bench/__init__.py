"""dapo-bench: verifiers, benchmarks and training for reasoning LLMs.

Importing this package is cheap: it pulls in neither torch nor sympy. Heavy modules
(generation, training, eval) are imported where they are used.
"""

__version__ = "0.1.0"
