"""Fixtures shared by several test modules, and the versions the run resolved (in its header)."""

import pytest

HEADER_PACKAGES = ("pytest", "torch", "transformers", "trl", "deepspeed", "sympy",
                   "math-verify", "tensorboard", "wandb", "starlette", "uvicorn")


def pytest_report_header(config) -> str:
    """The versions of the packages whose releases change what the suite sees, at the top of
    every run's log (CI installs into a fresh venv: the log says what it resolved)."""
    from importlib.metadata import PackageNotFoundError, version

    def one(name: str) -> str:
        try:
            return f"{name} {version(name)}"
        except PackageNotFoundError:
            return f"{name} (not installed)"

    return "versions: " + ", ".join(one(n) for n in HEADER_PACKAGES)


def pytest_collection_modifyitems(config, items) -> None:
    """Modules marked ``integration`` (they launch processes or servers, train a real model, or
    kill and resume runs: minutes, where a unit test takes milliseconds) run first. Under
    ``make test``'s two xdist workers (``--dist loadfile --no-loadscope-reorder``: a module stays
    on one worker, and modules are handed out in this order, not by their number of tests) the
    long modules start first and the short ones fill in at the end, so both workers finish
    together instead of one waiting on the last long module. The sort is stable: the order
    within each group is pytest's."""
    items.sort(key=lambda item: item.get_closest_marker("integration") is None)


def _tiny_char_llama(tmp_path_factory, seed: int) -> str:
    """A saved random-init 2-layer character-level Llama: a policy dir for runs."""
    from dapo_bench.models import save_policy
    from dapo_bench.toy.model import tiny_llama
    from dapo_bench.toy.tokenizer import build_char_tokenizer

    tok = build_char_tokenizer()
    d = tmp_path_factory.mktemp("tiny") / "policy"
    return str(save_policy(tiny_llama(tok, d=32, layers=2, heads=2, ffn=64, seed=seed), tok, d))


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    """The tiny character-level Llama of seed 5."""
    return _tiny_char_llama(tmp_path_factory, seed=5)


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    """The tiny character-level Llama of seed 0, torch on one thread."""
    import torch

    torch.set_num_threads(1)
    return _tiny_char_llama(tmp_path_factory, seed=0)


# Llama-3's pre-tokenizer regex: punctuation followed by newlines is ONE pre-token, so byte-level
# BPE learns tokens such as ".\n\n" that span a step boundary (the bug class a char-level
# tokenizer hides).
LLAMA3_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
                r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
BPE_CORPUS = [
    "Let x = 3.\n\nThen 2x = 6.\n\nSo the answer is \\boxed{6}.",
    "12+3=15\n15*2=30\n\\boxed{30}",
    "First, add the numbers.\n\nNext, multiply.\n\nThe answer is \\boxed{42}.",
    "Janet has 16 eggs. She eats 3.\n\nShe sells 13 for $2 each: 26 dollars.\n\n#### 26",
] * 20 + [f"{a}+{b}={a + b}\n" for a in range(30) for b in range(30)]


def build_bpe_tokenizer(vocab_size: int = 400, bos: bool = True):
    """A byte-level BPE tokenizer with Llama-3 pre-tokenisation, trained in-process: BOS added
    by its post-processor (when ``bos``), an EOS, a pad, and a small chat template."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    special = ["<|begin_of_text|>", "<|eot_id|>", "<|pad|>"]
    tk = Tokenizer(models.BPE())
    tk.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(LLAMA3_SPLIT), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tk.decoder = decoders.ByteLevel()
    tk.train_from_iterator(BPE_CORPUS, trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=special,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    if bos:
        tk.post_processor = processors.TemplateProcessing(
            single="<|begin_of_text|> $A", special_tokens=[("<|begin_of_text|>", 0)])
    tok = PreTrainedTokenizerFast(tokenizer_object=tk, bos_token="<|begin_of_text|>",
                                  eos_token="<|eot_id|>", pad_token="<|pad|>",
                                  padding_side="left", clean_up_tokenization_spaces=False)
    tok.chat_template = ("{{ bos_token }}{% for m in messages %}<|{{ m['role'] }}|>\n"
                         "{{ m['content'] }}\n{% endfor %}{% if add_generation_prompt %}"
                         "<|assistant|>\n{% endif %}")
    return tok


@pytest.fixture(scope="session")
def bpe_dir(tmp_path_factory):
    """A saved random-init 2-layer Llama over the Llama-3-style BPE tokenizer above."""
    from dapo_bench.toy.model import tiny_llama

    d = tmp_path_factory.mktemp("bpe") / "policy"
    tok = build_bpe_tokenizer()
    model = tiny_llama(tok, d=32, layers=2, heads=2, ffn=64, seed=7)
    model.config.bos_token_id = tok.bos_token_id
    model.save_pretrained(d)
    tok.save_pretrained(d)
    return str(d)


@pytest.fixture
def cli(monkeypatch, capsys):
    """Run the installed entry point (``dapo_bench.cli:main``) in this process, offline:
    ``cli(["eval", ...]) -> (exit status, stderr)``."""
    import sys

    from dapo_bench.cli import main

    def run(argv):
        monkeypatch.setattr(sys, "argv", ["dapo-bench", *map(str, argv)])
        monkeypatch.setenv("HF_HUB_OFFLINE", "1")
        with pytest.raises(SystemExit) as exc:
            main()
        return exc.value.code, capsys.readouterr().err

    return run


@pytest.fixture(scope="module")
def math_verifier():
    """A full-mode math verifier (the CLI's default), one worker, a 20 s deadline: one per
    test module, closed after it."""
    from dapo_bench.verifiers.math import MathVerifier

    v = MathVerifier(timeout=20.0, workers=1)
    yield v
    v.close()
