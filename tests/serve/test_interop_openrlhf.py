"""OpenRLHF's own remote reward client (``openrlhf.utils.agent.SingleTurnAgentExecutor``, what
``--reward.remote_url`` runs; OpenRLHF installed with --no-deps: ``make test-interop``) against a
real ``dapo-bench serve`` on loopback: every reward equals the verdict of ``dapo-bench verify``
on the same item, math and code from one server (no verifier is named: the labels' shape
routes them), the query decoded as OpenRLHF decodes it (prompt + response + the tokenizer's
end-of-sequence token). A run without ``--data.label_key`` (labels of "") gets no reward at all,
never a 0, and the server's stderr names the flag.

The model is replaced by a stand-in that returns the items' responses as token ids (vLLM is
not what is tested); the tokenizer is a real byte-level BPE one (tests/conftest.py).
"""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest
from _interop import ITEMS, OPENRLHF_VERSION, cli_verdicts

pytestmark = pytest.mark.interop

PROMPT = "<|user|>\nProblem {i}: solve it.\n<|assistant|>\n"


class Replay:
    """The stand-in for OpenRLHF's vLLM engine: the item's response for its prompt, ending
    with EOS (a finished generation), as token ids and text."""

    def __init__(self, tokenizer, responses: dict[str, str]):
        self.tok = tokenizer
        self.by_prompt = {tuple(tokenizer(p, add_special_tokens=False)["input_ids"]): r
                          for p, r in responses.items()}

    async def generate(self, prompt_token_ids, sampling_params, multi_modal_data=None):
        text = self.by_prompt[tuple(prompt_token_ids)]
        ids = self.tok(text, add_special_tokens=False)["input_ids"] + [self.tok.eos_token_id]
        out = SimpleNamespace(token_ids=ids, text=text, finish_reason="stop", logprobs=None)
        return SimpleNamespace(outputs=[out])


@pytest.fixture(scope="module")
def agent():
    """OpenRLHF's agent module (imported here, not at collection: it imports torch)."""
    return pytest.importorskip("openrlhf.utils.agent",
                               reason="make test-interop installs openrlhf (--no-deps)")


@pytest.fixture(scope="module")
def expected(tmp_path_factory):
    return cli_verdicts(tmp_path_factory.mktemp("cli"))


@pytest.fixture(scope="module")
def server(agent):
    from _reward_server import Server

    s = Server("--workers", "2")
    yield s
    assert s.stop() == 0


def _execute(agent, server, bpe_dir: str, items, labels=None) -> list[dict]:
    """OpenRLHF's single-turn rollouts of *items*, concurrently, rewarded by the server."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(bpe_dir)
    prompts = [PROMPT.format(i=i) for i in range(len(items))]
    engine = Replay(tok, {p: it[1] for p, it in zip(prompts, items)})
    executor = agent.SingleTurnAgentExecutor(remote_rm_url=server.url + "/get_reward")
    params = SimpleNamespace(max_tokens=256, logprobs=None)
    labels = labels or [it[2] for it in items]

    async def rollouts():
        return await asyncio.gather(*(executor.execute(p, label, params, 1024, tok, engine)
                                      for p, label in zip(prompts, labels)))

    return asyncio.run(rollouts())


def test_the_installed_openrlhf_is_the_tested_one(agent):
    from importlib.metadata import version

    assert version("openrlhf") == OPENRLHF_VERSION, "docs/serve.md names the version tested"


def test_openrlhfs_client_gets_the_clis_verdicts_from_one_server(agent, server, bpe_dir,
                                                                expected):
    outs = _execute(agent, server, bpe_dir, ITEMS)
    # one query per request, so OpenRLHF keeps the answer's one-element lists (its own
    # reward server answers the same way; its Experience takes the list as is)
    assert [o["reward"] for o in outs] == [[float(e["passed"])] for e in expected]
    assert [o["scores"] for o in outs] == [o["reward"] for o in outs]
    assert [o["extra_logs"]["passed"] for o in outs] == [o["reward"] for o in outs]



def test_openrlhfs_batch_request_gets_the_clis_verdicts(agent, server, expected):
    """OpenRLHF's HTTP helper with several queries in one request (how it shards a batch)."""
    executor = agent.SingleTurnAgentExecutor(remote_rm_url=server.url + "/get_reward")
    prompts = [PROMPT.format(i=i) for i in range(len(ITEMS))]
    (answer,) = asyncio.run(executor._fetch_rewards_via_http(
        [p + r + "<|eot_id|>" for p, (_, r, _, _) in zip(prompts, ITEMS)], prompts,
        [g for _, _, g, _ in ITEMS]))
    assert answer["rewards"] == [float(e["passed"]) for e in expected]
    assert answer["reasons"] == [e["reason"] for e in expected]


def test_a_run_without_a_label_key_gets_no_reward_not_zeros(agent, server, bpe_dir):
    """Without --data.label_key OpenRLHF sends labels of "": the server refuses them (400),
    OpenRLHF's client gives up after its retries and the rollout has no reward (OpenRLHF then
    stops: its experience maker needs a reward model for rewards it does not have)."""
    (out,) = _execute(agent, server, bpe_dir, ITEMS[:1], labels=[""])
    assert out["reward"] is None and out["scores"] is None
    said = server.stderr_line(lambda ln: "refused /get_reward (400): labels[0] is empty" in ln)
    assert "--data.label_key" in said
