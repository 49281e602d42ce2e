"""A training run killed part-way through a stage and rerun with ``--checkpoint-every 2``: what
the checkpoint tests share."""

import pytest
import torch


def timeless(history: list[dict]) -> list[dict]:
    return [{k: v for k, v in row.items() if k != "seconds"} for row in history]


def same_state(a: torch.nn.Module, b: torch.nn.Module) -> None:
    for (name, x), y in zip(a.state_dict().items(), b.state_dict().values()):
        assert torch.equal(x, y), name


def kill_and_resume(monkeypatch, tmp_path, method: str, kw: dict, sets: list[str],
                    kills: list[tuple], preset: str | None = None,
                    killed_kw: dict | None = None) -> tuple[dict, dict]:
    """Run ``method`` whole (run ``whole``), then as run ``k``, killed (KeyboardInterrupt) in the
    3rd call of each ``(module, function name, stage)`` of ``kills`` in turn: each kill leaves
    that stage's step-2 checkpoint and no marker. Then run ``k`` to the end; no checkpoint is
    left. ``killed_kw``: options the killed attempts take in place of ``kw``'s. Returns both
    runs' results."""
    from dapo_bench.run import RunOptions, run_training

    kw = {**kw, "out": str(tmp_path), "quiet": True, "control": False, "checkpoint_every": 2}

    def run(run_id: str, killed: bool = False) -> dict:
        opts = {**kw, **(killed_kw or {})} if killed else kw
        return run_training(method, RunOptions(**opts, run_id=run_id), preset=preset,
                            overrides=sets)

    whole = run("whole")
    stages = tmp_path / "k" / "stages"
    for module, name, stage in kills:
        real, calls = getattr(module, name), []

        def dies_in_call_3(*a, _real=real, _calls=calls, **k):
            _calls.append(1)
            if len(_calls) == 3:
                raise KeyboardInterrupt
            return _real(*a, **k)

        monkeypatch.setattr(module, name, dies_in_call_3)
        with pytest.raises(KeyboardInterrupt):
            run("k", killed=True)
        assert (stages / f"{stage}.ckpt" / "step2").is_dir(), stage
        assert not (stages / f"{stage}.json").exists(), stage
        monkeypatch.setattr(module, name, real)
    again = run("k")
    assert not list(stages.glob("*.ckpt"))  # each marker superseded its stage's checkpoints
    assert again["ledger"]["stages"] == whole["ledger"]["stages"]  # every token charged once
    return whole, again
