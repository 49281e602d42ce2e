"""Registry, config, I/O and ledger: the pieces every area builds on."""

import dataclasses
import json

import pytest

from dapo_bench.config import load_config
from dapo_bench.errors import UserError
from dapo_bench.io import JsonlAppender, atomic_write_json, read_jsonl
from dapo_bench.ledger import BudgetExhausted, Ledger
from dapo_bench.registry import Registry


def test_registry_duplicate_and_unknown():
    reg = Registry("widget")
    reg.add("a", 1, help="one")
    reg.add("a", 1)  # same object again is fine
    with pytest.raises(ValueError, match="registered twice"):
        reg.add("a", 2)
    assert reg.get("a") == 1 and reg.names() == ["a"]
    with pytest.raises(UserError, match="unknown widget 'b'.*known: a"):
        reg.get("b")


@dataclasses.dataclass(frozen=True)
class Inner:
    lr: float = 1e-3
    epochs: int = 1


@dataclasses.dataclass(frozen=True)
class Outer:
    name: str = "x"
    beta: float = 0.01
    flag: bool = False
    inner: Inner = Inner()
    tags: tuple[str, ...] = ()


def test_config_yaml_and_overrides(tmp_path):
    p = tmp_path / "c.yaml"
    p.write_text("beta: 0.05\ninner:\n  epochs: 3\n")
    cfg = load_config(Outer, p, ["inner.lr=2e-5", "flag=true", "tags=a,b"])
    assert cfg == Outer(beta=0.05, flag=True, inner=Inner(lr=2e-5, epochs=3), tags=("a", "b"))


@pytest.mark.parametrize(
    "text,overrides,match",
    [
        ("betta: 1\n", [], "unknown field 'betta'"),
        ("inner:\n  epochs: 1.5\n", [], "inner.epochs: expected an integer"),
        ("beta: [1\n", [], r"c.yaml:\d+: malformed YAML"),
        ("", ["beta=abc"], "beta: expected a number"),
        ("", ["nokey"], "expected key=value"),
    ],
)
def test_config_errors_name_the_field(tmp_path, text, overrides, match):
    p = tmp_path / "c.yaml"
    p.write_text(text)
    with pytest.raises(UserError, match=match):
        load_config(Outer, p, overrides)


def test_jsonl_errors_name_file_and_line(tmp_path):
    p = tmp_path / "x.jsonl"
    p.write_text('{"a": 1}\n{"a": \n')
    with pytest.raises(UserError, match=r"x.jsonl:2: invalid JSON"):
        read_jsonl(p)
    p.write_text('{"a": 1}\n[1]\n')
    with pytest.raises(UserError, match=r"x.jsonl:2: expected a JSON object"):
        read_jsonl(p)


def test_read_jsonl_makes_rows_with_the_collector_paused(tmp_path):
    """An artifact's rows are built with the cyclic collector off (each full collection
    rescans the whole heap) and it is back as it was afterwards, a bad line included."""
    import gc

    p = tmp_path / "x.jsonl"
    p.write_text('{"a": 1}\n{"a": 2}\n')
    seen = []
    assert read_jsonl(p, lambda r: seen.append(gc.isenabled()) or r["a"]) == [1, 2]
    assert seen == [False, False] and gc.isenabled()
    p.write_text('{"a": 1}\n{"a": \n')
    with pytest.raises(UserError, match=r"x.jsonl:2"):
        read_jsonl(p)
    assert gc.isenabled()
    gc.disable()
    try:  # a caller that turned it off keeps it off
        p.write_text('{"a": 1}\n{"a": ')  # a cut tail, ignored
        assert read_jsonl(p, allow_partial_tail=True) == [{"a": 1}]
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_appender_repairs_a_cut_tail(tmp_path):
    p = tmp_path / "log.jsonl"
    p.write_text('{"i": 0}\n{"i": 1')  # killed mid-write
    assert read_jsonl(p, allow_partial_tail=True) == [{"i": 0}]
    with JsonlAppender(p) as log:
        log.write({"i": 1})
    assert read_jsonl(p) == [{"i": 0}, {"i": 1}]


def test_atomic_write_leaves_no_temp(tmp_path):
    atomic_write_json(tmp_path / "r.json", {"b": 1, "a": 2})
    assert json.loads((tmp_path / "r.json").read_text()) == {"a": 2, "b": 1}
    assert [f.name for f in tmp_path.iterdir()] == ["r.json"]


def test_ledger_flops_and_budget():
    led = Ledger(n_params=1000, budget_flops=2e6)
    led.add_inf("rollouts", 400)
    led.add_train("actor", 100)
    assert led.total_flops == 2 * 1000 * (400 + 3 * 100)
    assert led.to_dict()["stages"]["actor"]["flops"] == 2 * 1000 * 300
    led.check_budget()
    led.add_train("actor", 200)
    with pytest.raises(BudgetExhausted):
        led.check_budget()
    assert Ledger.from_dict(led.to_dict()).total_flops == led.total_flops


def test_a_stage_run_by_a_larger_model_is_charged_at_its_size():
    """DAPO's critic on a 16x backbone: its stage costs 16x per token, and the size survives
    the round trip through results.json and a merge."""
    led = Ledger(n_params=1000)
    led.add_inf("rollouts", 400)
    led.add_train("critic", 100)
    led.set_params("critic", 16000)
    assert led.stage_flops("critic") == 2 * 16000 * 300
    assert led.total_flops == 2 * 1000 * 400 + 2 * 16000 * 300
    d = led.to_dict()
    assert d["stages"]["critic"]["n_params"] == 16000 and "n_params" not in d["stages"]["rollouts"]
    assert Ledger.from_dict(d).total_flops == led.total_flops
    merged = Ledger(n_params=1000)
    merged.merge(led, prefix="it1.")
    assert merged.total_flops == led.total_flops


def test_config_overrides_do_not_mutate_the_base_preset(tmp_path):
    preset = {"inner": {"epochs": 2}}
    with pytest.raises(UserError):
        load_config(Outer, None, ["inner.lrr=1"], base=preset)
    load_config(Outer, None, ["inner.lr=0.5"], base=preset)
    assert preset == {"inner": {"epochs": 2}}
