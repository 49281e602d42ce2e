"""DAPO's settings (:class:`DapoConfig`, with its parts :class:`CriticConfig` and
:class:`ActorConfig`), apart from the method (``dapo/__init__.py``) so that its stages can name
the type they read without importing the method that runs them. No torch: ``dapo-bench train
--help`` reads the fields DAPO's flags are made from (``methods.base.method_flags``)."""

from __future__ import annotations

from dataclasses import dataclass, field

from dapo_bench.config import option
from dapo_bench.training.optim import OptimConfig


@dataclass(frozen=True)
class CriticConfig:
    """Critic settings.

    model: backbone to start from ("" = the current pi_ref); optim: the optimiser (optim.lr:
    paper 5e-6 for 7B models); epochs: passes over the labelled states (paper: 1); batch_size:
    states per step; heldout_frac: fraction of PROBLEMS whose states are kept out of training
    and used for the calibration report; bins: reliability bins for ECE; max_length: token cap.
    step_labels: also train on (s + first step of each MC completion, that completion's reward):
    one-sample labels of exactly the V(s + a_i) that stage B asks for (see ``critic_examples``).
    """

    model: str = ""
    epochs: float = 1.0
    batch_size: int = 32
    heldout_frac: float = 0.1
    bins: int = 10
    max_length: int = 4096
    step_labels: bool = False
    optim: OptimConfig = field(default_factory=lambda: OptimConfig(lr=5e-6))


@dataclass(frozen=True)
class ActorConfig:
    """Actor settings.

    optim: the optimiser (optim.lr, optim.grad_clip, ...); epochs: passes over the kept states
    (few: the data is off-policy); batch_actions: actions per optimizer step (whole states, so a
    batch may hold more when one state alone has more); max_length: token cap per sequence.
    stop_tol, stop_window: the paper's stopping rule ("stop when the batch mean of |log
    pi_theta/pi_ref| converges"): stop when the mean of the last ``stop_window`` steps' batch
    mean |log-ratio| differs from the mean of the ``stop_window`` steps before them by less
    than ``stop_tol`` (nats); 0 = off (train ``epochs``). The stage records ``stop_step``.
    """

    epochs: int = 1
    batch_actions: int = 64
    max_length: int = 4096
    optim: OptimConfig = field(default_factory=lambda: OptimConfig(lr=1e-6))
    stop_tol: float = 0.0
    stop_window: int = 10

    def __post_init__(self) -> None:
        if not self.stop_tol >= 0:
            raise ValueError(f"stop_tol must be >= 0 (0 = off), got {self.stop_tol}")
        if self.stop_window < 1:
            raise ValueError(f"stop_window must be >= 1, got {self.stop_window}")
        if self.epochs < 1:
            raise ValueError(f"epochs must be >= 1, got {self.epochs}")
        if self.batch_actions < 1:
            raise ValueError(f"batch_actions must be >= 1, got {self.batch_actions}")


@dataclass(frozen=True)
class DapoConfig:
    """DAPO (Liu et al., step-level) settings; ``--set key=value`` / YAML fill them.

    beta, iterations, n_rollouts, mc_samples: declared with their help (``config.option``): they
        are ``dapo-bench train``'s DAPO flags too (the registration names them), shorthands for
        ``--set``; the help is in ``--help`` and in docs/training.md's method-flag table.
    n_problems: training problems per iteration (None: the whole training split); with
        fresh_problems each iteration takes the next n_problems of the split.
    n_samples: n1, responses sampled per problem (paper: 32).
    temperature, top_p: sampling for rollouts and completions (paper: 1.0, 1.0).
    max_new_tokens: generation cap (0: the task's max_new_tokens).
    min_spread: drop a state whose advantage spread (max - min) is under this (default 0.1).
    solved_only: states only from problems at least one of whose n1 responses the verifier
        accepted (default False, the paper's: every problem). For a weak pi_ref: the MC labels
        of a problem it never solves are almost all 0, so its states carry no preference and
        the MC stage pays m completions each for nothing. Problems left out are counted
        (``unsolved_problems`` in the states stage's record).
    advantage: how stage B values a non-terminal candidate step a_i (``VALUE_ESTIMATORS``):
        "critic" (the paper's: V(s + a_i)), "mc" (mean reward of the state's completions that
        begin with a_i; the critic is still trained and reported but not used), or "critic_mc"
        (that mean shrunk towards the critic with weight ``mc_prior``).
    mc_prior: the critic's weight, in completions, for "critic_mc" (default 1.0).
    gen_chunk: states/problems per generation call (the unit of resumption).
    data_frac: with ``--budget-flops`` (a target, ``training.budget``): the share of each
        iteration's part of the budget (1/iterations of it) that the sampling stages (rollouts,
        MC labels) may spend; states left unlabelled are counted. The critic and the actor
        spend the rest: the actor trains as many epochs as reaching the iteration's part takes.
    critic: CriticConfig (model, optim.lr [paper 5e-6 for 7B], epochs [paper 1], batch_size,
        heldout_frac, bins, max_length, step_labels [off in the paper's preset]).
    actor: ActorConfig (optim.lr, optim.grad_clip, epochs, batch_actions, max_length).
    """

    beta: float = option(0.01, "KL weight; the actor's target log-ratio is A/beta (paper 0.01; "
                         "ablation 0.002-0.1)", metavar="F")
    iterations: int = option(1, "iterations; iteration k+1 uses the actor of iteration k as "
                             "pi_ref", metavar="K")
    n_problems: int | None = None
    fresh_problems: bool = True
    n_samples: int = 32
    n_rollouts: int = option(6, "n, responses kept per problem, balanced correct/wrong "
                             "(paper 6)", metavar="N")
    mc_samples: int = option(16, "m, completions per state for its Monte Carlo label; their "
                             "first steps are stage B's candidate actions (paper 16)", metavar="M")
    temperature: float = 1.0
    top_p: float = 1.0
    max_new_tokens: int = 0
    min_spread: float = 0.1
    solved_only: bool = False
    advantage: str = "critic"
    mc_prior: float = 1.0
    gen_chunk: int = 64
    data_frac: float = 0.8
    critic: CriticConfig = field(default_factory=CriticConfig)
    actor: ActorConfig = field(default_factory=ActorConfig)

    def __post_init__(self) -> None:
        if self.beta <= 0:
            raise ValueError(f"beta must be > 0, got {self.beta}")
        if not 0 < self.data_frac <= 1:
            raise ValueError(f"data_frac must be in (0, 1], got {self.data_frac}")
        if self.mc_prior < 0:
            raise ValueError(f"mc_prior must be >= 0, got {self.mc_prior}")
        from dapo_bench.methods.dapo.advantages import VALUE_ESTIMATORS

        VALUE_ESTIMATORS.entry(self.advantage)  # unknown name: one-line error naming the known
        for name in ("iterations", "n_samples", "n_rollouts", "mc_samples", "gen_chunk"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
