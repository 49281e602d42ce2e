"""Gradient accumulation (``EngineConfig.micro_batch``, ``--micro-batch``): one optimizer step
in micro-batches is the whole batch's step.

For SFT (a token mean), DAPO's actor (a mean over actions, items = whole states) and DPO (a
mean over pairs), and for a dict of engines (PPO's actor and critic): the same gradient, the
same weights after the step (float tolerance), the same logged loss, grad norm, ledger tokens
and counts. Adam's first step is about lr * sign(gradient), so the gradient itself is compared
too (recorded where the engine steps). A micro-batch larger than the batch is the unchanged
whole-batch path (bit-exact). Bad values and DeepSpeed are refused; two ranks with
micro-batches take one process's step (torchrun, 2 CPU ranks).
"""

import subprocess
import sys
from pathlib import Path

import pytest
import torch
from _launch import rank_env, run_ranks

from dapo_bench.arith import PROMPT_TEMPLATE, make_split
from dapo_bench.errors import UserError
from dapo_bench.ledger import Ledger
from dapo_bench.toy.model import tiny_llama
from dapo_bench.toy.tokenizer import build_char_tokenizer
from dapo_bench.training import engine as engine_mod
from dapo_bench.training.engine import Engine, EngineConfig, OptimConfig
from dapo_bench.training.loop import LossOut, micro_batches, train_loop
from dapo_bench.training.scope import Scope
from dapo_bench.training.sft import SFTConfig, sft_rows, train_sft

pytestmark = pytest.mark.integration  # launches processes, trains or kills runs (conftest)

SMALL = {"d": 32, "layers": 2, "heads": 2, "ffn": 64}
LR = 1e-3


@pytest.fixture(scope="module")
def tok():
    torch.set_num_threads(1)
    return build_char_tokenizer()


@pytest.fixture(scope="module")
def rows(tok):
    pairs = [(PROMPT_TEMPLATE.format(question=r["question"]), r["solution"])
             for r in make_split("sft", 11)]
    return sft_rows(tok, pairs)


@pytest.fixture
def grads(monkeypatch):
    """The gradient every ``Engine.update`` steps on (scaled, before clipping), per call."""
    seen: list[list[torch.Tensor]] = []
    update = Engine.update

    def recording(self, scale: float = 1.0) -> float:
        seen.append([p.grad * scale for p in self.module.parameters() if p.grad is not None])
        return update(self, scale)

    monkeypatch.setattr(Engine, "update", recording)
    return seen


def _ids(tok, text: str) -> list[int]:
    return tok(text, add_special_tokens=False)["input_ids"]


def _state(prompt_ids, prefix_ids, actions):
    """An ``advantages.jsonl`` row of (ids, adv) actions, as the DAPO actor reads it."""
    from dapo_bench.methods.dapo.rows import Action, AdvantageRow

    return AdvantageRow("k", "p", "", tuple(prompt_ids), "", tuple(prefix_ids),
                        tuple(Action(tuple(ids), "", False, 0.0, adv) for ids, adv in actions))


def _same(a: torch.nn.Module, b: torch.nn.Module, atol: float = 1e-6) -> None:
    sb = b.state_dict()
    for name, value in a.state_dict().items():
        assert torch.allclose(value, sb[name], atol=atol), name


def _same_grads(a: list, b: list) -> None:
    assert len(a) == len(b)
    for ga, gb in zip(a, b):
        for x, y in zip(ga, gb, strict=True):  # float rounding, relative to the tensor's scale
            assert (x - y).abs().max() <= 1e-5 * x.abs().max() + 1e-10


def _check(runs: dict, grads: list, key: str = "loss") -> None:
    """Runs keyed by micro_batch (0 first): (model, stats, ledger) each; ``grads`` in order."""
    (m0, s0, l0), *_ = runs.values()
    n = len(grads) // len(runs)
    for i, (mb, (m, s, led)) in enumerate(runs.items()):
        _same(m0, m)
        _same_grads(grads[:n], grads[i * n : (i + 1) * n])
        for h0, h in zip(s0.history, s.history, strict=True):
            assert h[key] == pytest.approx(h0[key], rel=1e-6), mb
            assert h["grad_norm"] == pytest.approx(h0["grad_norm"], rel=1e-5), mb
        assert (s.tokens, s.counts, led.n_train) == (s0.tokens, s0.counts, l0.n_train), mb


def test_micro_batches_are_balanced_in_order_and_at_most_the_size():
    assert micro_batches(list(range(10)), 4) == [[0, 1, 2], [3, 4, 5], [6, 7, 8, 9]]
    assert micro_batches(list(range(5)), 0) == [[0, 1, 2, 3, 4]]
    assert micro_batches(list(range(5)), 9) == [[0, 1, 2, 3, 4]]
    assert micro_batches(list(range(3)), 1) == [[0], [1], [2]]


def test_sft_step_in_micro_batches_is_the_whole_batch_step(tok, rows, grads):
    runs = {}
    for mb in (0, 4, 1):
        model = tiny_llama(tok, seed=0, **SMALL)
        led = Ledger(n_params=1)
        cfg = SFTConfig(batch_size=len(rows), max_steps=1, log_every=1, optim=OptimConfig(lr=LR))
        st = train_sft(model, tok, rows, cfg, scope=Scope("sft", led),
                       engine_cfg=EngineConfig(micro_batch=mb))
        runs[mb] = (model, st, led)
    _check(runs, grads)
    assert runs[4][1].counts["rows"] == len(rows)


def test_micro_batch_over_the_batch_is_the_whole_batch_bit_exact(tok, rows):
    out = []
    for mb in (0, len(rows), 1000):
        model = tiny_llama(tok, seed=0, **SMALL)
        cfg = SFTConfig(batch_size=len(rows), max_steps=2, log_every=1, optim=OptimConfig(lr=LR))
        st = train_sft(model, tok, rows, cfg, engine_cfg=EngineConfig(micro_batch=mb))
        out.append((model.state_dict(), [h["loss"] for h in st.history]))
    for sd, losses in out[1:]:
        assert losses == out[0][1]
        assert all(torch.equal(v, out[0][0][k]) for k, v in sd.items())


def test_dapo_actor_micro_batches_keep_states_whole(tok, grads):
    from dapo_bench.methods.dapo.actor import ActorConfig, reference_logprobs, train_actor

    eos = tok.eos_token_id
    states = [  # 2, 3, 1 and 2 actions: micro-batches of unequal weight
        _state(_ids(tok, "12+3\n"), [], [(_ids(tok, "12+3=15\n"), 0.4),
                                         (_ids(tok, "12+3=16\n"), -0.4)]),
        _state(_ids(tok, "40-7\n"), _ids(tok, "40-7=33\n"), [
            (_ids(tok, "\\boxed{33}") + [eos], 0.5), (_ids(tok, "\\boxed{31}") + [eos], -0.2),
            (_ids(tok, "\\boxed{3}") + [eos], -0.3)]),
        _state(_ids(tok, "6*7\n"), [], [(_ids(tok, "6*7=42\n"), 0.1)]),
        _state(_ids(tok, "9+9\n"), _ids(tok, "9+9="), [(_ids(tok, "18\n"), 0.3),
                                                       (_ids(tok, "17\n"), -0.3)]),
    ]
    ref = reference_logprobs(tiny_llama(tok, seed=3, **SMALL), tok.pad_token_id, states)
    steps = []
    runs = {}
    for mb in (0, 1, 3):
        model = tiny_llama(tok, seed=3, **SMALL)
        led = Ledger(n_params=1)
        cfg = ActorConfig(optim=OptimConfig(lr=LR), epochs=1, batch_actions=64)
        st = train_actor(model, tok.pad_token_id, states, ref, beta=0.5, cfg=cfg, scope=Scope("actor", led),
                         engine_cfg=EngineConfig(micro_batch=mb))
        runs[mb] = (model, st, led)
        steps.append(st.steps)
    assert steps == [1, 1, 1]  # one optimizer step each: the four states in one batch
    _check(runs, grads)


def test_dapo_scoring_passes_take_micro_batches(tok):
    """The actor's reference log-probs (and the diagnostic after training) are scored in
    passes of --micro-batch actions: a 135M model's 256-action pass asked for 29 GB."""
    from types import SimpleNamespace

    from dapo_bench.methods.dapo.actor import SCORE_BATCH, reference_logprobs
    from dapo_bench.methods.dapo.stages import score_batch

    ctx = lambda mb: SimpleNamespace(engine_cfg=EngineConfig(micro_batch=mb))
    assert score_batch(ctx(0)) == SCORE_BATCH and score_batch(ctx(4)) == 4
    states = [_state(_ids(tok, f"{i}+{i}\n"), _ids(tok, f"{i}+{i}="),
                     [(_ids(tok, f"{2 * i}\n"), 0.0), (_ids(tok, f"{i}\n"), 0.0),
                      (_ids(tok, "\\boxed{7}") + [tok.eos_token_id], 0.0)])
              for i in range(1, 7)]
    model = tiny_llama(tok, seed=5, **SMALL)
    seen, rows = {}, {}
    for n in (SCORE_BATCH, 3, 1):
        sizes: list[int] = []
        seen[n] = reference_logprobs(model, tok.pad_token_id, states, batch_actions=n,
                                     on_batch=lambda b, s=sizes: s.append(b.input_ids.shape[0]))
        rows[n] = max(sizes)
    assert rows == {SCORE_BATCH: 18, 3: 3, 1: 3}  # states stay whole: 3 actions at least
    for n in (3, 1):
        assert torch.allclose(torch.tensor(seen[n]), torch.tensor(seen[SCORE_BATCH]), atol=1e-5)


def test_dpo_step_in_micro_batches_is_the_whole_batch_step(tok, grads):
    from dapo_bench.methods.dpo import DPOConfig, Pair, train_dpo

    eos = [tok.eos_token_id]
    pairs = [Pair(_ids(tok, f"{i}+1\n"), _ids(tok, f"{i + 1}") + eos,
                  _ids(tok, f"{i * 7 + 2}") + eos) for i in range(8)]
    runs = {}
    for mb in (0, 3):
        model = tiny_llama(tok, seed=1, **SMALL)
        led = Ledger(n_params=1)
        cfg = DPOConfig(beta=0.5, epochs=2, batch_size=8, optim=OptimConfig(lr=LR))
        st = train_dpo(model, tok, pairs, cfg, scope=Scope("train", led),
                       engine_cfg=EngineConfig(micro_batch=mb))
        runs[mb] = (model, st, led)
    assert runs[3][1].steps == 2
    _check(runs, grads)


def test_a_dict_of_engines_accumulates_each(tok, rows, grads):
    """PPO's shape: one loss per engine from one forward, a token-mean weight."""
    from dapo_bench.training.batches import masked_lm_loss, pack_pairs, predicted_tokens

    runs = {}
    for mb in (0, 5):
        models = {"actor": tiny_llama(tok, seed=0, **SMALL), "critic": tiny_llama(tok, seed=1,
                                                                                  **SMALL)}
        engines = {k: engine_mod.make_engine(m, OptimConfig(lr=LR), EngineConfig(micro_batch=mb))
                   for k, m in models.items()}

        def loss_fn(items, models=models):
            b = pack_pairs([c for c, _ in items], [r for _, r in items],
                           pad_id=tok.pad_token_id, max_length=256)
            return LossOut({k: masked_lm_loss(m, b) for k, m in models.items()},
                           predicted_tokens(b), 2 * b.n_tokens, {"rows": len(items)})

        led = Ledger(n_params=1)
        st = train_loop(engines, lambda epoch: [list(rows)], loss_fn, total_steps=1,
                        scope=Scope("train", led), log_every=1)
        runs[mb] = (models, st, led)
    for k in ("actor", "critic"):
        # one AdamW step moves a weight by ~lr * g / (|g| + eps): where |g| is near eps, float
        # rounding of g moves the weight by a few thousandths of lr (2.6e-6 at lr 1e-3 on one
        # CPU, over the old atol 1e-6); the gradients themselves are compared tightly below
        _same(runs[0][0][k], runs[5][0][k], atol=1e-2 * LR)
    _same_grads(grads[:2], grads[2:])
    h0, h1 = runs[0][1].history[0], runs[5][1].history[0]
    for key in ("actor_loss", "critic_loss", "actor_grad_norm", "critic_grad_norm"):
        assert h1[key] == pytest.approx(h0[key], rel=1e-5)
    assert runs[5][2].n_train == runs[0][2].n_train


def test_bad_micro_batch_is_refused():
    with pytest.raises(ValueError, match="micro-batch must be an integer >= 0"):
        EngineConfig(micro_batch=-1)
    with pytest.raises(ValueError, match="micro-batch must be an integer >= 0"):
        EngineConfig(micro_batch=2.5)
    with pytest.raises(ValueError, match="micro-batch 4 needs --deepspeed none"):
        EngineConfig("zero2", micro_batch=4)
    assert EngineConfig(micro_batch=None).micro_batch == 0


def test_run_options_carry_it_and_check_it():
    from dapo_bench.run import RunOptions, resolve_options

    opts = RunOptions(micro_batch=8)
    assert opts.engine_config() == EngineConfig(micro_batch=8)
    with pytest.raises(UserError, match="^--micro-batch must be an integer >= 0"):
        resolve_options("sft", RunOptions(micro_batch=-2))
    with pytest.raises(UserError, match="^--micro-batch 8 needs --deepspeed none"):
        resolve_options("sft", RunOptions(micro_batch=8, deepspeed="zero3"))
    with pytest.raises(UserError, match="^--control-batch-size must be >= 1, got 0"):
        resolve_options("sft", RunOptions(control_batch_size=0))
    with pytest.raises(UserError, match="^--control-lr must be > 0"):
        resolve_options("sft", RunOptions(control_lr=0.0))


RANK_SCRIPT = """
import sys, torch
from dapo_bench import dist
from dapo_bench.arith import PROMPT_TEMPLATE, make_split
from dapo_bench.toy.model import tiny_llama
from dapo_bench.toy.tokenizer import build_char_tokenizer
from dapo_bench.training.engine import EngineConfig, OptimConfig
from dapo_bench.training.sft import SFTConfig, sft_rows, train_sft

torch.set_num_threads(1)
tok = build_char_tokenizer()
rows = sft_rows(tok, [(PROMPT_TEMPLATE.format(question=r["question"]), r["solution"])
                      for r in make_split("sft", 9)])
model = tiny_llama(tok, seed=0, d=32, layers=2, heads=2, ffn=64)
cfg = SFTConfig(batch_size=9, max_steps=1, log_every=1, optim=OptimConfig(lr=float(sys.argv[3])))
st = train_sft(model, tok, rows, cfg, engine_cfg=EngineConfig(micro_batch=int(sys.argv[2])))
if dist.is_main():
    torch.save({"weights": model.state_dict(), "history": st.history, "tokens": st.tokens,
                "counts": st.counts}, sys.argv[1])
"""


def test_two_ranks_with_micro_batches_take_one_process_step(tmp_path):
    """9 rows on 2 ranks, micro-batch 4: rank 0 accumulates 5 rows in 2 passes, rank 1 steps
    on its 4 in one; the ranks' gradient average is still the whole batch's (~15 s)."""
    script = tmp_path / "ranks.py"
    script.write_text(RANK_SCRIPT)
    got, want = tmp_path / "two.pt", tmp_path / "one.pt"
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node",
           "2", str(script), str(got), "4", str(LR)]
    root = str(Path(__file__).resolve().parents[2])
    env = rank_env(PYTHONPATH=root)
    run = run_ranks(cmd, env, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    one = subprocess.run([sys.executable, str(script), str(want), "0", str(LR)], env=env,
                         capture_output=True, text=True, timeout=300, check=False)
    assert one.returncode == 0, one.stderr[-3000:]
    a, b = torch.load(got), torch.load(want)
    for name, value in b["weights"].items():  # 2 ranks alone differ from 1 process by ~2e-6
        assert torch.allclose(a["weights"][name], value, atol=1e-5), name
    for ha, hb in zip(a["history"], b["history"], strict=True):
        assert ha["loss"] == pytest.approx(hb["loss"], rel=1e-6)
        assert ha["grad_norm"] == pytest.approx(hb["grad_norm"], rel=1e-5)
    assert (a["tokens"], a["counts"]) == (b["tokens"], b["counts"])
