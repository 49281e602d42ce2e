"""The stage scope: what a stage's trainers and sampling passes are charged to and report
through, passed as one value.

    scope = ctx.scope("train")                 # in a method: the run's ledger under "train"
    scope = Scope("sft", ledger=Ledger(...))   # without a run (toy/build_ref, tests)
    train_sft(model, tok, rows, cfg, scope=scope)

Every trainer and sampling function of ``training/`` (``train_loop``, ``train_sft``,
``sample_groups``, ``chunked_logprobs``, ``update_passes``, the online loop) and the methods'
own trainers (DPO, DAPO's critic and actor) take ``scope=`` instead of ``ledger=, stage=``
(and the progress bar): the stage's name, the compute ledger (None: nothing is charged), the
stage's progress bar and the run's meters. They charge tokens through it
(:meth:`Scope.charge_inf`, :meth:`Scope.charge_train`, :meth:`Scope.charge_ranks`) and ask it
whether the FLOP budget is spent (:meth:`Scope.exhausted`).

A concern that every stage carries (a token meter today; a token budget, a monitor
tomorrow) is a field here, filled by ``RunContext.scope`` (the harness): no trainer's or
method's signature changes. ``meters`` is the first: functions ``meter(stage, kind, tokens)``
told of every charge (``kind`` "inf" or "train"), registered once on the run
(``RunContext.meters``); tests/training/test_scope.py adds one and sees every trainer's tokens.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from dapo_bench import dist
from dapo_bench.ledger import Ledger

# told of every charge of a scope: (stage, "inf" | "train", tokens)
Meter = Callable[[str, str, int], None]


@dataclasses.dataclass(frozen=True)
class Scope:
    """A stage's name, the ledger it is charged to (None: not charged), its progress bar's
    ``advance(k, resumed=False)`` (None: no bar) and the run's meters."""

    stage: str = ""
    ledger: Ledger | None = None
    progress: Callable[..., None] | None = None
    meters: tuple[Meter, ...] = ()

    def charge_inf(self, tokens: int) -> None:
        """Charge ``tokens`` of inference-only forward passes (generation, scoring)."""
        if self.ledger is not None:
            self.ledger.add_inf(self.stage, tokens)
        for meter in self.meters:
            meter(self.stage, "inf", int(tokens))

    def charge_train(self, tokens: int) -> None:
        """Charge ``tokens`` of training steps (forward + backward)."""
        if self.ledger is not None:
            self.ledger.add_train(self.stage, tokens)
        for meter in self.meters:
            meter(self.stage, "train", int(tokens))

    def charge_ranks(self, tokens: int) -> None:
        """Charge this rank's inference ``tokens`` summed over ranks (every rank keeps the same
        ledger); a collective, so every rank calls it."""
        if self.ledger is not None or self.meters:
            self.charge_inf(int(dist.all_sum([tokens])[0]))

    def advance(self, k: int, resumed: bool = False) -> None:
        """Move the stage's progress bar by ``k`` (``resumed``: work read back, not done)."""
        if self.progress is not None:
            self.progress(k, resumed=resumed)

    @property
    def budgeted(self) -> bool:
        """The ledger has a FLOP budget (then every step's tokens are summed at once)."""
        return self.ledger is not None and self.ledger.budget_flops is not None

    def exhausted(self) -> bool:
        """The ledger's FLOP budget is spent (never without a ledger)."""
        return self.ledger is not None and self.ledger.exhausted()

    @property
    def flops(self) -> float | None:
        """The ledger's FLOPs so far (None without a ledger)."""
        return None if self.ledger is None else self.ledger.total_flops
