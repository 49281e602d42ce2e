"""dapo-bench: verifiers, benchmarks and training for reasoning LLMs.

Importing this package is cheap: it pulls in neither torch nor sympy. Heavy modules
(generation, training, eval) are imported where they are used.

The layout, top floor first (docs/architecture.md draws it and says why)::

    cli, commands/        the CLI: parses and prints; calls the run (train) or the library
    launch                torchrun with one-line failures (python -m dapo_bench.launch)
    run/                  a training run: options, run dir, the method, evaluation, the
                          equal-compute control, results.json (commands -> run -> methods)
    methods/              one file or folder per training method (methods/dapo/: DAPO's stages,
                          advantages, actor, critic), the method interface (base), what a
                          method sees (context: stages, the policy in memory, the generator)
    toy/                  the embedded tiny policy (tokenizer, model, build_ref; it scores
                          its checks with eval's paired bootstrap)
    training/             one training loop, engines, batches and log-probs, the one rollout path,
                          value model, online (GRPO/PPO) pieces, policy-gradient losses, SFT
    eval/                 generate + verify + score tasks, result files
    leaderboard/          tables and plots from result files (reads results only)
    serve/                the HTTP reward server (``dapo-bench serve``) and the verify row format
    generation/           one Generator interface; hf and vllm backends, and openai (a server)
    tasks/                task specs parsed, rows, prompts, scoring through a verifier (the
                          YAML specs are data: the repository's tasks/, dapo_bench.task_specs)
    models                load / save / count a policy; Policy, the handle a run passes on
    rewards/              the verifiers in TRL's and verl's reward signatures (no torch)
    verifiers/            math and code verifiers (installed as dapo_bench.verifiers; no torch)
    ground floor          errors, registry, io, config, ledger, provenance, results, dist, nodes,
                          arith, telemetry (--report-to: TensorBoard / W&B scalars)

``ALLOWED_IMPORTS`` is the rule (tests/test_architecture.py enforces it): a part may import
itself, the ground floor, and the parts listed for it; nothing else (no upward import). No
import circle either, between parts or between the modules of one part, counting imports inside
functions (the same test). ``SPEC_REFERENCES`` names the parts a task spec may name by string.
"""

__version__ = "0.1.0"

GROUND = ("errors", "registry", "io", "config", "ledger", "provenance", "results", "dist",
          "nodes", "arith", "telemetry")
ALLOWED_IMPORTS: dict[str, tuple[str, ...]] = {
    "verifiers": (),
    "models": (),
    "tasks": ("verifiers",),
    "rewards": ("verifiers",),
    "generation": ("models",),
    "leaderboard": (),
    "eval": ("generation", "tasks", "verifiers", "models"),
    "training": ("generation", "models", "verifiers"),
    "toy": ("training", "generation", "models", "eval"),
    "methods": ("training", "generation", "models", "eval", "tasks", "verifiers", "toy"),
    "serve": ("verifiers",),
    "run": ("methods", "training", "generation", "models", "eval", "tasks", "verifiers"),
    "commands": ("run", "methods", "training", "generation", "models", "eval", "tasks",
                 "verifiers", "toy", "leaderboard", "rewards", "serve"),
    "cli": ("commands",),
    "launch": (),
}
# Parts that a task spec (YAML data under the repository's tasks/, installed as
# dapo_bench.task_specs; not the code package dapo_bench/tasks/) may name by a "module:NAME"
# string, resolved when a run needs it: the toy's shipped policy is arith's default_model, a
# reference from data upward to toy that no import shows (tests/test_architecture.py checks
# every spec's strings against this).
SPEC_REFERENCES: tuple[str, ...] = ("ground", "toy")
