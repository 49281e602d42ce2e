"""Canaries are watched, never learned from: a run with ``--canaries`` trains exactly what the
same run without them trains (the same artifacts, ledger, history and final weights), and only
adds ``canaries.jsonl`` and results.json's ``canaries`` block. A canary in any loss, label or
pair would change the weights (GRPO/PPO: a row in the batch; DPO/RFT: a pair; DAPO: a state,
an MC label, an action), so the weight comparison is the assertion that catches a leak.

Also: canaries are impossible for a right-reasoning answer under the real verifiers (math and
code), the block's counts, and the options' checks.
"""

import json

import pytest
import torch
from _tiny import TINY
from dapo_bench.verifiers.code.kind import impossible_tests
from dapo_bench.verifiers.math.probes import decoy_gold

from dapo_bench.errors import UserError
from dapo_bench.methods.canaries import make_canaries
from dapo_bench.run import RunOptions, run_training
from dapo_bench.tasks import load_task

ARTIFACTS = {"rft": ["rollouts.jsonl"], "dpo": ["rollouts.jsonl"],
             "dapo": ["it1/rollouts.jsonl", "it1/states.jsonl", "it1/mc.jsonl",
                      "it1/advantages.jsonl"], "grpo": [], "ppo": []}
FINAL = {"dapo": "it1/actor"}


def _run(tmp_path, method: str, frac: float) -> dict:
    opts = RunOptions(task="arith:sft", eval_limit=2, control=False, out=str(tmp_path),
                      run_id=f"{method}-{frac}", quiet=True, canaries=frac)
    return run_training(method, opts, preset="toy", overrides=TINY[method])


def _weights(path) -> dict:
    from safetensors.torch import load_file

    return {k: v for f in sorted(path.glob("*.safetensors")) for k, v in load_file(f).items()}


def _timeless(rows: list[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if k != "seconds"} for r in rows]


@pytest.mark.parametrize("method", sorted(ARTIFACTS))
def test_a_canary_run_differs_only_by_its_canaries(method, tmp_path):
    torch.set_num_threads(1)
    plain, watched = _run(tmp_path, method, 0.0), _run(tmp_path, method, 0.5)
    a, b = tmp_path / f"{method}-0.0", tmp_path / f"{method}-0.5"
    for name in ARTIFACTS[method]:
        assert (a / name).read_bytes() == (b / name).read_bytes(), name
    wa = _weights(a / FINAL.get(method, "policy"))
    wb = _weights(b / FINAL.get(method, "policy"))
    assert wa and wa.keys() == wb.keys()
    for k in wa:
        assert torch.equal(wa[k], wb[k]), f"{method}: weight {k} moved: a canary was trained on"
    assert plain["ledger"] == watched["ledger"]
    assert _timeless(plain["history"]) == _timeless(watched["history"])
    assert "canaries" not in plain and not (a / "canaries.jsonl").exists()
    block = watched["canaries"]
    rows = [json.loads(x) for x in (b / "canaries.jsonl").read_text().splitlines()]
    assert rows and all(r["problem_id"].startswith("canary-") for r in rows)
    assert block["n"] == sum(len(r["responses"]) for r in rows) > 0
    assert block["rewarded"] == 0 and block["cheat_rate"] == 0.0 and block["examples"] == []
    # canaries never reach a training artifact
    for name in ARTIFACTS[method]:
        assert "canary-" not in (b / name).read_text()


def test_math_canaries_are_impossible_for_the_right_answer():
    task = load_task("arith", split="sft", limit=50)
    pairs = make_canaries(task, 20, seed=3)
    assert [c.id for c, _ in pairs] == [f"canary-{k}" for k in range(20)]
    assert pairs == make_canaries(task, 20, seed=3)  # deterministic from the seed
    assert [c.gold for c, _ in pairs] != [c.gold for c, _ in make_canaries(task, 20, seed=4)]
    canaries, sources = [c for c, _ in pairs], [s for _, s in pairs]
    with task.verifier() as v:
        # the source's worked solution (right reasoning) and its boxed answer: 0 on the canary
        right = task.score(v, [s.solution for s in sources], canaries)
        boxed = task.score(v, [f"\\boxed{{{s.gold}}}" for s in sources], canaries)
        # but the verifier does judge it: its own gold passes
        own = task.score(v, [f"\\boxed{{{c.gold}}}" for c in canaries], canaries)
    assert not any(x.passed for x in right + boxed)
    assert all(x.passed for x in own)


def test_decoy_gold_is_an_exact_fraction_no_short_answer_rounds_to():
    import random

    from dapo_bench.verifiers.math import verify

    g = decoy_gold(random.Random(0))
    assert g.startswith("\\frac{") and g.endswith("{1000003}")
    num = int(g[6:g.index("}")])
    assert num % 1000003
    close = f"{num / 1000003:.6f}"  # a short decimal of the same value is not the answer
    assert not verify(f"\\boxed{{{close}}}", g).passed
    assert not verify(f"\\boxed{{{round(num / 1000003)}}}", g).passed


CODE_GOLDS = {  # tests of each form -> a right program for them
    "stdio": ({"inputs": ["2\n", "3\n"], "outputs": ["4\n", "6\n"]},
              "print(2 * int(input()))"),
    "call": ({"inputs": [[2], [3]], "outputs": [4, 6], "fn_name": "f"},
             "def f(x):\n    return 2 * x\n"),
    "mbpp": ({"test_list": ["assert f(2) == 4", "assert f(3) == 6"]},
             "def f(x):\n    return 2 * x\n"),
    "humaneval": ({"test": "def check(candidate):\n    assert candidate(2) == 4\n",
                   "entry_point": "f"}, "def f(x):\n    return 2 * x\n"),
}


def test_code_canaries_contradict_their_tests():
    from dapo_bench.verifiers.code import run_tests

    for form, (tests, right) in CODE_GOLDS.items():
        assert run_tests(right, tests).passed, form
        assert not run_tests(right, impossible_tests(tests)).passed, form
        assert not run_tests("def f(x):\n    return x\n", impossible_tests(tests)).passed


def test_bad_canary_options_are_user_errors():
    with pytest.raises(UserError, match="--canaries"):
        RunOptions(canaries=1.5)
    with pytest.raises(UserError, match="--stop-on-cheat"):
        RunOptions(stop_on_cheat=2)
