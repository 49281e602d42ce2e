"""dapo_bench.rewards: TRL's and verl's reward signatures over the real verifiers; an
infrastructure failure (a worker killed mid-job) is None / a flag, never a 0."""

import functools
import os
import signal
import subprocess
import sys
import threading
from collections import defaultdict

import pytest
from _wait import until
from dapo_bench.verifiers.code import run_tests
from dapo_bench.verifiers.math import verify

from dapo_bench.errors import UserError
from dapo_bench.rewards import (
    code_reward,
    compute_score,
    make_code_reward,
    make_math_reward,
    math_reward,
    shared_verifier,
)

RESPONSES = ["56*2=112\n\\boxed{112}", "The answer is $\\frac{1}{2}$.", "so \\boxed{(x+1)^2}",
             "I think it is 7", "no idea"]
GOLDS = ["112", "0.5", "x^2+2x+1", "8", "3"]
ADD = {"inputs": ["1 2\n", "5 5\n"], "outputs": ["3\n", "10\n"]}
PROGRAMS = ["```python\na, b = map(int, input().split())\nprint(a + b)\n```",
            "```python\nprint(3)\n```"]


def test_importing_rewards_pulls_in_no_torch_or_sympy():
    code = ("import sys, dapo_bench.rewards; "
            "print(sorted(m for m in ('torch', 'sympy', 'trl') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_math_reward_is_the_verifiers_verdict_for_strings_and_conversations():
    expected = [verify(r, g).reward for r, g in zip(RESPONSES, GOLDS)]
    assert expected == [1.0, 1.0, 1.0, 0.0, 0.0]
    assert math_reward(RESPONSES, answer=GOLDS, prompts=["q"] * 5) == expected
    chats = [[{"role": "assistant", "content": r}] for r in RESPONSES]
    assert math_reward(chats, answer=GOLDS) == expected
    parts = [[{"role": "assistant", "content": [{"type": "text", "text": r}]}] for r in RESPONSES]
    assert math_reward(parts, answer=GOLDS) == expected


def test_gold_column_by_factory_or_partial():
    assert make_math_reward(column="solution")(RESPONSES[:2], solution=GOLDS[:2]) == [1.0, 1.0]
    assert functools.partial(math_reward, column="gold")(RESPONSES[:2], gold=GOLDS[:2]) == \
        [1.0, 1.0]
    with pytest.raises(UserError, match="no column 'answer'.*columns: solution"):
        math_reward(RESPONSES[:1], solution=GOLDS[:1], trainer_state=None)


def test_code_reward_runs_the_extracted_program():
    assert code_reward(PROGRAMS, tests=[ADD, ADD]) == [1.0, 0.0]
    logged = {}
    out = code_reward([[{"role": "assistant", "content": PROGRAMS[1]}]], tests=[ADD],
                      log_extra=logged.__setitem__,
                      log_metric=lambda name, v: logged.__setitem__(name, v))
    assert out == [0.0]
    assert logged == {"code_reward_reason": ["wrong_answer"],
                      "dapo_bench/code_reward/infra_errors": 0.0}


def naive_reward_manager(fn, batch, reward_kwargs):
    """What verl's NaiveRewardManager does with a custom reward function: partial over the
    reward kwargs, one keyword call per response, a dict's keys into reward_extra_info."""
    fn = functools.partial(fn, **reward_kwargs)
    rewards, extra = [], defaultdict(list)
    for item in batch:
        score = fn(data_source=item["data_source"], solution_str=item["response"],
                   ground_truth=item["reward_model"]["ground_truth"],
                   extra_info=item.get("extra_info", {}))
        rewards.append(score["score"] if isinstance(score, dict) else score)
        for k, v in (score.items() if isinstance(score, dict) else ()):
            extra[k].append(v)
    return rewards, dict(extra)


def test_verl_compute_score_as_the_reward_manager_calls_it():
    batch = [{"data_source": "openai/gsm8k", "response": r, "reward_model": {"ground_truth": g},
              "extra_info": {"index": i}} for i, (r, g) in enumerate(zip(RESPONSES, GOLDS))]
    batch += [{"data_source": "my_code_set", "response": p, "reward_model": {"ground_truth": ADD}}
              for p in PROGRAMS]
    rewards, extra = naive_reward_manager(compute_score, batch,
                                          {"sources": {"my_code_set": "code"}})
    want = [verify(r, g) for r, g in zip(RESPONSES, GOLDS)]
    want += [run_tests(p.split("\n", 1)[1].rsplit("```", 1)[0], ADD) for p in PROGRAMS]
    assert rewards == [v.reward for v in want]
    assert extra["reason"] == [v.reason for v in want]
    assert extra["acc"] == [v.passed for v in want]
    assert extra["infra_error"] == [False] * len(batch)
    assert set(extra) == {"score", "acc", "pred", "reason", "infra_error"}
    assert extra["pred"][:2] == ["112", "\\frac{1}{2}"]
    with pytest.raises(UserError, match="unknown data_source 'my_code_set'"):
        compute_score("my_code_set", PROGRAMS[0], ADD)


def _state(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return "gone"


def _kill_idle_sympy_worker(v) -> None:
    v.warm()
    (pid,) = v._pool.pids()
    os.kill(pid, signal.SIGKILL)
    until(lambda: _state(pid) in ("Z", "gone"), "the killed sympy worker")


def test_a_killed_sympy_worker_is_no_reward_not_a_zero():
    reward = make_math_reward(workers=1)
    v = shared_verifier("math", workers=1)
    # a trigonometric identity needs sympy (no exact canonical form): it goes to the dead worker
    resp, gold = "so \\boxed{\\frac{\\sin(2x)}{2}}", "\\sin x\\cos x"
    _kill_idle_sympy_worker(v)
    assert reward([resp, RESPONSES[0]], answer=[gold, GOLDS[0]]) == [None, 1.0]
    _kill_idle_sympy_worker(v)
    opts = {"math_options": {"workers": 1}}
    assert compute_score("math", resp, gold, **opts) == {
        "score": 0.0, "acc": False, "pred": "\\frac{\\sin(2x)}{2}", "reason": "verifier_error",
        "infra_error": True}
    assert compute_score("math", resp, gold, **opts)["score"] == 1.0  # recovered


def _uid_processes(uid: int) -> list[int]:
    """Live (not zombie) processes of *uid*."""
    out = []
    for p in os.listdir("/proc"):
        try:
            if p.isdigit() and os.stat(f"/proc/{p}").st_uid == uid and _state(int(p)) != "Z":
                out.append(int(p))
        except FileNotFoundError:
            pass
    return out


def _kill_worker_mid_job(v, call):
    """Run ``call()`` (a busy-looping program) in a thread; SIGKILL the sandbox worker once the
    program's process exists; -> what the call returned."""
    if v._runner is not None:  # an earlier round: its program is gone before this one starts
        until(lambda: not _uid_processes(v._runner.pool._uids[0]), "the last program to go")
    out = {}
    job = threading.Thread(target=lambda: out.setdefault("r", call()))
    job.start()
    until(lambda: v._runner is not None, "the sandbox pool")
    pool = v._runner.pool
    until(lambda: pool._workers[0] is not None and _uid_processes(pool._uids[0]),
          "the candidate program to run")
    os.kill(pool._workers[0].proc.pid, signal.SIGKILL)
    job.join(60)
    return out["r"]


def test_a_sandbox_worker_killed_mid_job_is_no_reward_not_a_zero():
    loop = "```python\nwhile True:\n    pass\n```"
    opts = {"workers": 1, "timeout": 30}
    v = shared_verifier("code", **opts)
    reward = make_code_reward(**opts)
    assert _kill_worker_mid_job(v, lambda: reward([loop], tests=[ADD])) == [None]
    flagged = _kill_worker_mid_job(v, lambda: compute_score("code", loop, ADD, code_options=opts))
    assert flagged == {"score": 0.0, "acc": False, "pred": "", "reason": "sandbox_error",
                       "infra_error": True}
    assert compute_score("code", PROGRAMS[0], ADD, code_options=opts)["score"] == 1.0  # recovered
