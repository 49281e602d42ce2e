"""Every benchmark task has a source a user's machine can reach with no manual step, and the
loading code behind each kind works, tested offline: pinned origin downloads (``source.url``)
through ``file://`` URLs of the same bytes in ../shared/data (checked against the spec's pinned
sha256), the cache, digest mismatches and offline errors; hub sources through a local directory
in hub format built from the shared files with the hub's column names."""

import hashlib
import json
import re
from dataclasses import replace

import pytest
from _data import DATA

from dapo_bench.errors import UserError
from dapo_bench.io import rows_digest
from dapo_bench.tasks import SUITES, TASKS, load_task
from dapo_bench.tasks.download import cached_path
from dapo_bench.tasks.sources import load_rows
from dapo_bench.tasks.spec import parse_spec
from dapo_bench.tasks.task import build_problems

needs_data = pytest.mark.skipif(not DATA.is_dir(), reason=f"{DATA} absent (benchmark files)")
PINNED_RAW = re.compile(r"https://raw\.githubusercontent\.com/[\w.-]+/[\w.-]+/[0-9a-f]{40}/\S+")
URL_TASKS = sorted(e.name for e in TASKS if e.obj.source.url is not None)


@pytest.fixture(autouse=True)
def _offline(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("DAPO_BENCH_OFFLINE", "1")
    monkeypatch.setenv("DAPO_BENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("DAPO_BENCH_DATA_DIR", raising=False)


def test_every_task_declares_a_reachable_source():
    # A task added without a hub id or a pinned origin download fails here.
    suite_tasks = set(SUITES.get("math")) | set(SUITES.get("code"))
    for entry in TASKS:
        src = entry.obj.source
        if src.builtin:
            assert entry.name not in suite_tasks or entry.name.startswith("arith")
            continue
        assert src.hf or src.url, f"{entry.name}: neither a hub dataset nor an origin URL"
        if src.url is not None:
            assert PINNED_RAW.fullmatch(src.url.url), f"{entry.name}: URL not pinned at a commit"
            assert src.url.license.strip(), f"{entry.name}: no license noted"
        if src.hf is not None:
            assert src.hf.path and src.hf.split, entry.name
        assert src.file, f"{entry.name}: no --data-dir file name (the offline copy)"
    assert {"college_math", "minerva_math", "leetcode", "code_contests", "codeforces", "mbpp"} <= set(
        URL_TASKS)


@needs_data
@pytest.mark.parametrize("name", URL_TASKS)
def test_pinned_sha256_is_the_shared_file(name):
    # ../shared/data holds the origin's files; the pinned digest must be theirs byte for byte.
    spec = TASKS.get(name)
    data = (DATA / spec.source.file).read_bytes()
    assert hashlib.sha256(data).hexdigest() == spec.source.url.sha256


def _via(spec, url):
    return replace(spec, source=replace(spec.source, url=replace(spec.source.url, url=url)))


def _load(spec, **kw):
    rows, overrides, origin = load_rows(spec, **kw)
    return rows, origin, build_problems(spec, rows, origin, overrides)


@needs_data
@pytest.mark.parametrize("name", URL_TASKS)
def test_url_source_downloads_caches_and_maps_like_the_local_copy(name):
    spec = TASKS.get(name)
    local = (DATA / spec.source.file).resolve()
    rows, origin, problems = _load(_via(spec, local.as_uri()))
    assert origin == local.as_uri()
    cached = cached_path(name, spec.source.url)
    assert cached.is_file() and cached.read_bytes() == local.read_bytes()
    ref = load_task(name, data_dir=DATA)
    assert [(p.id, p.question, p.gold) for p in problems] == [
        (p.id, p.question, p.gold) for p in ref.problems]
    assert rows_digest(rows) == ref.rows_hash and ref.n_total == len(rows)
    # the second load reads the cache: the (unreachable, offline) https URL is never opened
    rows2, origin2, _ = _load(spec)
    assert rows2 == rows and origin2 == spec.source.url.url


def test_url_digest_mismatch_and_offline_errors_cache_nothing(tmp_path):
    spec = TASKS.get("leetcode")
    with pytest.raises(UserError, match="DAPO_BENCH_OFFLINE is set") as e:
        load_task("leetcode")
    assert "--data-file" in str(e.value)
    bad = tmp_path / "leetcode.json"
    bad.write_text(json.dumps([{"problem": "p", "tests": "{}"}]))
    with pytest.raises(UserError, match="has sha256 .* the spec pins") as e:
        _load(_via(spec, bad.as_uri()))
    assert not cached_path("leetcode", spec.source.url).exists()
    with pytest.raises(UserError, match="cannot download"):
        _load(_via(spec, (tmp_path / "missing.json").as_uri()))


def test_bad_url_sources_name_file_and_field(tmp_path):
    sha = "ab" * 32
    base = "name: t\nversion: 1\ndescription: d\nsource:\n  url: {url: %s, sha256: %s, license: MIT}\n"
    p = tmp_path / "t.yaml"
    p.write_text(base % ("https://x.org/a/b.jsonl", sha))
    assert parse_spec(p).source.url.license == "MIT"
    for url, digest, msg in [("http://x.org/b.jsonl", sha, "https:// or file://"),
                             ("https://x.org/b.jsonl", "abc", "64 lowercase hex"),
                             ("https://x.org/b.csv", sha, r"\.jsonl, \.json or \.parquet")]:
        p.write_text(base % (url, digest))
        with pytest.raises(UserError, match=msg) as e:
            parse_spec(p)
        assert "t.yaml" in str(e.value) and "source.url" in str(e.value)


# local field -> hub column, as the hub datasets' cards name them (HuggingFaceH4/MATH-500,
# HuggingFaceH4/aime_2024, openai/gsm8k: no id column, ids are row numbers, openai_humaneval)
HUB_COLUMNS = {
    "math500": {"problem": "problem", "solution": "solution", "expected_answer": "answer",
                "type": "subject", "level": "level", "id": "unique_id"},
    "aime24": {"id": "id", "problem": "problem", "answer": "answer"},
    "gsm8k": {"question": "question", "answer": "answer"},
    "humaneval": {k: k for k in ("task_id", "prompt", "canonical_solution", "test",
                                 "entry_point")},
}


@needs_data
@pytest.mark.parametrize("name", sorted(HUB_COLUMNS))
def test_hub_field_mapping_on_a_local_hub_format_directory(name, tmp_path):
    import datasets

    spec = TASKS.get(name)
    ref = load_task(name, data_dir=DATA)
    rows = [json.loads(x) for x in (DATA / spec.source.file).read_text().splitlines() if x.strip()]
    cols = HUB_COLUMNS[name]
    hub_rows = [{new: r[old] for old, new in cols.items()} for r in rows]
    snap = tmp_path / "snapshot"
    hf = spec.source.hf
    sub = hf.name or "data"  # a named config lives in its own folder, declared in the card
    (snap / sub).mkdir(parents=True)
    datasets.Dataset.from_list(hub_rows).to_parquet(str(snap / sub / f"{hf.split}-00000.parquet"))
    if hf.name:
        (snap / "README.md").write_text(
            f"---\nconfigs:\n- config_name: {hf.name}\n  data_files:\n"
            f"  - split: {hf.split}\n    path: {hf.name}/{hf.split}-*\n---\n")
    local = replace(spec, source=replace(spec.source, hf=replace(spec.source.hf, path=str(snap))))
    _, origin, problems = _load(local)
    assert origin == f"hf:{snap}"
    assert [(p.id, p.question, p.gold, p.subjects) for p in problems] == [
        (p.id, p.question, p.gold, p.subjects) for p in ref.problems]


@needs_data
def test_eval_without_data_dir_reads_origin_files_from_the_cache(tmp_path):
    # A user's machine after the first download: no --data-dir, no network, results name the URL.
    import shutil

    from dapo_bench.eval import evaluate
    from dapo_bench.generation.base import Completion, Generator

    names = ["college_math", "minerva_math"]
    for name in names:
        spec = TASKS.get(name)
        dest = cached_path(name, spec.source.url)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(DATA / spec.source.file, dest)

    class Boxed(Generator):
        backend, model_path, tokenizer, n_params = "boxed", "boxed", None, 0

        def generate(self, prompts, params):
            return [[Completion("\\boxed{0}", 1, "stop")] * params.n for _ in prompts]

    res = evaluate(Boxed(), names, run_dir=tmp_path / "r", limit=3, quiet=True)
    for name in names:
        t = res["tasks"][name]
        assert t["source"] == TASKS.get(name).source.url.url
        assert (t["n_problems"], t["n_problems_total"]) == (3, {"college_math": 2818,
                                                                "minerva_math": 272}[name])
        assert t["rows_hash"] == load_task(name, data_dir=DATA, limit=3).rows_hash


@needs_data
def test_download_over_http_checks_caches_and_reports(monkeypatch, capsys):
    # The network path itself, against a local HTTP server serving ../shared/data.
    import functools
    import threading
    from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

    from dapo_bench.tasks.download import fetch

    monkeypatch.delenv("DAPO_BENCH_OFFLINE")
    for var in ("http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(var, raising=False)  # 127.0.0.1 directly
    handler = functools.partial(SimpleHTTPRequestHandler, directory=str(DATA))
    handler.log_message = lambda *a: None
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}"
        src = TASKS.get("codeforces").source.url
        path = fetch("codeforces", replace(src, url=f"{base}/code/codeforces.json"))
        assert path == cached_path("codeforces", src)
        assert path.read_bytes() == (DATA / "code" / "codeforces.json").read_bytes()
        assert "downloading" in capsys.readouterr().err
        assert fetch("codeforces", src) == path  # cached: no second download, no network
        assert "downloading" not in capsys.readouterr().err
        with pytest.raises(UserError, match="cannot download .*HTTPError"):
            fetch("leetcode", replace(TASKS.get("leetcode").source.url, url=f"{base}/nope.json"))
    finally:
        server.shutdown()
        server.server_close()
