"""Bad input to every subcommand: one line ``error: ...`` naming the flag / file:line / field,
exit status 2, no traceback, and nothing written or changed (the whole working directory is
compared byte for byte before and after).

Adding a case is one line in CASES: (argv, expected substring of the error). ``{d}`` in argv is
the test's directory, which holds the FILES below (and ``toy``: a copy of the embedded default
policy, ``spec.yaml``: a copy of the arith leaderboard spec with its rendered tables); ``{toy}``
is the shipped policy itself.
"""

import json
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TOY_DATA = [{"id": "1", "question": "What is 2+2?", "answer": "4"}]

FILES = {
    "A.jsonl": "".join(json.dumps(r) + "\n" for r in TOY_DATA),
    "q_int.jsonl": '{"id": "1", "question": 123, "answer": "4"}\n',
    "q_null.jsonl": '{"id": "1", "question": null, "answer": "4"}\n',
    "q_list.jsonl": '{"id": "1", "question": ["a"], "answer": "4"}\n',
    "binary.jsonl": b'{"prediction": "4", "gold": "4"}\n\xff\xfe\x00\x01\n',
    "binary.yaml": b"name: x\n\xff\xfe\x00\n",
    "binary.json": b'[\n{"question": "\xff"}]\n',
    "pred_list.jsonl": '{"prediction": ["4"], "gold": "4"}\n',
    "gold_null.jsonl": '{"prediction": "4", "gold": null}\n',
    "code_bad.jsonl": '{"program": "print(1)", "tests": []}\n',
    "ok.jsonl": '{"prediction": "4", "gold": "4"}\n',
    "empty_runs/.keep": "",
}

# (argv, substring of the one-line error); exit status 2 unless the argv says otherwise
CASES = [
    # eval: every option checked before anything is loaded or written
    ("eval --tasks arith --top-p 2 --out {d}/runs --run-id r", "--top-p must be in (0, 1]"),
    ("eval --tasks arith --temperature -1 --out {d}/runs", "--temperature must be >= 0"),
    ("eval --tasks arith --n 0 --out {d}/runs", "--n must be at least 1"),
    ("eval --tasks arith --n 4 --out {d}/runs", "--n > 1 needs --temperature > 0"),
    ("eval --tasks arith --limit 0 --out {d}/runs", "--limit must be at least 1"),
    ("eval --tasks arith --max-new-tokens -5 --out {d}/runs", "--max-new-tokens must be >= 0"),
    ("eval --tasks arith --batch-size 0 --out {d}/runs", "--batch-size must be at least 1"),
    ("eval --tasks arith --out {d}/A.jsonl", "--out {d}/A.jsonl: not a directory"),
    ("eval --tasks arith --out {d}/A.jsonl/sub", "{d}/A.jsonl is not a directory"),
    ("eval --tasks arith --out /proc/dapo-bench-test", "not writable"),
    ("eval --tasks arith --out {d}/runs --run-id ../escape", "--run-id '../escape': must be one"),
    ("eval --tasks arith --out {d}/runs --run-id a/b", "no '/'"),
    ("eval --tasks nosuch --out {d}/runs", "unknown task 'nosuch'"),
    ("eval --tasks gsm8k --model {toy} --data-file gsm8k={d}/q_int.jsonl --out {d}/runs",
     "q_int.jsonl: row 1: field 'question' must be text, got int 123"),
    ("eval --tasks gsm8k --model {toy} --data-file gsm8k={d}/q_null.jsonl --out {d}/runs",
     "q_null.jsonl: row 1: field 'question' is empty"),
    ("eval --tasks gsm8k --model {toy} --data-file gsm8k={d}/q_list.jsonl --out {d}/runs",
     "field 'question' must be text, got list"),
    ("eval --tasks gsm8k --model {toy} --data-file gsm8k={d}/binary.jsonl --out {d}/runs",
     "binary.jsonl:2: not UTF-8 text"),
    ("eval --tasks gsm8k --model {toy} --data-file gsm8k={d}/binary.json --out {d}/runs",
     "binary.json:2: not UTF-8 text"),
    ("eval --tasks gsm8k --model {toy} --data-file gsm8k={d} --out {d}/runs",
     "not a regular file"),
    ("eval --tasks gsm8k --model {toy} --data-file gsm8k={d}/none.jsonl --out {d}/runs",
     "none.jsonl: no such file"),
    # a model directory that cannot be loaded
    ("eval --tasks arith --model {d}/toy_bad_type --out {d}/runs", "field 'hidden_size'"),
    ("eval --tasks arith --model {d}/toy_empty_cfg --out {d}/runs", "not a model config"),
    ("eval --tasks arith --model {d}/toy_bad_weights --out {d}/runs", "cannot load model"),
    ("eval --tasks arith --model {d}/toy_binary_cfg --out {d}/runs",
     "config.json:1: not UTF-8 text"),
    ("eval --tasks arith --model {d}/nomodel --out {d}/runs", "not a model directory"),
    # verify: math and code name FILE:LINE alike; --out checked before the work
    ("verify {d}/pred_list.jsonl", "pred_list.jsonl:1: field 'prediction' must be a string"),
    ("verify {d}/gold_null.jsonl", "gold_null.jsonl:1: field 'gold' is missing (null)"),
    ("verify --verifier code {d}/code_bad.jsonl", "code_bad.jsonl:1: field 'tests'"),
    ("verify {d}/binary.jsonl", "binary.jsonl:2: not UTF-8 text"),
    ("verify {d}", "not a regular file"),
    ("verify {d}/ok.jsonl --out {d}/ok.jsonl", "is the input file"),
    ("verify {d}/ok.jsonl --out {d}", "is a directory, not a regular file"),
    ("verify {d}/ok.jsonl --out /proc/dapo-bench-test/out.jsonl", "not writable"),
    ("verify {d}/ok.jsonl --workers 0", "--workers must be > 0"),
    # leaderboard: a typo'd --runs, an empty one, a bad spec or --out writes nothing
    ("leaderboard {d}/spec.yaml --runs {d}/nosuch", "--runs {d}/nosuch: no such directory"),
    ("leaderboard {d}/spec.yaml --runs {d}/empty_runs", "no result file matches"),
    ("leaderboard {d}/binary.yaml", "binary.yaml:2: not UTF-8 text"),
    ("leaderboard {d}/spec.yaml --out {d}/A.jsonl", "not a directory"),
    ("leaderboard {d}/nosuch.yaml", "nosuch.yaml: no such file"),
    # serve: every flag before the server starts
    ("serve --port 70000", "--port must be in 0..65535, got 70000"),
    ("serve --workers 0", "--workers must be > 0, got 0"),
    ("serve --max-body-bytes -1", "--max-body-bytes must be > 0, got -1"),
    ("serve --verifier nosuch", "--verifier must be auto or one of"),
    ("serve --host 10.0.0.1", "--host 10.0.0.1 is not loopback"),
    ("audit {d}/nosuch --json", "{d}/nosuch: no such run directory"),
    # train: every option before any generation
    ("train --method dapo --budget-flops -1 --out {d}/runs", "--budget-flops must be > 0"),
    ("train --method dapo --set actor.epochs=0 --out {d}/runs", "epochs must be >= 1"),
    ("train --method sft --set nosuch=1 --out {d}/runs", "error: unknown field 'nosuch' (fields:"),
    ("train --method dapo --eval-tasks nosuch --out {d}/runs", "unknown task 'nosuch'"),
    ("train --method dapo --deepspeed bogus --out {d}/runs", "--deepspeed: expected none"),
    ("train --method dapo --eval-limit 0 --out {d}/runs", "--eval-limit must be >= 1"),
    ("train --method dapo --out {d}/A.jsonl", "--out {d}/A.jsonl: not a directory"),
    ("train --method dapo --out {d}/runs --run-id ../x", "--run-id '../x'"),
    ("train --method dapo --config {d}/binary.yaml --out {d}/runs", "binary.yaml:2: not UTF-8"),
    ("train --method sft --beta 0.1 --out {d}/runs", "--beta is not a sft option"),
    ("train --method sft --micro-batch -1 --out {d}/runs", "--micro-batch must be an integer >= 0"),
    ("train --method sft --micro-batch 4 --deepspeed zero2 --out {d}/runs",
     "--micro-batch 4 needs --deepspeed none"),
    ("train --method sft --control-batch-size 0 --out {d}/runs", "--control-batch-size must be >= 1"),
    ("train --method sft --control-lr -1 --out {d}/runs", "--control-lr must be > 0"),
    ("train --method sft --checkpoint-every -1 --out {d}/runs",
     "--checkpoint-every must be an integer >= 0"),
]


def _toy_copy(dst: Path) -> Path:
    from dapo_bench.toy import default_model_path

    shutil.copytree(default_model_path(), dst)
    return dst


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    d = tmp_path_factory.mktemp("bad")
    for name, content in FILES.items():
        p = d / name
        p.parent.mkdir(parents=True, exist_ok=True)
        (p.write_bytes if isinstance(content, bytes) else p.write_text)(content)
    cfg = json.loads((_toy_copy(d / "toy_bad_type") / "config.json").read_text())
    (d / "toy_bad_type" / "config.json").write_text(json.dumps({**cfg, "hidden_size": "big"}))
    (_toy_copy(d / "toy_empty_cfg") / "config.json").write_text("{}")
    weights = next(_toy_copy(d / "toy_bad_weights").glob("*.safetensors"))
    weights.write_bytes(b"\x00garbage" * 64)
    (_toy_copy(d / "toy_binary_cfg") / "config.json").write_bytes(b"\xff\xfe{}")
    (d / "nomodel").mkdir()
    # a leaderboard spec whose rendered tables are already there (a typo must not blank them)
    spec = (ROOT / "leaderboards" / "arith.yaml").read_text()
    (d / "spec.yaml").write_text(spec.replace("name: arith\n", "name: spec\n", 1))
    for ext in ("md", "csv", "tex"):
        (d / f"spec.{ext}").write_text(f"committed {ext}\n")
    return d


def _snapshot(root: Path) -> dict:
    return {str(p.relative_to(root)): p.read_bytes() if p.is_file() else None
            for p in sorted(root.rglob("*"))}


@pytest.mark.parametrize(("argv", "expect"), CASES, ids=[c[0][:60] for c in CASES])
def test_bad_input(argv, expect, workdir, cli):
    from dapo_bench.toy import default_model_path

    fill = {"d": str(workdir), "toy": str(default_model_path())}
    before = _snapshot(workdir)
    code, err = cli(argv.format(**fill).split())
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code == 2, err
    assert "Traceback" not in err and lines, err
    assert lines[-1].startswith("error: ") and expect.format(**fill) in lines[-1], err
    assert _snapshot(workdir) == before  # nothing written, nothing lost
