"""No silent zero in the reward callables, and one completion rule everywhere.

A user's mistake (a gold that is empty, NaN, infinite or missing, a label of the wrong kind, a
chat with no assistant turn, a bare string where a column of golds belongs) is a UserError that
names the column and item, from TRL's reward functions and from verl's ``compute_score`` alike;
only the model's own failure scores 0. A completion becomes the verifier's input by the
verifier's one rule: eval (``Task.prediction``), the TRL/verl callables and the server give the
same program for a HumanEval completion that holds only the function's body. TRL's completion
ids grade a cut-off completion as cut off; verl's BatchRewardManager signature is served; the
shared code verifier is safe under concurrent callers (verl's reward loop scores items in
threads).
"""

import math
import threading

import pytest
from dapo_bench.verifiers.base import VERIFIERS, completion_text, verifier_for_label
from dapo_bench.verifiers.code import run_tests

from dapo_bench.errors import UserError
from dapo_bench.rewards import code_reward, compute_score, make_math_reward, math_reward

ADD = {"inputs": ["1 2\n", "5 5\n"], "outputs": ["3\n", "10\n"]}
PROMPT = "import math\n\n\ndef f(x):\n    \"\"\"Twice x.\"\"\"\n"
HUMANEVAL = {"prompt": PROMPT, "entry_point": "f",
             "test": "def check(candidate):\n    assert candidate(2) == 4\n"}


@pytest.mark.parametrize(("gold", "words"), [
    ("", "answer[1] is empty"),
    ("  \n", "answer[1] is empty"),
    (float("nan"), "answer[1] is not a finite number (nan)"),
    (float("inf"), "answer[1] is not a finite number (inf)"),  # JSON's 1e999
    (None, "answer[1] is missing (null)"),
    ("NaN", "answer[1] is 'NaN': a missing value"),
    ([], "answer[1] is an empty list"),
    (["2", ""], "answer[1][1] is empty"),
    ({"inputs": []}, "answer[1] must be a string, a number or a list of them, got dict"),
    (True, "answer[1] must be a string, a number or a list of them, got bool"),
])
def test_a_math_gold_that_is_no_gold_is_an_error_not_a_zero(gold, words):
    with pytest.raises(UserError, match=words.replace("(", r"\(").replace(")", r"\)")
                       .replace("[", r"\[").replace("]", r"\]")):
        math_reward(["\\boxed{2}", "\\boxed{2}"], answer=["2", gold])
    with pytest.raises(UserError, match="ground_truth"):
        compute_score("openai/gsm8k", "\\boxed{2}", gold)


def test_a_bare_string_for_a_column_is_refused_not_read_letter_by_letter():
    with pytest.raises(UserError, match=r'answer: expected one value per completion \(a list\), '
                                        r'got str "22"'):
        math_reward(["\\boxed{2}", "\\boxed{2}"], answer="22")
    with pytest.raises(UserError, match="completions: expected one value per completion"):
        math_reward("\\boxed{2}", answer=["2"])
    with pytest.raises(UserError, match="answer: 1 values for 2 completions"):
        math_reward(["1", "2"], answer=["1"])


def test_code_tests_that_do_not_parse_and_wrong_kinds_are_errors():
    with pytest.raises(UserError, match=r"tests\[0\]: empty test list"):
        code_reward(["print(1)"], tests=[[]])
    with pytest.raises(UserError, match=r"tests\[0\] is missing \(null\)"):
        code_reward(["print(1)"], tests=[None])
    with pytest.raises(UserError, match=r"tests\[0\]: expected an object or a list, got int"):
        code_reward(["print(1)"], tests=["2"])  # a math gold given to the code reward
    with pytest.raises(UserError, match=r"tests\[0\]: the test code \(prompt\) does not "
                                        r"compile: IndentationError"):  # else: bad_test, a 0
        code_reward(["    return 1"], tests=[dict(HUMANEVAL, prompt="def f(x):\n")])
    with pytest.raises(UserError, match="unknown data_source 'my_set'"):
        compute_score("my_set", "print(3)", ADD)
    with pytest.raises(UserError, match="mapped to 'chess', not a verifier"):
        compute_score("my_set", "print(3)", ADD, sources={"my_set": "chess"})


def test_a_chat_with_no_assistant_turn_is_an_error():
    with pytest.raises(UserError, match=r"completions\[0\]: a chat with no assistant message "
                                        r"\(roles: system, user\)"):
        math_reward([[{"role": "system", "content": "Be brief."},
                      {"role": "user", "content": "1+1?"}]], answer=["2"])
    assert completion_text([{"role": "user", "content": "1+1?"},
                            {"role": "assistant", "content": "\\boxed{2}"}]) == "\\boxed{2}"
    assert math_reward([[{"role": "assistant", "content": ""}]], answer=["2"]) == [0.0]  # the
    # model's own empty answer is a 0


def test_the_model_failing_is_still_a_zero():
    assert math_reward(["I give up.", "\\boxed{3}", "\\boxed{2}"], answer=["2", "2", 2.0]) == \
        [0.0, 0.0, 1.0]
    assert code_reward(["```python\nprint(3)\n```"], tests=[ADD]) == [0.0]


def test_one_completion_rule_for_a_body_only_function_everywhere():
    """Eval's Task, the callables and the server's input_from take the same program."""
    from dapo_bench.serve.app import strip_prompt
    from dapo_bench.tasks.spec import TASKS
    from dapo_bench.tasks.task import Problem, Task

    body = "    return 2 * x\n"
    cls = VERIFIERS.get("code")
    task = Task(TASKS.get("humaneval"), [], "test")
    problem = Problem("0", "q", HUMANEVAL, extra={"prompt": PROMPT, "entry_point": "f"})
    program = task.prediction(body, problem)
    assert program == PROMPT + body
    assert cls.input_from(strip_prompt("Q" + body + "<|im_end|>", "Q"), HUMANEVAL) == program
    assert run_tests(program, HUMANEVAL).passed
    whole = "```python\ndef f(x):\n    return math.floor(2 * x)\n```"  # needs the prompt's import
    assert task.prediction(whole, problem) == cls.input_from(whole, HUMANEVAL) == \
        "import math\ndef f(x):\n    return math.floor(2 * x)"
    assert code_reward([body, whole], tests=[HUMANEVAL, HUMANEVAL]) == [1.0, 1.0]
    assert compute_score("humaneval", body, HUMANEVAL)["score"] == 1.0


def test_a_label_routes_by_its_shape():
    assert [verifier_for_label(x) for x in ("2", 2, 0.5, ["1", "2"], "[0, 1)", "{1, 2}", "")] == \
        ["math"] * 7
    import json

    assert [verifier_for_label(x) for x in (ADD, json.dumps(ADD), str(ADD), [{"input": "1",
            "output": "2"}], json.dumps([{"input": "1", "output": "2"}]))] == ["code"] * 5


def test_trl_completion_ids_grade_a_cut_off_completion_as_cut_off():
    """Without a stop token at its end a completion was cut off at max_completion_length (TRL's
    own rule): an unmarked last number is then no answer."""
    reward = make_math_reward(stop_token_ids=[0])
    texts = ["1 + 1 = 2", "1 + 1 = 2", "so \\boxed{2}"]
    logged = {}
    out = reward(texts, answer=["2"] * 3, completion_ids=[[5, 6, 0], [5, 6, 7], [5, 6, 7]],
                 log_extra=logged.__setitem__)
    assert out == [1.0, 0.0, 1.0]
    assert logged["math_reward_reason"] == ["ok", "truncated", "ok"]
    assert math_reward(texts, answer=["2"] * 3) == [1.0, 1.0, 1.0]  # no stop ids: all finished
    with pytest.raises(UserError, match="stop_token_ids needs TRL's completion_ids"):
        reward(texts, answer=["2"] * 3)


def test_verls_batch_signature_scores_a_mixed_batch():
    out = compute_score(data_sources=["openai/gsm8k", "code", "math"],
                        solution_strs=["#### 72", "```python\nprint(3)\n```", "\\boxed{1/2}"],
                        ground_truths=["72", ADD, 0.5], extra_infos=[{}, {}, {}])
    assert [(o["score"], o["reason"]) for o in out] == [(1.0, "ok"), (0.0, "wrong_answer"),
                                                       (1.0, "ok")]
    with pytest.raises(UserError, match=r"ground_truths\[2\] is not a finite number"):
        compute_score(data_sources=["math"] * 3, solution_strs=["1"] * 3,
                      ground_truths=["1", "1", math.nan], extra_infos=[{}] * 3)


def test_the_shared_code_verifier_is_safe_under_concurrent_calls():
    """verl's reward loop calls compute_score for each item in its own thread at once; each
    must get its own program's verdict (the calls overlap: each program sleeps)."""
    n = 8
    programs = [f"```python\nimport time\ntime.sleep(0.3)\nprint({k})\n```" for k in range(n)]
    tests = [{"inputs": [""], "outputs": [f"{k if k % 3 else k + 1}\n"]} for k in range(n)]
    compute_score("code", programs[1], tests[1], code_options={"workers": 2})  # pool started
    start, got = threading.Barrier(n), {}

    def one(k: int) -> None:
        start.wait()
        got[k] = compute_score("code", programs[k], tests[k],
                               code_options={"workers": 2})["reason"]

    threads = [threading.Thread(target=one, args=(k,)) for k in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert [got[k] for k in range(n)] == ["wrong_answer" if k % 3 == 0 else "ok"
                                          for k in range(n)]


def test_a_new_verifier_is_one_registration(monkeypatch):
    """A Kind subclass registered under a name is a TRL reward and a verl data source's
    verifier with no other change (its kind: Kind's defaults); a label shape it claims that
    another verifier claims too is refused, never guessed."""
    from dapo_bench.verifiers.base import Kind, Verdict

    from dapo_bench.registry import Entry
    from dapo_bench.rewards import make_reward

    class Exact(Kind):
        name, version, column = "exact", "0", "target"

        def __init__(self, **options):
            pass

        @classmethod
        def claims(cls, label):
            return isinstance(label, str) and label.startswith("=")

        def verify_batch(self, predictions, golds, finished=None):
            return [Verdict(p.strip() == g[1:], "ok" if p.strip() == g[1:] else "wrong_answer")
                    for p, g in zip(predictions, golds)]

        def close(self):
            pass

    VERIFIERS.names()  # loaded before adding to it
    monkeypatch.setitem(VERIFIERS._entries, "exact", Entry("exact", Exact))
    reward = make_reward("exact")
    assert reward(["cat ", [{"role": "assistant", "content": "dog"}]], target=["=cat", "=cat"]) \
        == [1.0, 0.0]
    assert compute_score("pets", "cat", "=cat", sources={"pets": "exact"})["score"] == 1.0
    with pytest.raises(UserError, match=r"read by several verifiers \(exact, math\); name"):
        verifier_for_label("=cat")  # the server routes no label two verifiers claim
    with pytest.raises(UserError, match=r"target\[0\] is missing"):
        reward(["cat"], target=[None])
