"""An infrastructure error (``Verdict.infra_error``: the sandbox or a verifier worker died) is no
reward: the rollout leaves its group's training data (no loss, advantage, MC label or pair sees
it), its tokens stay charged, the artifact row keeps it and results.json counts it."""

import json

import torch
from _tiny import TINY
from dapo_bench.verifiers.base import Verdict

from dapo_bench.generation.base import SamplingParams
from dapo_bench.generation.hf import HFGenerator
from dapo_bench.methods.dapo.critic import critic_examples
from dapo_bench.methods.dapo.rows import McRow, State
from dapo_bench.models import save_policy
from dapo_bench.tasks.task import Task
from dapo_bench.toy.model import tiny_llama
from dapo_bench.toy.tokenizer import build_char_tokenizer
from dapo_bench.training.online import groups_to_batch
from dapo_bench.training.rollouts import Request, group_from_row, infra_errors, sample_groups


def every_other_crashes(texts, ids, finished):
    return [Verdict(False, "sandbox_error") if i % 2 else Verdict(True, "ok")
            for i in range(len(texts))]


def test_an_infra_error_leaves_the_group_and_is_kept_apart(tmp_path):
    torch.set_num_threads(1)
    tok = build_char_tokenizer()
    save_policy(tiny_llama(tok, seed=0, d=32, layers=2, heads=2, ffn=64), tok, tmp_path / "m")
    gen = HFGenerator(str(tmp_path / "m"))
    reqs = [Request(f"p{i}", f"p{i}", f"{i}+{i}\n") for i in range(3)]
    groups = sample_groups(gen, reqs, 4, every_other_crashes,
                           params=SamplingParams(max_new_tokens=8, seed=1), chunk_size=3)
    assert [len(g.rollouts) for g in groups] == [2, 2, 2] and infra_errors(groups) == 6
    assert all(g.rewards == [1.0, 1.0] for g in groups)  # no 0 for the crashed ones
    assert sum(g.tokens for g in groups) == gen.last_prompt_tokens + sum(
        r.n_tokens for g in groups for r in g.rollouts + g.infra)  # still charged
    row = groups[0].to_row()
    assert [x["reason"] for x in row["infra_errors"]] == ["sandbox_error"] * 2
    back = group_from_row(json.loads(json.dumps(row)))
    assert len(back.rollouts) == 2 and len(back.infra) == 2
    rb = groups_to_batch(tok, {r.key: tok.encode(r.context) for r in reqs}, groups)
    assert len(rb.rewards) == 6 and rb.infra_errors == 6 and set(rb.rewards) == {1.0}
    # a DAPO state whose every completion crashed has no MC label, and no critic example
    g = groups[0]
    g.infra, g.rollouts = g.infra + g.rollouts, []
    mc = McRow.of(State("s", "p0", "", (1, 2), "", (), 0), g)
    assert mc.value is None and len(mc.infra_errors) == 4
    row = json.loads(json.dumps(mc.to_row()))  # as mc.jsonl holds it, and read back
    assert row["value"] is None and [x["reason"] for x in row["infra_errors"]] == [
        "sandbox_error"] * 2 + ["ok"] * 2
    assert McRow.from_row(row) == mc and critic_examples([mc], {"s": [1, 2]}, None) == []
    gen.close()


def test_a_run_counts_its_infra_errors(monkeypatch, tmp_path):
    from dapo_bench.run import RunOptions, run_training

    real = Task.score

    def flaky(self, verifier, texts, problems, finished=None):  # every 3rd verdict crashes
        out = real(self, verifier, texts, problems, finished)
        return [Verdict(False, "verifier_error") if i % 3 == 2 else v for i, v in enumerate(out)]

    monkeypatch.setattr(Task, "score", flaky)
    torch.set_num_threads(1)
    for method in ("grpo", "rft"):
        res = run_training(method, RunOptions(
            task="arith:sft", eval_limit=2, control=False, out=str(tmp_path), run_id=method,
            quiet=True), preset="toy", overrides=TINY[method])
        stage = "train" if method == "grpo" else "rollouts"
        n = res["counts"][stage]["infra_errors"]
        assert n > 0, res["counts"]
    rows = [json.loads(x) for x in (tmp_path / "rft" / "rollouts.jsonl").read_text().splitlines()]
    assert sum(len(r.get("infra_errors", ())) for r in rows) == n
    assert all(x["reward"] in (0.0, 1.0) for r in rows for x in r["responses"])
