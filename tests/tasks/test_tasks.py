"""Task specs and loading: every spec parses, the math and code suites load the real files in
../shared/data, and bad input (offline with no copy, corrupt files, bad specs) is a UserError."""

import json
import os

import pytest
from _data import DATA

from dapo_bench.errors import UserError
from dapo_bench.tasks import SUITES, TASKS, load_task, resolve_tasks
from dapo_bench.tasks.spec import parse_spec
from dapo_bench.tasks.task import fill

needs_data = pytest.mark.skipif(not DATA.is_dir(), reason=f"{DATA} absent (benchmark files)")

# name -> (problem count, first problem's gold)
EXPECTED = {
    "gsm8k": (1319, "18"),
    "math500": (500, "4"),
    "college_math": (2818, "$10-4 n$"),
    "minerva_math": (272, None),
    "olympiadbench": (675, "2"),
    "aime24": (30, "204"),
    "amc23": (40, "27"),
    "humaneval": (164, None),
    "mbpp": (399, None),
    "leetcode": (200, None),
    "code_contests": (165, None),
    "codeforces": (408, None),
}


@pytest.fixture(autouse=True)
def _offline(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("DAPO_BENCH_OFFLINE", "1")  # origin downloads (source.url) too
    monkeypatch.setenv("DAPO_BENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("DAPO_BENCH_DATA_DIR", raising=False)


def test_registries_and_suites():
    names = TASKS.names()
    for t in [*EXPECTED, "livecodebench", "taco", "arith", "arith_ood"]:
        assert t in names
        assert TASKS.entry(t).help  # one-line description for `dapo-bench list`
    assert set(SUITES.names()) == {"math", "code", "arith", "all"}
    assert set(SUITES.get("math")) | set(SUITES.get("code")) == set(EXPECTED)
    assert set(SUITES.get("all")) == set(EXPECTED) | {"arith", "arith_ood"}
    assert resolve_tasks("arith", ["gsm8k", "arith"]) == ["arith", "arith_ood", "gsm8k"]
    with pytest.raises(UserError, match="unknown task 'nope'"):
        resolve_tasks(None, ["nope"])
    with pytest.raises(UserError, match="unknown suite"):
        resolve_tasks("nope")
    for entry in TASKS:
        assert entry.obj.version and len(entry.obj.hash) == 16


@needs_data
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_every_suite_task_loads_real_data(name):
    task = load_task(name, data_dir=DATA)
    count, first_gold = EXPECTED[name]
    assert len(task.problems) == count
    assert len({p.id for p in task.problems}) == count
    assert all(p.question.strip() for p in task.problems)
    if first_gold is not None:
        assert task.problems[0].gold == first_gold
    assert task.prompt(task.problems[0]).endswith("\n")


@needs_data
def test_gold_preprocessing_on_real_rows():
    gsm = load_task("gsm8k", data_dir=DATA, limit=50)
    assert all("####" not in p.gold and "," not in p.gold for p in gsm.problems)
    minerva = load_task("minerva_math", data_dir=DATA, limit=20)
    assert all(p.gold and "boxed" not in p.gold for p in minerva.problems)
    amc = load_task("amc23", data_dir=DATA)
    assert all(not p.gold.endswith(".0") for p in amc.problems)
    ob = load_task("olympiadbench", data_dir=DATA)
    multi = [p for p in ob.problems if "," in p.gold]
    assert multi and all(isinstance(p.gold, str) for p in ob.problems)
    math500 = load_task("math500", data_dir=DATA, limit=5)
    assert set(math500.problems[0].subjects) == {"type", "level"}
    cm = load_task("college_math", data_dir=DATA, limit=3)
    assert cm.problems[0].subjects == {"data_topic": "college_math.algebra"}
    he = load_task("humaneval", data_dir=DATA, limit=2)
    assert set(he.problems[0].gold) == {"test", "entry_point", "prompt"}
    assert he.problems[0].extra["prompt"].startswith("from typing import List")
    mb = load_task("mbpp", data_dir=DATA, limit=2)
    assert mb.problems[0].gold["test_list"][0].startswith("assert")
    cf = load_task("codeforces", data_dir=DATA, limit=2)
    assert isinstance(cf.problems[0].gold, list) and "input" in cf.problems[0].gold[0]


def test_arith_builtin_splits():
    from dapo_bench.arith import PROMPT_TEMPLATE

    t = load_task("arith", limit=7)
    assert len(t.problems) == 7 and t.split == "test"
    p = t.problems[0]
    assert t.prompt(p) == PROMPT_TEMPLATE.format(question=p.question)
    assert p.subjects["n_steps"] in {"2", "3", "4"}
    assert load_task("arith_ood", limit=3).problems[0].subjects["n_steps"] == "5"
    train = load_task("arith", split="rl_train", limit=3)
    assert train.split == "rl_train" and train.problems[0].id != p.id
    with pytest.raises(UserError, match="unknown split 'nosuch'"):
        load_task("arith", split="nosuch")


def test_offline_without_local_copy_names_file_and_flag():
    with pytest.raises(UserError) as e:
        load_task("gsm8k")
    msg = str(e.value)
    assert "openai/gsm8k" in msg and "--data-dir" in msg and "math/gsm8k.jsonl" in msg
    with pytest.raises(UserError, match="DAPO_BENCH_OFFLINE.*--data-file"):
        load_task("leetcode")  # an origin download, refused offline when not cached


def test_data_dir_errors(tmp_path):
    with pytest.raises(UserError, match="no such directory"):
        load_task("gsm8k", data_dir=tmp_path / "missing")
    with pytest.raises(UserError, match=r"math/gsm8k\.jsonl not found"):
        load_task("gsm8k", data_dir=tmp_path)
    (tmp_path / "math").mkdir()
    (tmp_path / "math" / "gsm8k.jsonl").write_text(
        '{"question": "1+1?", "answer": "#### 2", "idx": 0}\n{"question": broken\n')
    with pytest.raises(UserError, match=r"gsm8k\.jsonl:2: invalid JSON"):
        load_task("gsm8k", data_dir=tmp_path)
    (tmp_path / "math" / "gsm8k.jsonl").write_text('{"question": "1+1?", "idx": 0}\n')
    with pytest.raises(UserError, match="row 1: field 'answer' missing"):
        load_task("gsm8k", data_dir=tmp_path)
    (tmp_path / "math" / "gsm8k.jsonl").write_text('{"question": "q", "answer": "2", "idx": 0}\n')
    with pytest.raises(UserError, match=r"row 1: gold \(gsm8k\): no '####'"):
        load_task("gsm8k", data_dir=tmp_path)


def test_local_file_forms(tmp_path):
    rows = [{"question": f"{i}+1?", "answer": f"#### {i + 1}", "idx": i} for i in range(3)]
    (tmp_path / "g.json").write_text(json.dumps(rows))
    assert [p.gold for p in load_task("gsm8k", path=tmp_path / "g.json").problems] == [
        "1", "2", "3"]
    import datasets

    datasets.Dataset.from_list(rows).to_parquet(str(tmp_path / "g.parquet"))
    t = load_task("gsm8k", path=tmp_path / "g.parquet", limit=2)
    assert [p.id for p in t.problems] == ["0", "1"] and os.environ["HF_HUB_OFFLINE"] == "1"
    (tmp_path / "g.csv").write_text("x")
    with pytest.raises(UserError, match="unknown file type"):
        load_task("gsm8k", path=tmp_path / "g.csv")


def _spec(tmp_path, text, name="mytask"):
    p = tmp_path / f"{name}.yaml"
    p.write_text(text)
    return p


def test_bad_specs_name_file_and_field(tmp_path):
    ok = ("name: mytask\nversion: 1\ndescription: d\nsource: {file: x.jsonl}\n")
    assert parse_spec(_spec(tmp_path, ok)).version == "1"
    cases = {
        "name: mytask\nversion: [1\n": "malformed YAML",
        "name: mytask\nversion: 1\ndescription: d\n": "field 'source' missing",
        ok + "metrics: [acc, f1]\n": "unknown 'f1'",
        ok + "colour: red\n": "unknown field 'colour'",
        ok + "prompt: {style: fancy}\n": "prompt.style",
        ok.replace("source: {file: x.jsonl}", "source: {}"): "source needs",
        ok.replace("name: mytask", "name: other"): "must match the file name",
    }
    for text, msg in cases.items():
        with pytest.raises(UserError, match=msg) as e:
            parse_spec(_spec(tmp_path, text))
        assert "mytask.yaml" in str(e.value)


def test_prompt_rendering_chat_and_fill():
    assert fill("{question} \\boxed{} {x}", {"question": "Q?"}) == "Q? \\boxed{} {x}"
    from dapo_bench.toy.tokenizer import build_char_tokenizer

    task = load_task("arith", limit=1)
    gsm = type(task)(TASKS.get("gsm8k"), task.problems, "test")
    p = task.problems[0]
    tok = build_char_tokenizer()
    plain = gsm.prompt(p, tok)  # no chat template: "system\n\nuser\n"
    assert plain.startswith("Please reason step by step") and plain.endswith(p.question + "\n")
    tok.chat_template = ("{% for m in messages %}<{{ m['role'] }}>{{ m['content'] }}\n"
                         "{% endfor %}{% if add_generation_prompt %}<assistant>{% endif %}")
    chat = gsm.prompt(p, tok)
    assert chat.startswith("<system>Please reason step by step, and put your final answer "
                           "within \\boxed{}.\n<user>" + p.question)
    assert chat.endswith("<assistant>")
    tok.chat_template = ("{% for m in messages %}{% if m['role'] == 'system' %}"
                         "{{ raise_exception('no system') }}{% endif %}<{{ m['role'] }}>"
                         "{{ m['content'] }}{% endfor %}")
    merged = gsm.prompt(p, tok)  # system role rejected: merged into the user turn
    assert merged.startswith("<user>Please reason step by step") and p.question in merged


@needs_data
def test_taco_and_livecodebench_local_forms(tmp_path):
    """No local copies ship; rows in each benchmark's own layout, built from real code_contests
    and codeforces tests, load through --data-dir and give tests the code verifier parses."""
    from dapo_bench.verifiers.code import parse_tests

    from dapo_bench.tasks.sources import read_file

    cc = read_file(DATA / "code" / "code_contests.json")[:3]
    cf = read_file(DATA / "code" / "codeforces.json")[:3]
    (tmp_path / "code").mkdir()
    with (tmp_path / "code" / "taco.jsonl").open("w") as f:
        for r in cc:
            f.write(json.dumps({"question": r["problem"], "starter_code": "",
                                "input_output": json.dumps(r["tests"]),
                                "difficulty": "EASY"}) + "\n")
    with (tmp_path / "code" / "livecodebench.jsonl").open("w") as f:
        for i, r in enumerate(cf):
            cases = [{**c, "testtype": "stdin"} for c in r["tests"]]
            f.write(json.dumps({"question_id": f"q{i}", "question_content": r["problem"],
                                "starter_code": "", "public_test_cases": json.dumps(cases),
                                "private_test_cases": "", "metadata": "{}",
                                "difficulty": "easy", "platform": "codeforces"}) + "\n")
    taco = load_task("taco", data_dir=tmp_path)
    lcb = load_task("livecodebench", data_dir=tmp_path)
    assert len(taco.problems) == len(lcb.problems) == 3
    assert lcb.problems[0].subjects == {"difficulty": "easy", "platform": "codeforces"}
    for task, rows in ((taco, cc), (lcb, cf)):
        for p, r in zip(task.problems, rows):
            spec = parse_tests(p.gold)
            assert spec.kind == "stdio" and spec.n_tests == len(
                r["tests"]["inputs"] if isinstance(r["tests"], dict) else r["tests"])
