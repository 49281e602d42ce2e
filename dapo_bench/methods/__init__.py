"""Training methods, one file each, registered by name in ``METHODS``.

``dapo`` is DAPO, Direct Advantage Policy Optimization (Liu et al., arXiv 2412.18279):
offline and step-level. It is NOT ByteDance's "DAPO" (decoupled clip, arXiv 2503.14476).
"""

from dapo_bench.registry import Registry

METHODS: Registry = Registry(
    "method",
    modules=[
        "dapo_bench.methods.dapo",
        "dapo_bench.methods.sft",
        "dapo_bench.methods.rft",
        "dapo_bench.methods.dpo",
        "dapo_bench.methods.grpo",
        "dapo_bench.methods.ppo",
    ],
)

# the method names without importing the methods (torch): each module is named after its method
# (tests/commands/test_cli.py checks this against the registry); ``train --help`` lists them
METHOD_NAMES: tuple[str, ...] = tuple(m.rsplit(".", 1)[1] for m in METHODS.modules)

# the method modules whose registration imports no torch (their heavy work is imported inside
# functions): ``train --help`` reads the methods' own flags from these registrations without
# loading the other methods (``methods.base.method_flags``). A method that registers flags of
# its own is one of them (tests/methods/test_options.py checks this against the registry).
FLAG_MODULES: tuple[str, ...] = ("dapo_bench.methods.dapo",)
