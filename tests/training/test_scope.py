"""A concern that every stage carries is a field of the stage scope (``training.scope.Scope``),
filled once by the harness (``RunContext.scope``): every trainer and sampling pass gets it
through its one ``scope=`` argument, so no method's or trainer's signature changes. This test
adds a token meter the way a new concern would (``run.train.METERS``, and only there) and sees
every token each method's stages charge: its sums are the run's ledger, stage by stage."""

from __future__ import annotations

from typing import ClassVar

import pytest
import torch
from _tiny import TINY

from dapo_bench.ledger import Ledger
from dapo_bench.run import RunOptions, run_training
from dapo_bench.run import train as run_train
from dapo_bench.training.scope import Scope


class TokenMeter:
    """A new concern: adds up what every stage is charged (a real one might stop a run at a
    token budget, or export the counts)."""

    seen: ClassVar[dict[str, dict[str, int]]] = {}

    def __call__(self, stage: str, kind: str, tokens: int) -> None:
        mine = TokenMeter.seen.setdefault(stage, {"n_inf": 0, "n_train": 0})
        mine[f"n_{kind}"] += tokens


@pytest.mark.parametrize("method", sorted(TINY))
def test_a_meter_registered_once_sees_every_charge_of_every_method(method, tmp_path,
                                                                   monkeypatch):
    torch.set_num_threads(1)
    monkeypatch.setattr(run_train, "METERS", [TokenMeter])
    TokenMeter.seen = {}
    opts = RunOptions(task="arith:sft", eval_limit=2, control=False, out=str(tmp_path),
                      run_id=method, quiet=True)
    out = run_training(method, opts, preset="toy", overrides=TINY[method])
    ledger = {name: {k: s.get(k, 0) for k in ("n_inf", "n_train")}
              for name, s in out["ledger"]["stages"].items()}
    assert ledger and TokenMeter.seen == ledger
    if out["history"]:  # it trained (TINY's DPO may find no pair): the trainer's tokens too
        assert any(s["n_train"] for s in ledger.values())


def test_a_scope_without_a_run_charges_its_ledger_and_its_meters():
    led, seen = Ledger(n_params=1), []
    scope = Scope("s", led, meters=(lambda *a: seen.append(a),))
    scope.charge_inf(3)
    scope.charge_train(2)
    scope.charge_ranks(5)  # one process: its own tokens
    assert (led.n_inf, led.n_train) == (8, 2) and not scope.exhausted()
    assert seen == [("s", "inf", 3), ("s", "train", 2), ("s", "inf", 5)]
    assert scope.flops == 2.0 * (8 + 3 * 2)
    Scope().charge_inf(1)  # no ledger, no meters: nothing to charge
    assert Scope().flops is None and not Scope().exhausted()
    bar: list = []
    Scope(progress=lambda k, resumed=False: bar.append((k, resumed))).advance(2, resumed=True)
    assert bar == [(2, True)]
