"""CLI sub-commands, one module per area, each with ``register(app)``.

Modules here must import nothing heavy at module level (torch, sympy, transformers): the
imports go inside the command functions so that ``dapo-bench --help`` stays fast.
"""

COMMAND_MODULES = (
    "dapo_bench.commands.listing",
    "dapo_bench.commands.verify",
    "dapo_bench.commands.sandbox",
    "dapo_bench.commands.eval",
    "dapo_bench.commands.train",
    "dapo_bench.commands.leaderboard",
    "dapo_bench.commands.audit",
    "dapo_bench.commands.serve",
)
