"""vllm backend settings that need no vllm: env engine args and the in-place reload rule."""

import pytest

from dapo_bench.errors import UserError
from dapo_bench.generation.vllm import env_engine_args, read_config, reload_in_place_is_exact


def test_env_engine_args(monkeypatch):
    monkeypatch.delenv("DAPO_BENCH_VLLM_ARGS", raising=False)
    assert env_engine_args() == {}
    monkeypatch.setenv("DAPO_BENCH_VLLM_ARGS", '{"tensor_parallel_size": 2, "dtype": "bfloat16"}')
    assert env_engine_args() == {"tensor_parallel_size": 2, "dtype": "bfloat16"}
    monkeypatch.setenv("DAPO_BENCH_VLLM_ARGS", '{"tensor_parallel_size": 2,}')
    with pytest.raises(UserError, match="DAPO_BENCH_VLLM_ARGS: not valid JSON"):
        env_engine_args()
    monkeypatch.setenv("DAPO_BENCH_VLLM_ARGS", "[2]")
    with pytest.raises(UserError, match="expected a JSON object"):
        env_engine_args()


def test_reload_in_place_only_for_untied_same_architecture(tmp_path):
    base = {"architectures": ["LlamaForCausalLM"], "hidden_size": 64,
            "tie_word_embeddings": False, "transformers_version": "5.19.0"}
    assert reload_in_place_is_exact(base, {**base, "transformers_version": "5.20.0"})
    assert not reload_in_place_is_exact(base, {**base, "tie_word_embeddings": True})
    assert not reload_in_place_is_exact(base, {**base, "hidden_size": 128})
    assert not reload_in_place_is_exact(base, {k: v for k, v in base.items()
                                               if k != "tie_word_embeddings"})  # default: tied
    (tmp_path / "config.json").write_text('{"a": 1,\n}')
    with pytest.raises(UserError, match=r"config.json:2: not valid JSON"):
        read_config(str(tmp_path))
    with pytest.raises(UserError, match="no config.json"):
        read_config(str(tmp_path / ".."))
    assert read_config("org/hub-model") == {}
