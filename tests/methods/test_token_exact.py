"""Token ids are the truth, one prompt tokenised once, nothing truncated silently: DAPO and the
baselines on a Llama-3-style byte-level BPE tokenizer (``conftest.build_bpe_tokenizer``, where
``.\\n\\n`` is one token), not the char-level toy one that hides these bugs."""

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from _data import DATA
from conftest import build_bpe_tokenizer

from dapo_bench.io import read_json, read_jsonl
from dapo_bench.models import encode_prompt, load_tokenizer, resolve_device
from dapo_bench.training.rollouts import StepSplitter

TINY_DAPO = ["n_problems=4", "n_samples=4", "n_rollouts=2", "mc_samples=3", "max_new_tokens=24",
             "min_spread=0", "gen_chunk=4", "critic.epochs=1", "actor.epochs=1",
             "advantage=critic"]


@pytest.fixture(scope="module")
def tok():
    return build_bpe_tokenizer()


def test_steps_end_with_the_token_that_holds_the_newline(tok):
    ids = tok("Let x = 3.\n\nThen 2x = 6.\n\nSo", add_special_tokens=False)["input_ids"]
    steps = StepSplitter(tok).split(ids)
    assert [tok.decode(s) for s in steps] == ["Let x = 3.\n\n", "Then 2x = 6.\n\n", "So"]
    assert [i for s in steps for i in s] == ids  # the steps are the ids, cut, nothing lost
    assert tok.decode(steps[0][-1:]) == ".\n\n"  # one token spans the step boundary
    # the old way, steps cut in the text and each re-encoded, does not give the sampled ids back
    from dapo_bench.training.rollouts import split_steps

    text_steps = split_steps(tok.decode(ids))
    assert text_steps[:2] == ["Let x = 3.\n", "\n"]
    reencoded = [i for t in text_steps for i in tok(t, add_special_tokens=False)["input_ids"]]
    assert reencoded != ids


def test_one_prompt_one_tokenisation_and_one_bos(tok, bpe_dir):
    from dapo_bench.generation.base import encode_prompts
    from dapo_bench.training.batches import encode_pairs

    raw = "12+3\n"
    ids = encode_prompt(tok, raw)
    assert ids[0] == tok.bos_token_id and ids.count(tok.bos_token_id) == 1
    chat = tok.apply_chat_template([{"role": "user", "content": raw}], tokenize=False,
                                   add_generation_prompt=True)
    assert chat.startswith(tok.bos_token)
    assert encode_prompt(tok, chat).count(tok.bos_token_id) == 1  # the template wrote it
    # sampling (the generator), training (pairs) and eval see the same prompt ids
    gen_ids, _ = encode_prompts(tok, [raw, chat])
    assert gen_ids == [ids, encode_prompt(tok, chat)]
    batch = encode_pairs(tok, [raw], ["15"], add_eos=True)
    assert batch.input_ids[0, : len(ids)].tolist() == ids


def test_every_method_renders_prompts_with_the_chat_template(bpe_dir):
    from dapo_bench.methods.data import load_train_problems
    from dapo_bench.run import RunOptions

    if not DATA.is_dir():
        pytest.skip(f"{DATA} absent (benchmark files)")
    tok = load_tokenizer(bpe_dir)
    ctx = SimpleNamespace(opts=RunOptions(model=bpe_dir, task="gsm8k_train", data_dir=str(DATA)),
                          tokenizer=tok, log=print)
    probs = load_train_problems(ctx, limit=3)
    assert all(p.prompt.startswith(tok.bos_token + "<|system|>") for p in probs)
    assert all(list(p.prompt_ids) == encode_prompt(tok, p.prompt) for p in probs)
    assert "The answer is \\boxed{72}." in probs[0].solution  # gsm8k's '#### 72', as SFT's target


def test_training_on_an_eval_task_or_an_overlapping_file_is_refused(tmp_path):
    from dapo_bench.errors import UserError
    from dapo_bench.methods.data import check_training_data, train_split
    from dapo_bench.run import RunOptions

    with pytest.raises(UserError, match="gsm8k is an eval task"):
        train_split("gsm8k")
    with pytest.raises(UserError, match="unknown split 'nosuch'"):
        train_split("arith:nosuch")
    assert train_split("arith") == "rl_train" and train_split("gsm8k_train") is None
    if not DATA.is_dir():
        pytest.skip(f"{DATA} absent (benchmark files)")
    info = check_training_data(RunOptions(task="gsm8k_train", eval_tasks=("gsm8k",),
                                          data_dir=str(DATA)))
    assert info["n_problems"] == 7473 and info["checked_against"] == {"gsm8k": 1319}
    # a training file that holds one test question (whitespace and case aside) is refused
    (tmp_path / "math").mkdir()
    test_q = read_jsonl(DATA / "math" / "gsm8k.jsonl")[5]
    rows = read_jsonl(DATA / "math" / "gsm8k_train.jsonl")[:20]
    rows.append({"question": "  " + test_q["question"].upper(), "answer": test_q["answer"]})
    for name in ("gsm8k.jsonl", "gsm8k_train.jsonl"):
        src = [test_q] if name == "gsm8k.jsonl" else rows
        (tmp_path / "math" / name).write_text("".join(json.dumps(r) + "\n" for r in src))
    with pytest.raises(UserError, match="1 of its problems are in eval task gsm8k"):
        check_training_data(RunOptions(task="gsm8k_train", eval_tasks=("gsm8k",),
                                       data_dir=str(tmp_path)))


def test_math_train_reads_a_local_math_file(tmp_path):
    from dapo_bench.tasks import load_task

    (tmp_path / "math").mkdir()
    rows = [{"problem": "What is $1+1$?", "level": "Level 1", "type": "Algebra",
             "solution": "We add: $1+1=\\boxed{2}$."}]
    (tmp_path / "math" / "math_train.jsonl").write_text(json.dumps(rows[0]) + "\n")
    task = load_task("math_train", data_dir=tmp_path)
    (p,) = task.problems
    assert p.gold == "2" and p.solution == rows[0]["solution"]
    assert p.subjects == {"type": "Algebra", "level": "Level 1"}


def test_dapo_on_bpe_scores_exactly_the_sampled_ids(bpe_dir, tmp_path):
    """End to end: every state and action scored is a slice of what was generated; re-encoding
    would have changed some of them; iteration 2 samples with other seeds; the diagnostic pass is
    not charged; truncations are counted."""
    from dapo_bench.methods.dapo.audit import audit_run
    from dapo_bench.run import RunOptions, run_training

    opts = RunOptions(model=bpe_dir, eval_tasks=("arith",), eval_limit=4, control=False,
                      out=str(tmp_path), run_id="bpe", quiet=True)
    res = run_training("dapo", opts, overrides=[*TINY_DAPO, "iterations=2", "actor.max_length=40"])
    run = tmp_path / "bpe"
    rep = audit_run(run, load_tokenizer(bpe_dir))
    it1 = rep["iterations"]["it1"]
    assert it1["actions"] > 0 and rep["exact_share"] == 1.0
    assert it1["reencoded_differs"] > 0  # the bug this guards against is live on this tokenizer
    # iteration 2 (a new pi_ref) does not reuse iteration 1's sampling seeds
    r1, r2 = (read_jsonl(run / f"it{k}" / "rollouts.jsonl")[0] for k in (1, 2))
    assert r1["problem_id"] != r2["problem_id"] or r1["responses"] != r2["responses"]
    # the reference pass is charged, the diagnostic pass after training is not
    ref = read_json(run / "it1" / "ref_logprobs.json")
    assert res["ledger"]["stages"]["it1.actor"]["n_inf"] == ref["tokens"]
    assert res["iterations"][0]["actor"]["diagnostic_tokens_uncharged"] > 0
    # actor.max_length=40 cuts long states: counted, never silent
    assert res["counts"]["it1.actor"]["context_cut"] > 0
    assert res["train_data"]["split"] == "rl_train"
    assert res["model"]["name"] == "actor" and res["evals"]["final"]["arith"]["n"] == 4


def test_a_stale_reference_cache_is_recomputed(bpe_dir, tmp_path):
    from dapo_bench.run import RunOptions, run_training

    opts = RunOptions(model=bpe_dir, eval_tasks=("arith",), eval_limit=2, control=False,
                      out=str(tmp_path), run_id="r", quiet=True)
    run_training("dapo", opts, overrides=TINY_DAPO)
    d = tmp_path / "r" / "it1"
    first = read_json(d / "ref_logprobs.json")
    # another estimator changes the advantages: the cached log-probs must not be reused
    for stage in ("it1.advantages", "it1.actor"):
        (tmp_path / "r" / "stages" / f"{stage}.json").unlink()
    cfg = read_json(tmp_path / "r" / "config.json")
    cfg["config"]["advantage"] = "mc"
    (tmp_path / "r" / "config.json").write_text(json.dumps(cfg))
    run_training("dapo", opts, overrides=[*TINY_DAPO[:-1], "advantage=mc"])
    second = read_json(d / "ref_logprobs.json")
    assert second["belongs_to"]["advantages"] != first["belongs_to"]["advantages"]
    adv = read_jsonl(d / "advantages.jsonl")
    assert second["keys"] == [s["key"] for s in adv]


def test_auto_device_is_the_gpu_when_there_is_one(monkeypatch):
    import torch

    assert resolve_device("auto") == ("cuda" if torch.cuda.is_available() else "cpu")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert resolve_device("auto") == "cuda" and resolve_device("cpu") == "cpu"


def test_audit_cli_reports_and_fails_on_a_doctored_action(bpe_dir, tmp_path):
    from typer.testing import CliRunner

    from dapo_bench.cli import app
    from dapo_bench.run import RunOptions, run_training

    opts = RunOptions(model=bpe_dir, eval_tasks=("arith",), eval_limit=2, control=False,
                      out=str(tmp_path), run_id="a", quiet=True)
    run_training("dapo", opts, overrides=TINY_DAPO)
    run = tmp_path / "a"
    ok = CliRunner().invoke(app, ["audit", str(run), "--json"])
    assert ok.exit_code == 0, ok.output
    assert json.loads(ok.stdout)["exact_share"] == 1.0
    path = Path(run / "it1" / "advantages.jsonl")
    rows = read_jsonl(path)
    rows[0]["actions"][0]["ids"] = rows[0]["actions"][0]["ids"][:-1] + [3]  # not what was sampled
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    bad = CliRunner().invoke(app, ["audit", str(run)])
    assert bad.exit_code == 1 and "exact:" in bad.stdout


def test_grpo_ppo_batches_hold_the_generated_ids(bpe_dir):
    from dapo_bench.generation.base import SamplingParams
    from dapo_bench.generation.hf import HFGenerator
    from dapo_bench.training.online import groups_to_batch
    from dapo_bench.training.rollouts import Request, sample_groups

    gen = HFGenerator(bpe_dir, batch_size=16)
    tok = gen.tokenizer
    prompts = {f"p{i}": encode_prompt(tok, f"{i}+{i}\n") for i in range(3)}
    reqs = [Request(k, k, v) for k, v in prompts.items()]
    groups = sample_groups(gen, reqs, 2, lambda texts, ids, finished: [0.5] * len(texts),
                           params=SamplingParams(temperature=1.0, max_new_tokens=12, seed=3),
                           chunk_size=3)
    rb = groups_to_batch(tok, prompts, groups, max_length=64)
    rows = [(g.key, r) for g in groups for r in g.rollouts]
    for i, (key, r) in enumerate(rows):
        n = int(rb.batch.attention_mask[i].sum())
        got = rb.batch.input_ids[i, :n].tolist()
        assert got == prompts[key] + r.token_ids  # no re-encoding, no appended EOS
        mask = rb.batch.response_mask[i, :n].tolist()
        assert mask == [0] * len(prompts[key]) + [1] * len(r.token_ids)
