"""The arith task data, the character tokenizer and the shipped reference policy."""

from __future__ import annotations

import re

import pytest

from dapo_bench.arith import (
    MAX_VALUE,
    PROMPT_TEMPLATE,
    SPLITS,
    check_solution,
    extract_boxed,
    is_correct,
    make_split,
)
from dapo_bench.errors import UserError
from dapo_bench.toy.tokenizer import build_char_tokenizer

STEP = re.compile(r"^(\d+)([+\-*])(\d+)=(\d+)$")


@pytest.fixture(scope="module")
def splits():
    return {s: make_split(s) for s in SPLITS}


def test_split_sizes_and_keys(splits):
    assert len(splits["test"]) >= 2000
    assert len(splits["sft"]) == 1500  # the fixed, limited set the reference policy saw
    assert len(splits["rl_train"]) >= 10000
    assert len(splits["test_ood"]) >= 1000
    for rows in splits.values():
        assert set(rows[0]) == {"id", "question", "answer", "solution", "n_steps"}
        assert len({r["id"] for r in rows}) == len(rows)
        assert len({r["question"] for r in rows}) == len(rows)


def test_deterministic_and_prefix_stable(splits):
    assert make_split("test", 300) == splits["test"][:300]
    assert make_split("sft") == splits["sft"]
    assert make_split("rl_train", 0) == []


def test_splits_are_disjoint(splits):
    seen: dict[str, str] = {}
    for name, rows in splits.items():
        for r in rows:
            assert r["question"] not in seen, (r["question"], name, seen.get(r["question"]))
            seen[r["question"]] = name


def test_step_distributions(splits):
    for name in ("rl_train", "test"):
        assert {r["n_steps"] for r in splits[name]} == {2, 3, 4}
    assert {r["n_steps"] for r in splits["test_ood"]} == {5}
    sft_steps = [r["n_steps"] for r in splits["sft"]]
    assert set(sft_steps) == {2, 3, 4, 5}
    assert 0 < sft_steps.count(5) / len(sft_steps) < 0.1  # longer chains seen rarely


def test_every_solution_step_is_right(splits):
    for rows in splits.values():
        for r in rows:
            lines = r["solution"].split("\n")
            assert len(lines) == r["n_steps"] + 1
            assert lines[-1] == f"\\boxed{{{r['answer']}}}"
            # The question is the left-nested chain of the steps and evaluates to the answer.
            assert eval(r["question"]) == int(r["answer"])  # digits, + - * and parens only
            cur = None
            for line in lines[:-1]:
                a, op, b, c = STEP.match(line).groups()
                a, b, c = int(a), int(b), int(c)
                assert cur is None or a == cur
                assert c == (a + b if op == "+" else a - b if op == "-" else a * b)
                assert 1 <= b <= MAX_VALUE and 0 <= c <= MAX_VALUE
                if op == "*":
                    assert 2 <= b <= 9
                cur = c
            assert check_solution(r["question"], r["solution"])


def test_check_solution_rejects_wrong_steps():
    r = make_split("test", 1)[0]
    lines = r["solution"].split("\n")
    a, op, b, c = STEP.match(lines[0]).groups()
    lines[0] = f"{a}{op}{b}={int(c) + 1}"
    assert not check_solution(r["question"], "\n".join(lines))
    assert not check_solution(r["question"], r["solution"].rsplit("\n", 1)[0])
    assert not check_solution("1+", "1+1=2\n\\boxed{2}")


def test_answer_extraction():
    assert extract_boxed("1+2=3\n\\boxed{3}") == "3"
    assert extract_boxed("\\boxed{1} then \\boxed{ 42 }") == "42"
    assert extract_boxed("no box") is None
    assert is_correct("3+4=7\n\\boxed{7}", "7") and not is_correct("\\boxed{8}", "7")


def test_unknown_split():
    with pytest.raises(UserError, match="unknown arith split"):
        make_split("validation")


def test_char_tokenizer_round_trip(tmp_path):
    from transformers import AutoTokenizer

    tok = build_char_tokenizer()
    text = PROMPT_TEMPLATE.format(question="((56*2)-93)+76") + "56*2=112\n\\boxed{95} a\tz~"
    ids = tok(text)["input_ids"]
    assert len(ids) == len(text)  # one token per character, no BOS/EOS added
    assert tok.decode(ids) == text
    tok.save_pretrained(tmp_path)
    again = AutoTokenizer.from_pretrained(tmp_path)
    assert again(text)["input_ids"] == ids and again.decode(ids) == text
    assert (again.pad_token_id, again.eos_token, again.padding_side) == (0, "<eos>", "left")
    assert tok.decode(tok("é")["input_ids"]) == "<unk>"
    assert tok.decode(ids + [tok.eos_token_id], skip_special_tokens=True) == text


def test_shipped_reference_policy():
    """The packaged arith-ref loads offline, is the tiny untied Llama, and solves most of arith
    but not all (a plateau well below 100%: build_info.json holds the continuation check)."""
    import json
    from pathlib import Path

    import torch

    from dapo_bench.generation.base import SamplingParams
    from dapo_bench.generation.hf import HFGenerator
    from dapo_bench.toy import default_model_path

    torch.set_num_threads(1)
    path = default_model_path()
    info = json.loads((Path(path) / "build_info.json").read_text())
    gen = HFGenerator(path, batch_size=64)
    assert not gen.model.config.tie_word_embeddings
    assert gen.n_params == info["n_params"] < 1_000_000
    rows = make_split("test", 64)
    outs = gen.generate(
        [PROMPT_TEMPLATE.format(question=r["question"]) for r in rows],
        SamplingParams(max_new_tokens=64),
    )
    acc = sum(is_correct(o[0].text, r["answer"]) for o, r in zip(outs, rows)) / len(rows)
    # Recorded on all 2,000 test problems at build time; 64 problems: within ~3.5 std errors.
    assert abs(acc - info["final"]["test"]["accuracy"]) < 0.22
    assert 0.75 < acc < 1.0
    assert info["continuation"]["in_paper_regime"] and info["arch"]["d"] == 32


def test_dev_split_is_carved_from_the_rl_train_stream(splits):
    from pathlib import Path

    from dapo_bench.arith import _make_split
    from dapo_bench.tasks.spec import parse_spec

    dev = splits["dev"]
    assert len(dev) == 2000 and dev[0]["id"] == "arith-dev-00000"
    # the next problems of rl_train's own stream: same generator, after its 20,000
    stream = _make_split("rl_train", 20000 + 2000)
    assert [r["question"] for r in dev] == [r["question"] for r in stream[20000:]]
    assert {r["n_steps"] for r in dev} == {2, 3, 4}
    assert make_split("dev", 10) == dev[:10]
    with pytest.raises(UserError, match="next 2000 of its stream are the dev split"):
        make_split("rl_train", 20001)
    with pytest.raises(UserError, match="'dev' has 2000 problems"):
        make_split("dev", 2001)
    spec = parse_spec(Path(__file__).resolve().parents[2] / "tasks" / "arith_dev.yaml")
    assert spec.name == "arith_dev" and spec.source.split == "dev"
