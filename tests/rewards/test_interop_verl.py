"""verl's own code scores responses with ``dapo_bench.rewards.compute_score``, in this process on
CPU (verl installed with --no-deps: ``make test-interop``), and every reward equals the
verdict of ``dapo-bench verify`` on the same item.

- verl's Hydra config, composed from its own ``ppo_trainer.yaml`` with the overrides
  docs/rewards.md gives (``reward.custom_reward_function.path/name/reward_kwargs``), loads the
  function through verl's own loader; the top-level ``custom_reward_function`` of verl < 0.9
  loads nothing (verl then scores with its own function, silently: why the docs changed).
- Every manager of verl's reward loop (its registry: naive, dapo, gdpo, rate_limited, remote)
  runs in verl's own ``RewardLoopWorker``, as its Ray actor does; ``remote`` starts its own Ray
  actors (a local Ray instance).
- The managers verl still ships from before the reward loop (``verl.workers.reward_manager``:
  naive, dapo, batch) score the same; ``prime`` is documented as unsupported (docs/rewards.md).
- A gold that is no gold stops verl's naive manager with the UserError (never a 0).
"""

from __future__ import annotations

import os

import pytest
from _interop import ITEMS, SOURCES, VERL_VERSION, cli_verdicts

pytestmark = pytest.mark.interop

REWARD_FILE = "from dapo_bench.rewards import compute_score  # noqa: F401\n"
PROMPT = "Solve the problem; end with the answer.\n"


@pytest.fixture(scope="module", autouse=True)
def verl():
    """verl itself (imported here, not at collection: ~15 s, for `make test` too)."""
    return pytest.importorskip("verl", reason="make test-interop installs verl (--no-deps)")


@pytest.fixture(scope="module")
def expected(tmp_path_factory):
    return cli_verdicts(tmp_path_factory.mktemp("cli"))


def compose(overrides: list[str]):
    """verl's trainer config, composed by Hydra from verl's own YAML files."""
    import verl
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    config_dir = os.path.join(os.path.dirname(verl.__file__), "trainer", "config")
    with initialize_config_dir(config_dir=config_dir, version_base=None):
        return hydra_compose("ppo_trainer", overrides=overrides)


def documented(tmp_path, bpe_dir: str, manager: str) -> list[str]:
    """The overrides of docs/rewards.md's verl recipe (and the policy, for its tokenizer)."""
    path = tmp_path / "my_reward.py"
    path.write_text(REWARD_FILE)
    return [f"reward.custom_reward_function.path={path}",
            "reward.custom_reward_function.name=compute_score",
            "+reward.custom_reward_function.reward_kwargs.sources.my_code_set=code",
            "+reward.custom_reward_function.reward_kwargs.code_options.limits.time_s=4",
            f"reward.reward_manager.name={manager}", "reward.num_workers=2",
            f"actor_rollout_ref.model.path={bpe_dir}"]


def rollouts(tokenizer, items=ITEMS):
    """A DataProto as verl's rollout hands it to the reward loop: left-padded prompts,
    right-padded responses ending with EOS, the rows' data_source, reward_model, extra_info."""
    import numpy as np
    import torch
    from verl import DataProto

    def ids(text: str) -> list[int]:
        return tokenizer(text, add_special_tokens=False)["input_ids"]

    p_ids = [ids(PROMPT) for _ in items]
    r_ids = [ids(response) + [tokenizer.eos_token_id] for _, response, _, _ in items]
    for (_, response, _, _), r in zip(items, r_ids):  # the tokenizer keeps the text whole
        assert tokenizer.decode(r, skip_special_tokens=True) == response
    plen, rlen, pad = max(map(len, p_ids)), max(map(len, r_ids)), tokenizer.pad_token_id
    prompts = torch.tensor([[pad] * (plen - len(p)) + p for p in p_ids])
    responses = torch.tensor([r + [pad] * (rlen - len(r)) for r in r_ids])
    mask = torch.tensor([[0] * (plen - len(p)) + [1] * len(p) + [1] * len(r) +
                         [0] * (rlen - len(r)) for p, r in zip(p_ids, r_ids)])
    def obj(xs: list) -> np.ndarray:
        return np.array(xs, dtype=object)

    return DataProto.from_dict(
        tensors={"prompts": prompts, "responses": responses, "attention_mask": mask,
                 "input_ids": torch.cat([prompts, responses], dim=1)},
        non_tensors={"data_source": obj([s for s, *_ in items]),
                     "reward_model": obj([{"ground_truth": g, "style": "rule"}
                                          for _, _, g, _ in items]),
                     "extra_info": obj([{"index": i} for i in range(len(items))])})


def test_the_installed_verl_is_the_tested_one(verl):
    assert verl.__version__ == VERL_VERSION, "docs/rewards.md names the verl version tested"


def test_the_documented_config_keys_load_compute_score(tmp_path, bpe_dir):
    from verl.trainer.ppo.reward import get_custom_reward_fn

    from dapo_bench.rewards import compute_score

    fn = get_custom_reward_fn(compose(documented(tmp_path, bpe_dir, "naive")))
    assert fn.args[0] is compute_score and dict(fn.args[1]["sources"]) == SOURCES
    assert fn.args[1]["code_options"]["limits"]["time_s"] == 4  # nested options arrive
    old = compose([f"custom_reward_function.path={tmp_path / 'my_reward.py'}",
                   "custom_reward_function.name=compute_score"])
    assert get_custom_reward_fn(old) is None  # verl >= 0.9 ignores the old top-level block


def _same(got: list[dict], expected: list[dict]) -> None:
    """verl's per-item outputs carry the CLI's verdicts: reward, reason, answer, no infra."""
    assert [o["reward_score"] for o in got] == [float(e["passed"]) for e in expected]
    info = [o["reward_extra_info"] for o in got]
    assert [i["reason"] for i in info] == [e["reason"] for e in expected]
    assert [i["pred"] for i in info] == [e["extracted"] or "" for e in expected]
    assert not any(i["infra_error"] for i in info)


@pytest.mark.parametrize("manager", ["naive", "dapo", "gdpo", "rate_limited"])
def test_each_reward_loop_manager_gives_the_clis_verdicts(manager, tmp_path, bpe_dir, expected):
    from verl.experimental.reward_loop import RewardLoopWorker
    from verl.experimental.reward_loop.reward_manager import get_reward_manager_cls

    worker = RewardLoopWorker(compose(documented(tmp_path, bpe_dir, manager)))
    assert isinstance(worker.reward_manager, get_reward_manager_cls(manager))
    data = rollouts(worker.input_tokenizer)
    got = worker.loop.run_until_complete(worker.compute_score_batch(data))
    _same(got, expected)
    rm = type(worker.reward_manager).assemble_rm_scores(data, [o["reward_score"] for o in got])
    assert rm.sum(dim=1).tolist() == [float(e["passed"]) for e in expected]


def test_the_remote_manager_scores_in_its_ray_actors(tmp_path, bpe_dir, expected):
    import ray
    from verl.experimental.reward_loop import RewardLoopWorker

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        worker = RewardLoopWorker(compose(documented(tmp_path, bpe_dir, "remote")))
        got = worker.loop.run_until_complete(
            worker.compute_score_batch(rollouts(worker.input_tokenizer)))
    finally:
        ray.shutdown()
    _same(got, expected)


@pytest.mark.parametrize("manager", ["naive", "dapo", "batch"])
def test_the_legacy_managers_give_the_clis_verdicts(manager, tmp_path, bpe_dir, expected):
    from transformers import AutoTokenizer
    from verl.trainer.ppo.reward import get_custom_reward_fn
    from verl.workers.reward_manager import get_reward_manager_cls

    fn = get_custom_reward_fn(compose(documented(tmp_path, bpe_dir, "naive")))
    tok = AutoTokenizer.from_pretrained(bpe_dir)
    cls = get_reward_manager_cls(manager)
    out = cls(tokenizer=tok, num_examine=0, compute_score=fn)(rollouts(tok), return_dict=True)
    assert out["reward_tensor"].sum(dim=1).tolist() == [float(e["passed"]) for e in expected]
    assert list(out["reward_extra_info"]["reason"]) == [e["reason"] for e in expected]


def test_a_gold_that_is_no_gold_stops_the_manager(tmp_path, bpe_dir):
    from verl.experimental.reward_loop import RewardLoopWorker

    from dapo_bench.errors import UserError

    worker = RewardLoopWorker(compose(documented(tmp_path, bpe_dir, "naive")))
    bad = [("openai/gsm8k", "#### 72", "", "math")]
    with pytest.raises(UserError, match="ground_truth .* is empty"):
        worker.loop.run_until_complete(
            worker.compute_score_batch(rollouts(worker.input_tokenizer, bad)))
