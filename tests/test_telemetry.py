"""``--report-to``: a real toy run of every method writes the documented scalars, read back by
tensorboard's own reader; W&B offline; bad values are one-line errors. DAPO's actor stopping
rule (the paper's: the batch mean |log-ratio| converged): the rule itself, and a run it stops.

The runs train the shipped arith reference (it solves most problems, so every method has
rewards, pairs and kept states) at tiny sizes, without the control unless a test needs it.
"""

import math

import pytest

from dapo_bench.methods.dapo.actor import log_ratio_converged

pytestmark = pytest.mark.integration  # launches processes, trains or kills runs (conftest)

pytest.importorskip("tensorboard")

TINY = {
    "dapo": ["n_problems=16", "n_samples=4", "n_rollouts=2", "mc_samples=4", "gen_chunk=32",
             "min_spread=0", "critic.batch_size=16", "actor.batch_actions=8",
             "actor.stop_tol=100", "actor.stop_window=2"],
    "sft": ["epochs=0.01", "batch_size=16"],
    "rft": ["n_problems=8", "samples_per_prompt=2", "sft.epochs=1", "sft.batch_size=4"],
    "dpo": ["n_problems=16", "samples_per_prompt=4", "epochs=1", "batch_size=2"],
    "grpo": ["max_steps=2", "prompts_per_step=4", "samples_per_prompt=4", "minibatch_size=8"],
    "ppo": ["max_steps=2", "rollout_batch=8", "minibatch_size=8"],
}
# what every optimiser step reports (docs/watching.md, "Watching a run"), per method
STEP = ("grad_norm", "lr", "tokens_per_s", "flops")
LOSSES = {"sft": ("loss",), "rft": ("loss",),
          "dpo": ("loss", "pair_acc", "chosen_reward", "rejected_reward"),
          "grpo": ("loss", "pg_loss", "kl", "clip_frac", "reward_mean", "reward_std"),
          "ppo": ("actor_loss", "critic_loss", "pg_loss", "kl", "value_loss", "actor_grad_norm",
                  "critic_grad_norm", "actor_lr", "critic_lr", "reward_mean", "reward_std")}


def _run(tmp_path, method: str, report_to: str = "tensorboard", control: bool = False) -> dict:
    from dapo_bench.run import RunOptions, run_training

    return run_training(method, RunOptions(
        eval_limit=4, control=control, control_batch_size=16,
        out=str(tmp_path), run_id=method, quiet=True, report_to=report_to),
        preset="toy", overrides=TINY[method])


def _scalars(run_dir) -> dict[str, list]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    ea = EventAccumulator(str(run_dir / "tensorboard"), size_guidance={"scalars": 0})
    ea.Reload()
    return {t: [(e.step, e.value) for e in ea.Scalars(t)] for t in ea.Tags()["scalars"]}


def _values(tags: dict, tag: str) -> list[float]:
    assert tag in tags, f"{tag} missing; written: {sorted(tags)}"
    vals = [v for _, v in tags[tag]]
    assert all(math.isfinite(v) for v in vals), tag
    return vals


def test_stop_rule_needs_two_windows_and_a_change_under_tol():
    flat = [0.0, 0.1, 0.2, 0.21, 0.2, 0.21]
    assert log_ratio_converged(flat, 0.05, 2)  # last two windows: means 0.205 and 0.205
    assert not log_ratio_converged(flat[:5], 0.05, 2)  # 0.1 -> 0.205
    assert not log_ratio_converged(flat[:3], 0.05, 2)  # fewer than 2 windows
    assert not log_ratio_converged([0.0, 0.1, 0.2, 0.3], 0.05, 2)  # still rising
    assert log_ratio_converged([0.0, 0.1, 0.2, 0.3], 0.25, 2)
    assert not log_ratio_converged([0.2] * 40, 0.0, 2)  # tol 0: off


def test_dapo_run_reports_the_documented_scalars_and_stops_by_the_rule(tmp_path):
    res = _run(tmp_path, "dapo", control=True)
    actor = res["iterations"][0]["actor"]
    # stop_window 2, a tolerance no change reaches: it stops after 2 windows of steps
    assert actor["stopped"] == "converged" and actor["stop_step"] == actor["steps"] == 4
    assert len(res["history"]) == 4
    tags = _scalars(tmp_path / "dapo")
    for name in ("loss", "abs_log_ratio", "sign_agree", *STEP):
        _values(tags, f"it1.actor/{name}")
    assert len(tags["it1.actor/loss"]) == 4
    assert 0 <= min(_values(tags, "it1.actor/sign_agree")) <= max(
        _values(tags, "it1.actor/sign_agree")) <= 1
    assert min(_values(tags, "it1.actor/abs_log_ratio")) >= 0
    assert all(v == pytest.approx(2e-5) for v in _values(tags, "it1.actor/lr"))  # toy preset
    assert min(_values(tags, "it1.actor/grad_norm")) > 0
    assert min(_values(tags, "it1.actor/tokens_per_s")) > 0
    flops = _values(tags, "it1.actor/flops")
    assert flops == sorted(flops) and flops[-1] <= res["ledger"]["flops"]
    for name in ("loss", *STEP):
        _values(tags, f"it1.critic/{name}")
    for name in ("final_loss", "heldout.brier", "heldout.ece"):
        assert 0 <= _values(tags, f"stage/it1.critic/{name}")[0] <= 1.5
    assert _values(tags, "stage/it1.critic/heldout.brier") == [
        pytest.approx(res["critic"]["heldout"]["brier"])]
    assert _values(tags, "stage/it1.actor/stop_step") == [4]
    mean = _values(tags, "it1.rollouts/reward_mean")[0]
    assert mean == pytest.approx(res["iterations"][0]["rollouts"]["accuracy"])
    assert _values(tags, "it1.rollouts/reward_std")[0] == pytest.approx(
        math.sqrt(mean * (1 - mean)))  # 0/1 rewards
    _values(tags, "it1.mc/reward_mean")
    _values(tags, "control/loss")
    for label in ("reference", "final", "control"):
        for task in ("arith", "arith_ood"):
            acc = _values(tags, f"eval/{label}/{task}/acc")
            assert acc == [pytest.approx(res["evals"][label][task]["value"])]
            assert _values(tags, f"eval/{label}/{task}/acc_stderr")[0] >= 0
    steps = [s for t in tags.values() for s, _ in t]
    assert max(steps) == len(tags["it1.critic/loss"]) + 4 + len(tags["control/loss"])


@pytest.mark.parametrize("method", ["sft", "rft", "dpo", "grpo", "ppo"])
def test_every_method_reports_its_steps(tmp_path, method):
    res = _run(tmp_path, method)
    tags = _scalars(tmp_path / method)
    names = LOSSES[method] + (STEP[2:] if method == "ppo" else STEP)
    for name in names:
        _values(tags, f"train/{name}")
    n_steps = sum(len(v) for k, v in tags.items() if k == "train/tokens_per_s")
    assert n_steps >= 1 and max(s for s, _ in tags["train/tokens_per_s"]) == n_steps
    if method in ("rft", "dpo"):  # their rollouts stage samples with the verifier
        assert 0 <= _values(tags, "rollouts/reward_mean")[0] <= 1
    if method in ("grpo", "ppo"):
        assert _values(tags, "train/reward_mean") == [
            pytest.approx(h["reward"]) for h in res["history"]]
    _values(tags, "eval/final/arith/acc")


def test_report_to_none_writes_nothing(tmp_path):
    _run(tmp_path, "sft", report_to="none")
    assert not (tmp_path / "sft" / "tensorboard").exists()


def test_wandb_offline(tmp_path, monkeypatch):
    pytest.importorskip("wandb")
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    _run(tmp_path, "sft", report_to="wandb")
    logs = list((tmp_path / "sft" / "wandb").glob("offline-run-*/run-*.wandb"))
    assert len(logs) == 1
    data = logs[0].read_bytes()
    for tag in (b"train/loss", b"train/grad_norm", b"eval/final/arith/acc"):
        assert tag in data


@pytest.mark.parametrize("command", [["train", "--method", "sft"], ["eval", "--tasks", "arith"]])
def test_bad_report_to_is_one_line(cli, tmp_path, command):
    code, err = cli([*command, "--out", tmp_path, "--report-to", "foo"])
    assert code == 2
    assert err.strip() == ("error: --report-to 'foo': expected one of none | tensorboard | "
                           "wandb")
    assert not any(tmp_path.iterdir())


def test_a_missing_writer_package_names_the_extra(monkeypatch):
    import importlib.util

    from dapo_bench.errors import UserError
    from dapo_bench.telemetry import check_report_to

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "wandb" else real(name, *a))
    with pytest.raises(UserError, match=r"pip install 'dapo-bench\[wandb\]'"):
        check_report_to("wandb")


def test_eval_command_reports_every_metric(cli, tmp_path):
    code, _ = cli(["eval", "--tasks", "arith", "--limit", "4",
                   "--out", tmp_path, "--run-id", "e", "--report-to", "tensorboard", "--quiet"])
    assert code in (0, None)
    tags = _scalars(tmp_path / "e")
    assert 0 <= _values(tags, "eval/arith/acc")[0] <= 1
    assert _values(tags, "eval/arith/acc_stderr")[0] >= 0


def test_an_old_run_dir_without_the_new_fields_resumes(tmp_path):
    """config.json written before ``report_to`` and ``actor.stop_*`` existed is the same run."""
    from dapo_bench.config import to_dict
    from dapo_bench.methods import METHODS
    from dapo_bench.run import RunOptions, resolve_config
    from dapo_bench.run.rundir import claim_run_dir

    spec = METHODS.get("dapo")
    preset, cfg = resolve_config(spec, RunOptions(), None, None, [])
    saved = {"method": "dapo", "preset": preset, "options": to_dict(RunOptions()),
             "config": to_dict(cfg)}
    old = {**saved, "options": {k: v for k, v in saved["options"].items() if k != "report_to"},
           "config": {**saved["config"], "actor": {
               k: v for k, v in saved["config"]["actor"].items() if not k.startswith("stop_")}}}
    claim_run_dir(tmp_path, old, spec)
    (tmp_path / "stages").mkdir()
    claim_run_dir(tmp_path, saved, spec)  # no "another config" error


def test_only_rank_0_writes(tmp_path, monkeypatch):
    """Every rank enters the recording (active: code that needs collectives for it runs them
    on all ranks); a rank other than 0 opens no writer and writes nothing."""
    from dapo_bench import dist, telemetry

    monkeypatch.setattr(dist, "_initialised", lambda: False)
    for rank in (1, 0):
        monkeypatch.setenv("RANK", str(rank))
        monkeypatch.setenv("WORLD_SIZE", "2")
        with telemetry.recording("tensorboard", tmp_path / f"r{rank}", name="x") as rec:
            assert telemetry.active() and (rec.writer is None) == (rank != 0)
            telemetry.count_step()
            telemetry.train_step("train", {"loss": 1.0}, tokens=10, seconds=0.5, flops=2.0)
        assert not telemetry.active()
    assert not (tmp_path / "r1").exists()
    tags = _scalars(tmp_path / "r0")
    assert tags["train/loss"] == [(1, 1.0)] and tags["train/tokens_per_s"] == [(1, 20.0)]


def test_a_resumed_run_goes_on_at_the_uninterrupted_runs_steps(tmp_path, monkeypatch):
    """GRPO killed mid-stage (a checkpoint at step 2) and rerun: the event files of the two
    attempts, read back together, hold the uninterrupted run's steps and values."""
    from _resume import kill_and_resume

    from dapo_bench.training import online

    kw = {"task": "arith", "eval_tasks": ("arith",), "eval_limit": 2, "report_to": "tensorboard"}
    sets = ["max_steps=4", "prompts_per_step=4", "samples_per_prompt=2", "max_new_tokens=8",
            "minibatch_size=8"]
    kill_and_resume(monkeypatch, tmp_path, "grpo", kw, sets,
                    [(online, "sample_step", "train")], preset="toy")
    assert len(list((tmp_path / "k" / "tensorboard").glob("events.*"))) == 2  # two attempts
    _same_scalars(_scalars(tmp_path / "whole"), _scalars(tmp_path / "k"))


VALUE_REL = 1e-6  # measured: a resumed run logs bit-identical values (max rel. diff 0)


def _same_scalars(whole: dict, again: dict, after: int = 0) -> None:
    """``again`` holds ``whole``'s steps past step ``after`` exactly and their values within
    ``VALUE_REL`` (wall-clock rates: the steps only). Flat lists of floats only: pytest 9
    refuses ``approx`` over nested (step, value) tuples, and pytest 8 applied no tolerance
    inside them."""
    whole = {t: [(s, v) for s, v in pts if s > after] for t, pts in whole.items()}
    whole = {t: pts for t, pts in whole.items() if pts}
    assert set(again) == set(whole)
    for tag in whole:
        steps = [s for s, _ in whole[tag]]
        assert [s for s, _ in again[tag]] == steps, tag  # the x axis: exact
        if not tag.endswith(("tokens_per_s", "seconds")):  # wall-clock rates: steps only
            values = [v for _, v in again[tag]]
            assert values == pytest.approx([v for _, v in whole[tag]], rel=VALUE_REL), tag


def test_a_run_started_without_report_to_goes_on_at_its_steps(tmp_path, monkeypatch):
    """GRPO killed mid-stage with ``--report-to none``, rerun with tensorboard: the rerun's
    event file starts at the killed attempt's checkpoint (step 2 of 4), not at 0, and holds the
    uninterrupted run's steps and values from there."""
    from _resume import kill_and_resume

    from dapo_bench.training import online

    kw = {"task": "arith", "eval_tasks": ("arith",), "eval_limit": 2, "report_to": "tensorboard"}
    sets = ["max_steps=4", "prompts_per_step=4", "samples_per_prompt=2", "max_new_tokens=8",
            "minibatch_size=8"]
    kill_and_resume(monkeypatch, tmp_path, "grpo", kw, sets,
                    [(online, "sample_step", "train")], preset="toy",
                    killed_kw={"report_to": "none"})
    assert len(list((tmp_path / "k" / "tensorboard").glob("events.*"))) == 1
    again = _scalars(tmp_path / "k")
    start = min(s for pts in again.values() for s, _ in pts)
    assert start > 0
    _same_scalars(_scalars(tmp_path / "whole"), again, after=start - 1)
