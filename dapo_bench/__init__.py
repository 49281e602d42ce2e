"""dapo-bench: verifiers, benchmarks and training for reasoning LLMs.

Importing this package is cheap: it pulls in neither torch nor sympy. Heavy modules
(generation, training, eval) are imported where they are used.

The layout, top floor first (docs/architecture.md draws it and says why)::

    cli, commands/        the CLI: parses and calls the library
    methods/              one file or folder per training method (methods/dapo/: DAPO's stages,
                          advantages, actor, critic), the run (base, context) and its report
    toy/                  the embedded tiny policy (tokenizer, model, build_ref; it scores
                          its checks with eval's paired bootstrap)
    training/             one training loop, engines, batches and log-probs, the one rollout path,
                          value model, online (GRPO/PPO) pieces, policy-gradient losses, SFT
    eval/                 generate + verify + score tasks, result files
    leaderboard/          tables and plots from result files (reads results only)
    serve/                the HTTP reward server (``dapo-bench serve``) and the verify row format
    generation/           one Generator interface; hf and vllm backends
    tasks/                declarative task specs, rows, prompts, scoring through a verifier
    models                load / save / count a policy (generation and training both use it)
    verifiers/            math and code verifiers (installed as dapo_bench.verifiers; no torch)
    ground floor          errors, registry, io, config, ledger, provenance, results, dist, arith

``ALLOWED_IMPORTS`` is the rule (tests/test_architecture.py enforces it): a part may import
itself, the ground floor, and the parts listed for it; nothing else (no upward import, no cycle).
"""

__version__ = "0.1.0"

GROUND = ("errors", "registry", "io", "config", "ledger", "provenance", "results", "dist",
          "arith")
ALLOWED_IMPORTS: dict[str, tuple[str, ...]] = {
    "verifiers": (),
    "models": (),
    "tasks": ("verifiers",),
    "generation": ("models",),
    "leaderboard": (),
    "eval": ("generation", "tasks", "verifiers", "models"),
    "training": ("generation", "models", "verifiers"),
    "toy": ("training", "generation", "models", "eval"),
    "methods": ("training", "generation", "models", "eval", "tasks", "verifiers", "toy"),
    "serve": ("verifiers",),
    "commands": ("methods", "training", "generation", "models", "eval", "tasks", "verifiers",
                 "toy", "leaderboard", "serve"),
    "cli": ("commands",),
}
