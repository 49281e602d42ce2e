"""Compute ledger: generated tokens N_inf and trained tokens N_train per stage.

FLOPs ~= 2 * N_params * (N_inf + 3 * N_train): a forward pass costs ~2 FLOPs per parameter per
token, a training step (forward + backward) ~6. Token counts include the prompt/prefix tokens
that a forward pass processes (for generation: prompt tokens once per prompt, plus each
generated token). Every method keeps one ledger so tables can compare methods at equal compute
(the paper's Table 3); ``--budget-flops`` stops a method when ``total_flops`` reaches it.

N_params is the policy's, except for a stage run by another model (DAPO's critic on a larger
backbone): :meth:`Ledger.set_params` charges that stage at its own model's size.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field


@dataclass
class StageCount:
    n_inf: int = 0  # tokens processed by inference-only forward passes (generation, scoring)
    n_train: int = 0  # tokens processed by training steps (forward + backward)
    n_params: int | None = None  # the model that ran this stage, if not the policy


class BudgetExhausted(Exception):
    """Raised by Ledger.check_budget when the FLOP budget is spent; methods stop cleanly."""


@dataclass
class Ledger:
    n_params: int
    budget_flops: float | None = None
    stages: dict[str, StageCount] = field(default_factory=dict)

    def add_inf(self, stage: str, tokens: int) -> None:
        self.stages.setdefault(stage, StageCount()).n_inf += int(tokens)

    def add_train(self, stage: str, tokens: int) -> None:
        self.stages.setdefault(stage, StageCount()).n_train += int(tokens)

    def set_params(self, stage: str, n_params: int) -> None:
        """Charge ``stage`` at ``n_params`` (the size of the model that runs it)."""
        self.stages.setdefault(stage, StageCount()).n_params = int(n_params)

    def stage_flops(self, stage: str) -> float:
        s = self.stages.get(stage, StageCount())
        n = self.n_params if s.n_params is None else s.n_params
        return 2.0 * n * (s.n_inf + 3 * s.n_train)

    @property
    def n_inf(self) -> int:
        return sum(s.n_inf for s in self.stages.values())

    @property
    def n_train(self) -> int:
        return sum(s.n_train for s in self.stages.values())

    @property
    def total_flops(self) -> float:
        return sum(self.stage_flops(name) for name in self.stages)

    def exhausted(self) -> bool:
        return self.budget_flops is not None and self.total_flops >= self.budget_flops

    def check_budget(self) -> None:
        if self.exhausted():
            raise BudgetExhausted(f"FLOP budget {self.budget_flops:.3g} reached")

    def to_dict(self) -> dict:
        return {
            "n_params": self.n_params,
            "budget_flops": self.budget_flops,
            "n_inf": self.n_inf,
            "n_train": self.n_train,
            "flops": self.total_flops,
            "stages": {
                name: {**{k: v for k, v in dataclasses.asdict(s).items() if v is not None},
                       "flops": self.stage_flops(name)}
                for name, s in sorted(self.stages.items())
            },
        }

    @classmethod
    def from_dict(cls, d: dict) -> Ledger:
        led = cls(n_params=int(d["n_params"]), budget_flops=d.get("budget_flops"))
        for name, s in d.get("stages", {}).items():
            n = s.get("n_params")
            led.stages[name] = StageCount(int(s.get("n_inf", 0)), int(s.get("n_train", 0)),
                                          None if n is None else int(n))
        return led

    def merge(self, other: Ledger, prefix: str = "") -> None:
        for name, s in other.stages.items():
            self.add_inf(prefix + name, s.n_inf)
            self.add_train(prefix + name, s.n_train)
            if s.n_params is not None:
                self.set_params(prefix + name, s.n_params)
