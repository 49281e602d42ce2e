"""``dapo-bench serve`` for real: a uvicorn server started as a subprocess on a free loopback
port, driven over HTTP. An OpenRLHF-shaped client gets the verifier's rewards; /verify answers
what ``dapo-bench verify`` writes, item for item, on math and code items; every refusal (400,
413, 429) is one line and the server answers afterwards; SIGTERM drains what is in flight and
exits 0; a code worker SIGKILLed in the middle of a program is replaced and its item rerun,
never lost and never passed (killed twice: /get_reward answers 503, not a reward of 0).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading

import pytest
from _reward_server import CLI, Server

TIMEOUT = "3"  # seconds per item, for the server and the CLI alike


@pytest.fixture(scope="module")
def server():
    s = Server("--workers", "2", "--timeout", TIMEOUT, "--queue-size", "4",
               "--max-body-bytes", "100000")
    yield s
    assert s.stop() == 0


MATH = [
    {"prediction": "So the answer is \\boxed{\\frac{1}{2}}.", "gold": "0.5"},
    {"prediction": "The answer is 7.", "gold": "8"},
    {"prediction": "\\boxed{\\frac{\\sqrt{3}}{2}}", "gold": "\\sqrt{3}/2"},
    {"prediction": "We get x^2+2x+1, i.e. \\boxed{(x+1)^2}", "gold": "x^2+2x+1"},
    {"prediction": "I am not sure.", "gold": "3"},
    {"prediction": "Counting on: 1, 2, 3, 4", "gold": "4", "finish_reason": "length"},
    {"prediction": "#### 1331 and 1728", "gold": "1728 and 1331"},
    {"prediction": 42, "gold": 42.0},
]
SLEEP_THEN = "import time\ntime.sleep({s})\nprint(int(input()) * 2)\n"
STDIO = {"inputs": ["21\n"], "outputs": ["42\n"]}
CODE = [
    {"program": "print(int(input()) * 2)", "tests": STDIO},
    {"program": "print(int(input()) + 2)", "tests": STDIO},
    {"program": "raise ValueError('no')", "tests": STDIO},
    {"program": "def add(a, b):\n    return a + b\n",
     "tests": {"test": "def check(candidate):\n    assert candidate(1, 2) == 3\n",
               "entry_point": "add"}},
    {"program": "def add(a, b):\n    return a - b\n",
     "tests": {"test_list": ["assert add(1, 2) == 3"]}},
    {"program": "print(int(input()) * 2)", "tests": json.dumps(STDIO)},
]


def _cli_rows(tmp_path, verifier: str, items: list[dict]) -> list[dict]:
    src = tmp_path / f"{verifier}.jsonl"
    src.write_text("".join(json.dumps(it) + "\n" for it in items))
    out = subprocess.run([*CLI, "verify", str(src), "--verifier", verifier, "--timeout", TIMEOUT,
                          "--workers", "2"], check=False, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    return [json.loads(ln) for ln in out.stdout.splitlines()]


def _same(row: dict) -> dict:
    """A row without its timings (seconds, cpu_s): what must be equal run to run."""
    row = {k: v for k, v in row.items() if k != "seconds"}
    if "details" in row:
        row["details"] = {k: v for k, v in row["details"].items() if k != "cpu_s"}
    return row


def test_verify_equals_the_cli_item_for_item(server, tmp_path):
    for verifier, items in (("math", MATH), ("code", CODE)):
        code, body, _ = server.post("/verify", {"verifier": verifier, "items": items})
        assert code == 200, body
        assert [_same(r) for r in body["results"]] == \
            [_same(r) for r in _cli_rows(tmp_path, verifier, items)]
    passed = [r["passed"] for r in body["results"]]
    assert passed == [True, False, False, True, False, True]
    code, body, _ = server.post("/verify", {"verifier": "math", "items": MATH[:1],
                                            "options": {"explain": True}})
    assert body["results"][0]["answer_from"] == "box" and body["results"][0]["rule"]


def test_an_openrlhf_client_gets_the_verifiers_rewards(server):
    """As OpenRLHF's remote_rm_fn posts it: the query is prompt + response, labels are golds
    (or, for code, a tests object as JSON); rewards are read from the answer."""
    from dapo_bench.verifiers.math import verify

    prompts = [f"<|user|>Problem {i}: what is {i} + {i}?<|assistant|>" for i in range(6)]
    responses = [f"{i} + {i} = {2 * i + (i % 2)}, so \\boxed{{{2 * i + (i % 2)}}}"
                 for i in range(6)]
    labels = [str(2 * i) for i in range(6)]
    data = {"query": [p + r for p, r in zip(prompts, responses)], "prompts": prompts,
            "labels": labels}
    code, body, _ = server.post("/get_reward", data)
    assert code == 200, body
    want = [verify(r, g).reward for r, g in zip(responses, labels)]
    assert body["rewards"] == want == [1.0, 0.0, 1.0, 0.0, 1.0, 0.0]
    assert body["scores"] == want and body["extra_logs"]["passed"] == want
    fenced = "Here it is:\n```python\nprint(int(input()) * 2)\n```\n"
    code, body, _ = server.post("/get_reward", {
        "query": ["P" + fenced, "P" + fenced.replace("* 2", "* 3")], "prompts": ["P", "P"],
        "labels": [json.dumps(STDIO)] * 2, "verifier": "code"})
    assert code == 200 and body["rewards"] == [1.0, 0.0], body


BAD = [  # (path, raw body, status, words the one-line message must contain)
    ("/verify", b"{not json", 400, "malformed JSON"),
    ("/verify", b"[1, 2]", 400, "JSON object"),
    ("/verify", b'{"items": []}', 400, "'verifier' missing"),
    ("/verify", b'{"verifier": "chess", "items": []}', 400, "'verifier' must be one of"),
    ("/verify", b'{"verifier": "math"}', 400, "'items' missing"),
    ("/verify", b'{"verifier": "math", "items": [{"prediction": "1"}]}', 400,
     "items[0]: field 'gold' missing"),
    ("/verify", b'{"verifier": "math", "items": [{"prediction": "1", "gold": true}]}', 400,
     "items[0]: field 'gold' must be"),
    ("/verify", b'{"verifier": "code", "items": [{"program": "x", "tests": {"a": 1}}]}', 400,
     "items[0]: field 'tests'"),
    ("/verify", b'{"verifier": "math", "items": [], "options": {"timeout": 1}}', 400,
     "unknown timeout"),
    ("/get_reward", b'{"query": ["a"]}', 400, "'labels' missing"),
    ("/get_reward", b'{"query": ["a", "b"], "labels": ["1"]}', 400, "differ in length"),
    ("/get_reward", b'{"query": ["a"], "labels": ["{"], "verifier": "code"}', 400,
     "labels[0]: a string that is neither JSON nor a Python literal"),
    ("/verify", b'{"verifier": "math", "items": [' + b'{"prediction": "1", "gold": "1"},' * 4000
     + b'{"prediction": "1", "gold": "1"}]}', 413, "over the limit"),
    # no silent zero: a gold that is no gold is the caller's mistake, never a reward of 0
    ("/get_reward", b'{"query": ["a"], "labels": [""]}', 400,
     "labels[0] is empty (OpenRLHF sends the dataset column named by --data.label_key"),
    ("/get_reward", b'{"query": ["a"], "labels": ["  "]}', 400, "labels[0] is empty"),
    ("/get_reward", b'{"query": ["a"], "labels": [NaN]}', 400,
     "labels[0] is not a finite number (nan)"),
    ("/get_reward", b'{"query": ["a"], "labels": [1e999]}', 400,
     "labels[0] is not a finite number (inf)"),
    ("/get_reward", b'{"query": ["a"], "labels": [null]}', 400, "labels[0] is missing (null)"),
    ("/get_reward", b'{"query": ["a"], "labels": ["nan"]}', 400, "labels[0] is 'nan'"),
    ("/get_reward", b'{"query": ["a"], "labels": [[]]}', 400, "labels[0] is an empty list"),
    ("/get_reward/code", b'{"query": ["a"], "labels": ["2"]}', 400,
     "labels[0]: expected an object or a list, got int"),
    ("/get_reward/math", b'{"query": ["a"], "labels": [{"inputs": [], "outputs": []}]}', 400,
     "labels[0] must be a string, a number or a list of them, got dict"),
    ("/get_reward/chess", b'{"query": ["a"], "labels": ["1"]}', 400,
     "the path's verifier must be one of code, math"),
    ("/get_reward", b'{"query": ["a"], "labels": ["1"], "truncated": [1]}', 400,
     "field 'truncated' must be a list of 1 booleans"),
    ("/verify", b'{"verifier": "math", "items": [{"prediction": "1", "gold": ""}]}', 400,
     "items[0]: field 'gold' is empty"),
    ("/verify", b'{"verifier": "math", "items": [{"prediction": "1", "gold": NaN}]}', 400,
     "items[0]: field 'gold' is not a finite number"),
]


@pytest.mark.parametrize(("path", "raw", "status", "words"), BAD,
                         ids=[f"{s}-{w[:24]}" for _, _, s, w in BAD])
def test_a_bad_request_is_refused_in_one_line(server, path, raw, status, words):
    code, body, _ = server.request(path, raw)
    msg = json.loads(body)["error"]
    assert code == status and words in msg and "\n" not in msg, (code, msg)
    assert server.post("/verify", {"verifier": "math", "items": MATH[:1]})[0] == 200


def test_one_server_grades_both_kinds_by_the_labels_shape(server):
    """OpenRLHF sends no verifier: /get_reward routes each label by its shape (a tests object,
    or JSON of one: code; a string or a number: math), in one request, and every reward is
    /verify's verdict on the same item (the CLI's: the test above); /get_reward/<verifier>
    names it; a truncated flag grades a response as cut off (math: only a marked answer
    counts)."""
    fenced = "Here:\n```python\n{}\n```"
    math_items = MATH[:4] + [{"prediction": "Counting on: 1, 2, 3, 4", "gold": "4",
                              "finish_reason": "length"}]
    code_items = CODE[:3] + CODE[5:]
    labels = [m["gold"] for m in math_items] + [c["tests"] for c in code_items]
    responses = [m["prediction"] for m in math_items] + \
        [fenced.format(c["program"]) for c in code_items]
    order = [3, 5, 0, 6, 1, 7, 4, 2, 8]  # kinds interleaved
    data = {"query": ["P: " + responses[k] for k in order], "prompts": ["P: "] * len(order),
            "labels": [labels[k] for k in order],
            "truncated": [k == 4 for k in order]}
    code, body, _ = server.post("/get_reward", data)
    assert code == 200, body
    rows = [r for verifier, items in (("math", math_items), ("code", code_items))
            for r in server.post("/verify", {"verifier": verifier, "items": items})[1]["results"]]
    assert body["rewards"] == [float(rows[k]["passed"]) for k in order]
    assert body["reasons"] == [rows[k]["reason"] for k in order]
    assert body["reasons"][order.index(4)] == "truncated"
    assert sorted(body["rewards"]) == [0.0] * 4 + [1.0] * 5
    math_only = {"query": data["query"][:1], "labels": data["labels"][:1]}
    assert server.post("/get_reward/math", math_only)[1]["rewards"] == body["rewards"][:1]


def test_a_refused_label_is_said_on_the_servers_stderr(server):
    """OpenRLHF's client logs only '400 Bad Request': the server's own stderr names the
    field and the flag, once per distinct message."""
    code, body, _ = server.post("/get_reward", {"query": ["q", "q"], "labels": ["1", " \t"]})
    assert code == 400 and "labels[1] is empty" in body["error"]
    said = server.stderr_line(lambda ln: "refused /get_reward (400): labels[1] is empty" in ln)
    assert "--data.label_key" in said


def _in_background(fn):
    out: dict = {}
    t = threading.Thread(target=lambda: out.update(r=fn()), daemon=True)
    t.start()
    return t, out


def test_a_full_queue_answers_429_and_the_server_goes_on(server):
    slow = {"program": SLEEP_THEN.format(s=1.5), "tests": STDIO}
    t, out = _in_background(lambda: server.post("/verify", {"verifier": "code",
                                                            "items": [slow]}))
    server.wait(lambda: server.get("/health")[1]["queue_items"] == 1, "the slow item admitted")
    code, body, headers = server.post("/verify", {"verifier": "math", "items": MATH[:4]})
    assert code == 429 and "queue full" in body["error"] and headers["Retry-After"] == "1"
    t.join(60)
    assert out["r"][0] == 200 and out["r"][1]["results"][0]["passed"], out
    assert server.post("/verify", {"verifier": "math", "items": MATH[:4]})[0] == 200
    assert server.metric('dapo_serve_rejected_total{why="queue_full"}') >= 1


def _ticks_since_boot() -> float:
    with open("/proc/uptime") as f:
        return float(f.read().split()[0]) * os.sysconf("SC_CLK_TCK")


def _status(pid) -> dict[str, str]:
    with open(f"/proc/{pid}/status") as f:
        return dict(ln.split(":", 1) for ln in f.read().splitlines() if ":" in ln)


def _busy_code_worker(server_pid: int, since: float) -> int | None:
    """The code worker (a child of the server) that runs a program started after *since* (a
    live child under another uid; clock ticks since boot), if any."""
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            st = _status(pid)
            with open(f"/proc/{pid}/stat") as f:
                started = int(f.read().rsplit(")", 1)[1].split()[19])
            ppid = int(st["PPid"])
            if st["Uid"].split()[0] != "0" and started >= since and \
                    not st["State"].strip().startswith("Z") and \
                    int(_status(ppid)["PPid"]) == server_pid:
                return ppid
        except (OSError, KeyError, IndexError, ValueError):
            continue
    return None


def _kill_when_running(server) -> int:
    """SIGKILL the code worker that runs a program started from now on; its pid."""
    since, busy = _ticks_since_boot() - 1, []
    server.wait(lambda: busy.append(_busy_code_worker(server.proc.pid, since)) or busy[-1],
                "a running program")
    os.kill(busy[-1], signal.SIGKILL)
    return busy[-1]


def test_a_sigkilled_worker_is_replaced_and_its_item_rerun(server):
    before = server.metric("dapo_serve_worker_restarts_total")
    items = [{"program": SLEEP_THEN.format(s=1.0).replace("* 2", "* 3"), "tests": STDIO}]
    t, out = _in_background(lambda: server.post("/verify", {"verifier": "code", "items": items}))
    killed = _kill_when_running(server)
    t.join(60)
    code, body, _ = out["r"]
    assert code == 200 and body["results"][0]["reason"] == "wrong_answer", body  # not lost,
    assert server.metric("dapo_serve_items_rerun_total") >= 1  # not a sandbox_error: rerun
    server.wait(lambda: server.metric("dapo_serve_worker_restarts_total") > before,
                "the restart counted")
    now = server.get("/health")[1]["workers"]["code"]
    assert killed not in now and len(now) == 2, now
    code, body, _ = server.post("/verify", {"verifier": "code", "items": CODE[:2]})
    assert [r["passed"] for r in body["results"]] == [True, False]


def test_a_reward_that_failed_twice_in_the_verifier_is_a_503_not_a_0(server):
    """Its worker killed under the item and again under its rerun: OpenRLHF gets a status its
    client retries on, not a reward of 0 that the policy would learn from."""
    slow = "```python\n" + SLEEP_THEN.format(s=1.0) + "```"
    t, out = _in_background(lambda: server.post("/get_reward", {
        "query": ["P" + slow], "prompts": ["P"], "labels": [json.dumps(STDIO)],
        "verifier": "code"}))
    for _ in range(2):
        _kill_when_running(server)
    t.join(60)
    code, body, headers = out["r"]
    assert code == 503 and "failed in the verifier itself twice" in body["error"], body
    assert headers["Retry-After"] == "1" and "rewards" not in body
    code, body, _ = server.post("/get_reward", {"query": ["P" + slow], "prompts": ["P"],
                                                "labels": [json.dumps(STDIO)],
                                                "verifier": "code"})
    assert code == 200 and body["rewards"] == [1.0], body


def test_sigterm_finishes_in_flight_requests_and_exits_0():
    s = Server("--workers", "1", "--timeout", TIMEOUT)
    try:
        slow = {"program": SLEEP_THEN.format(s=1.5), "tests": STDIO}
        t, out = _in_background(lambda: s.post("/verify", {"verifier": "code", "items": [slow]}))
        s.wait(lambda: s.get("/health")[1]["queue_items"] == 1, "the slow item admitted")
        s.proc.send_signal(signal.SIGTERM)
        assert s.proc.wait(timeout=60) == 0, s.proc.stderr.read()[-2000:]
        t.join(5)
        code, body, _ = out["r"]
        assert code == 200 and body["results"][0]["passed"], body
    finally:
        s.stop()


def test_a_remote_host_must_be_named_explicitly():
    out = subprocess.run([*CLI, "serve", "--host", "0.0.0.0", "--port", "0"], check=False,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "--allow-remote" in out.stderr, out.stderr
