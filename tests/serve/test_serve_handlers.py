"""The reward server's handlers called alone (``dapo_bench.serve.app``): each is a function over
an :class:`AppState` whose engine drives the real verifiers (one math and one code worker),
with no HTTP, no uvicorn and no mocks. /verify and /get_reward give the verifiers' verdicts;
refusals are raised as :class:`Refused` and :func:`answer` turns them into the JSON the server
sends; /health's pids and ``worker_restarts_total`` come from the verifiers' own pools: a math
worker SIGKILLed by its pid (from the pool's list, a child of this process) is counted once,
dropped from the list and replaced. The same server over HTTP: tests/serve/test_serve.py.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal

import pytest
from _wait import until
from dapo_bench.verifiers.code import CodeVerifier
from dapo_bench.verifiers.math import verify as math_verify
from dapo_bench.verifiers.math.pool import WorkerPool

from dapo_bench.errors import UserError
from dapo_bench.serve.app import (
    AppState,
    Refused,
    Settings,
    answer,
    get_reward,
    health,
    metrics_page,
    start_engine,
    stop_engine,
    verify,
)

STDIO = {"inputs": ["21\n"], "outputs": ["42\n"]}
SYMPY = ("so \\boxed{\\frac{\\sin(2x)}{2}}", "\\sin x\\cos x")  # needs a sympy worker


@pytest.fixture(scope="module")
def state():
    s = AppState(Settings(workers=1, timeout=3.0, queue_size=4))
    start_engine(s)
    yield s
    stop_engine(s)
    assert s.engine is None


def run(coro):
    return asyncio.run(coro)


def refused(coro) -> Refused:
    with pytest.raises(Refused) as e:
        run(coro)
    return e.value


def restarts(state: AppState, verifier: str) -> float:
    """``worker_restarts_total{verifier=...}`` as ``GET /metrics`` renders it."""
    want = f'dapo_serve_worker_restarts_total{{verifier="{verifier}"}} '
    text = metrics_page(state).body.decode()
    return sum(float(ln.split()[-1]) for ln in text.splitlines() if ln.startswith(want))


def parent_of(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])


def test_verify_gives_the_verifiers_verdicts(state):
    items = [{"prediction": "\\boxed{\\sqrt{8}}", "gold": "2\\sqrt{2}"},
             {"prediction": "The answer is 7.", "gold": "8"},
             {"prediction": SYMPY[0], "gold": SYMPY[1]}]
    body = run(verify(state, {"verifier": "math", "items": items,
                              "options": {"explain": True}}))
    want = [math_verify(it["prediction"], it["gold"]) for it in items]
    got = body["results"]
    assert [(r["index"], r["passed"], r["reason"]) for r in got] == \
        [(i, v.passed, v.reason) for i, v in enumerate(want)]
    assert [r["passed"] for r in got] == [True, False, True] and got[0]["answer_from"] == "box"
    code = run(verify(state, {"verifier": "code", "items": [
        {"program": "print(int(input()) * 2)", "tests": STDIO},
        {"program": "print(int(input()) + 2)", "tests": json.dumps(STDIO)}]}))
    assert [(r["passed"], r["reason"]) for r in code["results"]] == \
        [(True, "ok"), (False, "wrong_answer")]


def test_get_reward_routes_by_the_labels_shape_or_the_path(state):
    fenced = "P```python\nprint(int(input()) * 2)\n```"
    body = run(get_reward(state, {"query": ["P\\boxed{4}", fenced, "P7"], "prompts": ["P"] * 3,
                                  "labels": ["4", STDIO, "8"], "truncated": [False, False, True]}))
    assert body["rewards"] == body["scores"] == [1.0, 1.0, 0.0]
    assert body["reasons"] == ["ok", "ok", "truncated"]
    assert body["extra_logs"]["truncated"] == [0.0, 0.0, 1.0]
    assert run(get_reward(state, {"query": ["\\boxed{4}"], "labels": [4]}, "math"))["rewards"] \
        == [1.0]
    e = refused(get_reward(state, {"query": ["a"], "labels": ["1"]}, "chess"))
    assert (e.status, e.why) == (400, "bad_request")
    assert e.message.startswith("the path's verifier must be one of code, math")


@pytest.mark.parametrize(("handler", "body", "words"), [
    (verify, {"items": []}, "field 'verifier' missing"),
    (verify, {"verifier": "math", "items": [], "options": {"timeout": 1}}, "unknown timeout"),
    (verify, {"verifier": "math", "items": [3]}, "items[0]: must be an object, got int"),
    (get_reward, {"query": ["a", "b"], "labels": ["1"]}, "differ in length (2, 2, 1)"),
    (get_reward, {"query": ["a"], "labels": [""]}, "labels[0] is empty (OpenRLHF sends"),
])
def test_a_bad_body_is_refused_with_one_line(state, handler, body, words):
    e = refused(handler(state, body))
    assert e.status == 400 and words in e.message and "\n" not in e.message


def test_answer_turns_refusals_into_the_servers_json(state, capsys):
    async def bad() -> dict:
        return await verify(state, {"verifier": "math", "items": [{"prediction": "1"}]})

    for _ in range(2):
        resp = run(answer(state, "verify", "/verify", bad))
        assert resp.status_code == 400
        assert json.loads(resp.body) == {"error": "items[0]: field 'gold' missing"}
    said = capsys.readouterr().err.splitlines()
    assert said == ["dapo-bench serve: refused /verify (400): items[0]: field 'gold' missing"]

    async def busy() -> dict:
        raise Refused(503, "starting or stopping")

    resp = run(answer(state, "health", "/health", busy))
    assert (resp.status_code, resp.headers["Retry-After"]) == (503, "1")

    async def user_error() -> dict:
        raise UserError("a mistake")

    async def bug() -> dict:
        raise KeyError("x")

    assert json.loads(run(answer(state, "verify", "/verify", user_error)).body) == \
        {"error": "a mistake"}
    resp = run(answer(state, "verify", "/verify", bug))
    assert resp.status_code == 500 and json.loads(resp.body) == \
        {"error": "internal error: KeyError: 'x'"}
    page = metrics_page(state).body.decode()
    assert 'dapo_serve_requests_total{code="400",endpoint="verify"} 3.0' in page
    assert 'dapo_serve_rejected_total{why="internal"} 1.0' in page
    capsys.readouterr()


def test_a_full_queue_is_refused_while_a_batch_runs(state):
    async def both():
        first = asyncio.create_task(verify(state, {"verifier": "code", "items": [
            {"program": "print(int(input()) * 2)", "tests": STDIO}]}))
        await asyncio.sleep(0)  # the task runs up to its first wait: its item is admitted
        assert state.engine.admitted == 1
        items = [{"prediction": "1", "gold": "1"}] * 4
        with pytest.raises(Refused) as e:
            await verify(state, {"verifier": "math", "items": items})
        return e.value, await first

    e, done = run(both())
    assert (e.status, e.why) == (429, "queue_full") and "queue full (1 items admitted" in \
        e.message
    assert done["results"][0]["passed"] and state.engine.admitted == 0


def test_health_reports_the_pools_own_workers(state):
    got = health(state)
    assert got["status"] == "ok" and got["verifiers"] == {"code": "ok", "math": "ok"}
    pools = {name: list(r.health().pids) for name, r in state.engine.runners.items()}
    assert got["workers"] == pools and all(len(p) == 1 for p in pools.values())
    assert all(parent_of(p) == os.getpid() for p in pools["math"] + pools["code"])
    idle = AppState()
    with pytest.raises(Refused, match="starting or stopping"):
        health(idle)


def test_a_killed_math_worker_is_counted_once_and_replaced(state):
    math = state.engine.runners["math"].verifier
    (pid,) = math.worker_health().pids  # the pool's own list
    assert parent_of(pid) == os.getpid()  # a worker this process started
    before, lost = restarts(state, "math"), math.worker_health().lost
    os.kill(pid, signal.SIGKILL)
    until(lambda: pid not in health(state)["workers"]["math"], "the pool to see it dead")
    assert math.worker_health().lost == lost + 1
    assert restarts(state, "math") == before + 1
    assert restarts(state, "math") == before + 1  # counted once, however often it is read
    body = run(verify(state, {"verifier": "math", "items": [
        {"prediction": SYMPY[0], "gold": SYMPY[1]}]}))
    assert body["results"][0]["passed"]  # a fresh worker did the sympy check
    (new,) = health(state)["workers"]["math"]
    assert new != pid and restarts(state, "math") == before + 1


def test_a_dead_math_worker_fails_the_call_that_takes_it_and_is_counted():
    """The pool alone: a worker killed while idle fails the call that takes it (WorkerDied:
    the verdict is verifier_error, rerun by the server) and is counted lost; the next call
    starts another; closing the pool loses nothing."""
    from dapo_bench.verifiers.math.pool import WorkerDied

    pool = WorkerPool(1)
    try:
        pool.warm()
        (pid,) = pool.pids()
        assert pool.health().started == 1 and parent_of(pid) == os.getpid()
        os.kill(pid, signal.SIGKILL)
        with pytest.raises(WorkerDied):
            pool.run("ping", (), 30.0)
        h = pool.health()
        assert (h.pids, h.started, h.lost) == ((), 1, 1)
        assert pool.run("ping", (), 30.0) == "pong"
        h = pool.health()
        assert len(h.pids) == 1 and h.pids[0] != pid and (h.started, h.lost) == (2, 1)
    finally:
        pool.close()
    assert pool.health().pids == () and pool.health().lost == 1  # closing loses nothing


def test_a_killed_code_worker_is_counted_by_its_pool():
    cv = CodeVerifier(workers=1)
    try:
        assert cv.worker_health().pids == ()  # no pool before the first use
        assert cv.verify("print(int(input()) * 2)", STDIO).passed
        (pid,) = cv.worker_health().pids
        assert parent_of(pid) == os.getpid()
        os.kill(pid, signal.SIGKILL)
        until(lambda: pid not in cv.worker_health().pids, "the pool to see it dead")
        assert cv.worker_health().lost == 1
        assert cv.verify("print(int(input()) * 2)", STDIO).passed
        h = cv.worker_health()
        assert len(h.pids) == 1 and h.pids[0] != pid and (h.started, h.lost) == (2, 1)
    finally:
        cv.close()
    assert cv.worker_health().pids == ()
