"""DAPO's artifact rows (``methods.dapo.rows``): each reads a line of the files earlier runs
wrote and writes it back byte for byte (same keys, same order), so a resumed run reads
yesterday's files and a rerun writes the same ones. The lines below have the shape of a toy
run's ``it1/`` files (shortened)."""

import json

import pytest

from dapo_bench.methods.dapo.rows import (
    Action,
    AdvantageRow,
    McRow,
    RefLogprobs,
    State,
)
from dapo_bench.training.rollouts import Group, Rollout

STATE = ('{"key": "arith-rl_train-00004/d6216ea45fe6", "problem_id": "arith-rl_train-00004", '
         '"prompt": "((52-16)-19)*2\\n", "prompt_ids": [13, 13, 26, 23, 4], '
         '"prefix": "52-16=36\\n", "prefix_ids": [26, 23, 18, 4], "t": 1}')
MC = ('{"key": "arith-rl_train-00004/d6216ea45fe6", "problem_id": "arith-rl_train-00004", '
      '"prefix": "52-16=36\\n", "prefix_ids": [26, 23, 18, 4], "t": 1, "completions": ['
      '{"text": "36-19=17\\n\\\\boxed{34}", "reward": 1.0, "n_tokens": 5, "finish_reason": '
      '"stop", "token_ids": [24, 27, 4, 65, 1]}, {"text": "36-19=18\\n", "reward": 0.0, '
      '"n_tokens": 3, "finish_reason": "length", "token_ids": [24, 27, 4]}], "value": 0.5, '
      '"prompt_tokens": 120}')
MC_INFRA = ('{"key": "s", "problem_id": "p0", "prefix": "é\\n", "prefix_ids": [7, 4], "t": 1, '
            '"completions": [], "value": null, "prompt_tokens": 0, "infra_errors": [{"text": '
            '"1\\n", "reward": 0.0, "n_tokens": 2, "finish_reason": "stop", "token_ids": [9, 1], '
            '"reason": "sandbox_error"}]}')
ADV = ('{"key": "arith-rl_train-00004/d6216ea45fe6", "problem_id": "arith-rl_train-00004", '
       '"prompt": "((52-16)-19)*2\\n", "prompt_ids": [13, 13, 26, 23, 4], "prefix": '
       '"52-16=36\\n36-19=17\\n", "prefix_ids": [26, 23, 18, 4], "actions": [{"ids": [22, 28, '
       '4], "text": "17*2=34\\n", "eos": false, "value": 1.0, "adv": 0.25}, {"ids": [65, 1], '
       '"text": "\\\\boxed{36}", "eos": true, "value": 0.0, "adv": -0.75}]}')
REF = {"belongs_to": {"advantages": "38260cb30b653304", "max_length": 256,
                      "policy": "aefd1a1b144dabc9"},
       "keys": ["a/1", "b/2"], "logprobs": [[-1.25, -0.0625], [-3.5]], "tokens": 42}


def _dumps(row: dict) -> str:  # how io.atomic_write_jsonl writes a row
    return json.dumps(row, ensure_ascii=False)


@pytest.mark.parametrize("cls, line", [(State, STATE), (McRow, MC), (McRow, MC_INFRA),
                                       (AdvantageRow, ADV)])
def test_a_row_reads_and_writes_a_line_byte_for_byte(cls, line):
    row = cls.from_row(json.loads(line))
    assert _dumps(row.to_row()) == line
    assert cls.from_row(json.loads(_dumps(row.to_row()))) == row


def test_rows_are_typed_and_frozen():
    adv = AdvantageRow.from_row(json.loads(ADV))
    assert adv.actions[1] == Action((65, 1), "\\boxed{36}", True, 0.0, -0.75)
    assert adv.context == [13, 13, 26, 23, 4, 26, 23, 18, 4]
    mc = McRow.from_row(json.loads(MC))
    assert [c.reward for c in mc.completions] == [1.0, 0.0] and mc.value == 0.5
    assert mc.completions[1].token_ids == [24, 27, 4] and not mc.completions[1].stopped
    with pytest.raises(AttributeError):
        mc.value = 1.0  # type: ignore[misc]


def test_the_mc_row_of_a_group_is_the_row_the_stage_wrote():
    state = State.from_row(json.loads(STATE))
    comps = json.loads(MC)["completions"]
    g = Group(state.key, state.problem_id, [Rollout.from_row(c) for c in comps], 120)
    assert _dumps(McRow.of(state, g).to_row()) == MC


def test_the_reference_cache_keeps_its_json():
    ref = RefLogprobs.from_row(json.loads(json.dumps(REF)))
    assert ref.logprobs == ((-1.25, -0.0625), (-3.5,)) and ref.tokens == 42
    assert ref.to_row() == REF
    old = {k: v for k, v in REF.items() if k != "belongs_to"}  # belongs to nothing: recomputed
    assert RefLogprobs.from_row(old).belongs_to == {}
