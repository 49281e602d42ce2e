"""``dapo-bench serve`` under load and faults, checked verdict by verdict against the CLI.

    unshare --pid --fork --mount-proc python bench/serve_load.py [--requests 20000]
    python bench/serve_load.py --no-attacks          # outside a PID namespace: benign only

One run, four parts, against one server (``dapo-bench serve --port 0 --workers W``):

1. Reference: ``dapo-bench verify`` (the CLI, its own process) on every distinct item: generated
   math responses (``math_pairs.pairs_mixed``: integers ... polynomials, half right),
   HumanEval and MBPP programs (canonical and broken), and, inside a PID namespace, the
   sandbox's attacking programs (``tests/verifiers/code/test_sandbox_forge.py``'s forgeries in
   every test form and hostile ones after ``tests/verifiers/code/test_sandbox_hostile.py``:
   loops, sleeps, fork bomb, 4 GB, kill -1, 100 MB of output, segfault), none of which may pass.
2. Throughput: the same fresh math items in-process (``MathVerifier(workers=W).verify_batch``,
   as ``dapo-bench verify`` runs: the fast path in the calling thread) and through HTTP
   (``--clients`` clients, ``--batch`` items a request; the server runs the fast path in its
   W workers, ``fast_in_workers``); items/s of each and the ratio. Also, on other fresh items,
   in-process with ``fast_in_workers`` (batches of ``--batch`` x ``--clients``), and HTTP's
   ratio to that: what HTTP itself costs.
3. Load: ``--clients`` concurrent keep-alive clients send ``--requests`` requests (85% math of
   1-4 items, 15% one code item; each attack once, spread over the run); at half way one math
   and one code worker are SIGKILLed. Every answer is compared with the CLI's row (timings
   aside): mismatches, wrong passes, errors, lost items; requests/s, items/s, p50/p99 latency,
   the server's RSS after 1,000 requests and at the end.
4. After: /health answers, worker restarts and reruns from /metrics, the server stops on
   SIGTERM with exit 0, and no process of a sandbox uid is left (attacks contained).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "bench"), str(ROOT / "tests" / "verifiers" / "code")]
CLI = [sys.executable, "-m", "dapo_bench.cli"]
DATA = Path(os.environ.get("DAPO_BENCH_TEST_DATA", ROOT.parents[1] / "shared" / "data"))
NEVER = {"inputs": [""], "outputs": ["never printed\n"]}


def math_items(n: int, seed: int) -> list[dict]:
    from math_pairs import pairs_mixed

    return [{"prediction": p, "gold": g} for g, p, _ in pairs_mixed(random.Random(seed), n)]


def code_items(n: int) -> list[dict]:
    out = []
    he = DATA / "code" / "humaneval.jsonl"
    if he.is_file():
        for row in [json.loads(ln) for ln in he.read_text().splitlines()][:n]:
            tests = {"test": row["test"], "entry_point": row["entry_point"]}
            out.append({"program": row["prompt"] + row["canonical_solution"], "tests": tests})
            out.append({"program": row["prompt"] + "    return None\n", "tests": tests})
    mbpp = DATA / "code" / "mbpp.json"
    if mbpp.is_file():
        for row in json.loads(mbpp.read_text())[:n]:
            tests = {"test_list": row["test_list"], "test_imports": row["test_imports"]}
            out.append({"program": row["code"], "tests": tests})
            out.append({"program": row["code"] + "\n\ndef _f():\n    return 0\n",
                        "tests": {"test_list": row["test_list"][:1] + ["assert 1 == 2"]}})
    out.append({"program": "print(int(input()) * 2)",
                "tests": {"inputs": ["21\n"], "outputs": ["42\n"]}})
    return out


def attack_items() -> list[dict]:
    from test_sandbox_forge import ATTACKS, FORMS, program

    out = [{"program": program(a, f), "tests": FORMS[f][1]} for a in ATTACKS for f in FORMS]
    hostile = [
        "while True:\n    pass\n",
        "import time\ntime.sleep(100)\n",
        ("import signal\nfor s in (signal.SIGALRM, signal.SIGTERM, signal.SIGXCPU):\n"
        "    signal.signal(s, signal.SIG_IGN)\nwhile True:\n    pass\n"),
        "x = bytearray(4 * 1024 ** 3)\nprint('never printed')\n",
        "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n",
        "import os\nprint(os.system('echo never printed'))\n",
        ("import os, signal\nfor p in (os.getppid(), 1, -1):\n    try:\n"
        "        os.kill(p, signal.SIGKILL)\n    except OSError:\n        pass\n"),
        ("import os, time\nif os.fork() == 0:\n    try:\n        os.setsid()\n"
         "    except OSError:\n        pass\n    if os.fork() == 0:\n        time.sleep(30)\n"
         "    os._exit(0)\nprint('ok')\n"),
        "import sys\nsys.stdout.write('x' * (100 * 1024 * 1024))\n",
        "import ctypes\nctypes.string_at(0)\n",
        "def f(n):\n    return f(n + 1)\nf(0)\n",
    ]
    return out + [{"program": p, "tests": NEVER} for p in hostile]


POOL_VERIFIER = {"math": "math", "code": "code", "attack": "code"}  # data: who grades a pool


def reference(tmp: Path, verifier: str, items: list[dict], workers: int) -> list[dict]:
    src = tmp / f"{verifier}.jsonl"
    src.write_text("".join(json.dumps(it) + "\n" for it in items))
    out = subprocess.run([*CLI, "verify", str(src), "--verifier", verifier, "--workers",
                          str(workers)], check=True, capture_output=True, text=True)
    return [same(json.loads(ln)) for ln in out.stdout.splitlines()]


def same(row: dict) -> dict:
    """A row without what may differ between two runs of one verdict: timings, and which of
    a time limit's two clocks ran out first (CPU or wall: the machine's load decides)."""
    row = {k: v for k, v in row.items() if k not in ("seconds", "index")}
    if "details" in row:
        row["details"] = d = {k: v for k, v in row["details"].items() if k != "cpu_s"}
        first = d.get("first_failure")
        if first and first["status"] == "time_limit":
            d["first_failure"] = {k: v for k, v in first.items() if k != "error"}
    return row


class Server:
    def __init__(self, workers: int) -> None:
        self.proc = subprocess.Popen([*CLI, "serve", "--port", "0", "--workers", str(workers),
                                      "--queue-size", "8192"], stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        if "listening on" not in line:
            raise SystemExit(f"server did not start: {line!r}")
        self.url = line.split("listening on ")[1].strip()
        self.port = int(self.url.rsplit(":", 1)[1])

    def get(self, path: str) -> str:
        with urllib.request.urlopen(self.url + path, timeout=30) as r:
            return r.read().decode()

    def metric(self, name: str) -> float:
        return sum(float(ln.rsplit(" ", 1)[1]) for ln in self.get("/metrics").splitlines()
                   if ln.startswith(name))

    def rss_mb(self) -> float:
        with open(f"/proc/{self.proc.pid}/status") as f:
            kb = next(int(ln.split()[1]) for ln in f if ln.startswith("VmRSS:"))
        return kb / 1024


async def post(conn, path: str, obj) -> tuple[int, dict]:
    reader, writer = conn
    body = json.dumps(obj).encode()
    writer.write(b"POST %s HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\n"
                 b"Content-Length: %d\r\n\r\n%s" % (path.encode(), len(body), body))
    status = int((await reader.readline()).split()[1])
    length = 0
    while (line := await reader.readline()) not in (b"\r\n", b""):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    return status, json.loads(await reader.readexactly(length))


async def drive(port: int, plan: list, clients: int, on_done) -> dict:
    """Send every request of *plan* ((verifier, items, tag)) over *clients* connections."""
    it = iter(enumerate(plan))
    stats = {"latency": [], "errors": 0, "retries_429": 0, "answers": {}}

    async def client() -> None:
        conn = await asyncio.open_connection("127.0.0.1", port)
        for k, (verifier, items, _) in it:
            t0 = time.perf_counter()
            try:
                while True:
                    status, body = await post(conn, "/verify", {"verifier": verifier,
                                                                "items": items})
                    if status != 429:
                        break
                    stats["retries_429"] += 1
                    await asyncio.sleep(1)
            except (OSError, asyncio.IncompleteReadError, ValueError, IndexError):
                stats["errors"] += 1
                conn = await asyncio.open_connection("127.0.0.1", port)
                continue
            stats["latency"].append(time.perf_counter() - t0)
            if status != 200:
                stats["errors"] += 1
                continue
            stats["answers"][k] = body["results"]
            on_done(len(stats["answers"]))
        conn[1].close()

    t0 = time.perf_counter()
    await asyncio.gather(*(client() for _ in range(clients)))
    stats["wall"] = time.perf_counter() - t0
    return stats


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan")


def sandbox_procs() -> list[str]:
    """Processes of a non-root uid in this PID namespace (sandbox uids: none may outlive it)."""
    out = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            st = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        if st.split("\nUid:")[1].split()[0] != "0" and "\nState:\tZ" not in st:
            out.append(pid)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--requests", type=int, default=20000)
    ap.add_argument("--clients", type=int, default=64)
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--batch", type=int, default=64, help="items a request, throughput part")
    ap.add_argument("--ratio-items", type=int, default=16000)
    ap.add_argument("--math-pool", type=int, default=3000)
    ap.add_argument("--attacks", action=argparse.BooleanOptionalAction, default=True)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    if a.attacks and os.getpid() != 1:
        raise SystemExit("attacking programs run only as init of their own PID namespace: "
                         "unshare --pid --fork --mount-proc python bench/serve_load.py "
                         "(or --no-attacks)")
    print(f"load before: {os.getloadavg()}", flush=True)
    pools = {"math": math_items(a.math_pool, a.seed), "code": code_items(40),
             "attack": attack_items() if a.attacks else []}
    tmp = Path(tempfile.mkdtemp(prefix="serve-load-"))
    t0 = time.perf_counter()
    ref = {name: reference(tmp, POOL_VERIFIER[name], items, a.workers)
           for name, items in pools.items() if items}
    print(f"reference (dapo-bench verify): {sum(map(len, ref.values()))} distinct items in "
          f"{time.perf_counter() - t0:.1f}s; attacks passed by the CLI: "
          f"{sum(r['passed'] for r in ref.get('attack', []))}", flush=True)
    server = Server(a.workers)
    try:
        ratio_part(server, a)
        load_part(server, a, pools, ref)
    finally:
        if server.proc.poll() is None:
            server.proc.send_signal(signal.SIGTERM)
        code = server.proc.wait(timeout=120)
    deadline = time.monotonic() + 5
    while (left := sandbox_procs()) and time.monotonic() < deadline:
        time.sleep(0.1)
    print(f"server exit status after SIGTERM: {code}; sandbox processes left: {len(left)}")
    print(f"load after: {os.getloadavg()}")


def ratio_part(server: Server, a) -> None:
    from dapo_bench.verifiers.math import MathVerifier

    items = math_items(a.ratio_items, a.seed + 1)
    preds, golds = [x["prediction"] for x in items], [x["gold"] for x in items]
    mv = MathVerifier(workers=a.workers)
    mv.warm()
    t0 = time.perf_counter()
    local = mv.verify_batch(preds, golds)
    t_local = time.perf_counter() - t0
    mv.close()
    # the server's own setting (fast path in the workers), in process, on other fresh items
    spread_items = math_items(a.ratio_items, a.seed + 2)
    with MathVerifier(workers=a.workers, fast_in_workers=True) as sv:
        sv.warm()
        t0 = time.perf_counter()
        for i in range(0, len(spread_items), a.batch * a.clients):
            part = spread_items[i:i + a.batch * a.clients]
            sv.verify_batch([x["prediction"] for x in part], [x["gold"] for x in part])
        t_spread = time.perf_counter() - t0
    plan = [("math", items[i:i + a.batch], "ratio") for i in range(0, len(items), a.batch)]
    stats = asyncio.run(drive(server.port, plan, a.clients, lambda n: None))
    got = [r for k in range(len(plan)) for r in stats["answers"].get(k, [])]
    bad = sum(g["passed"] != v.passed or g["reason"] != v.reason for g, v in zip(got, local))
    rate_local, rate_http = len(items) / t_local, len(got) / stats["wall"]
    rate_spread = len(spread_items) / t_spread
    print(f"throughput on {len(items)} fresh math items ({a.batch} a request, {a.clients} "
          f"clients): in-process {rate_local:.0f} items/s, HTTP {rate_http:.0f} items/s, "
          f"ratio {rate_http / rate_local:.2f}; mismatches {bad}, lost "
          f"{len(items) - len(got)}; in-process with the server's fast_in_workers "
          f"{rate_spread:.0f} items/s (HTTP / that {rate_http / rate_spread:.2f})", flush=True)


def load_part(server: Server, a, pools: dict, ref: dict) -> None:
    rng = random.Random(a.seed)
    plan = []
    for _ in range(a.requests):
        if rng.random() < 0.85:
            plan.append(("math", "math", [rng.randrange(len(pools["math"]))
                                          for _ in range(rng.randint(1, 4))]))
        else:
            plan.append(("code", "code", [rng.randrange(len(pools["code"]))]))
    for j in range(len(pools["attack"])):  # each attack once, spread over the run
        plan.insert((j + 1) * len(plan) // (len(pools["attack"]) + 1), ("code", "attack", [j]))
    reqs = [(v, [pools[pool][i] for i in idx], (pool, idx)) for v, pool, idx in plan]
    marks: dict = {}

    def on_done(n: int) -> None:
        if n >= 1000 and "rss_1k" not in marks:
            marks["rss_1k"] = server.rss_mb()
        if n >= len(reqs) // 2 and "killed" not in marks:
            pids = json.loads(server.get("/health"))["workers"]
            marks["killed"] = [pids["math"][0], pids["code"][0]]
            for pid in marks["killed"]:
                os.kill(pid, signal.SIGKILL)

    stats = asyncio.run(drive(server.port, reqs, a.clients, on_done))
    rss_end = server.rss_mb()
    n_items = sum(len(r[1]) for r in reqs)
    answered = lost = mismatch = wrong_pass = attack_pass = 0
    for k, (_, items, (pool, idx)) in enumerate(reqs):
        rows = stats["answers"].get(k)
        if rows is None or len(rows) != len(items):
            lost += len(items)
            continue
        for row, i in zip(rows, idx):
            answered += 1
            want = ref[pool][i]
            if same(row) != want:
                mismatch += 1
                if mismatch <= 5:
                    print(f"mismatch: {pool}[{i}] CLI {want['reason']} {want.get('details')}"
                          f" / server {row['reason']} {row.get('details')}"[:600])
            wrong_pass += row["passed"] and not want["passed"]
            attack_pass += pool == "attack" and row["passed"]
    health = json.loads(server.get("/health"))
    print(f"load: {len(reqs)} requests, {n_items} items from {a.clients} clients in "
          f"{stats['wall']:.1f}s: {len(reqs) / stats['wall']:.0f} requests/s, "
          f"{answered / stats['wall']:.0f} items/s, latency p50 "
          f"{pct(stats['latency'], .5) * 1000:.1f} ms p99 {pct(stats['latency'], .99) * 1000:.1f}"
          f" ms")
    print(f"errors {stats['errors']}, 429 retries {stats['retries_429']}, lost items {lost}, "
          f"mismatches vs CLI {mismatch}, wrong passes {wrong_pass}")
    print(f"attacks: {len(pools['attack'])} sent, {attack_pass} passed")
    print(f"SIGKILLed workers {marks.get('killed')}: restarts counted "
          f"{server.metric('dapo_serve_worker_restarts_total'):.0f}, items rerun "
          f"{server.metric('dapo_serve_items_rerun_total'):.0f}; /health after: "
          f"{health['status']} workers {health['workers']}")
    r1 = marks.get("rss_1k", float("nan"))
    print(f"server RSS: {r1:.1f} MiB after 1,000 requests, {rss_end:.1f} MiB after "
          f"{len(stats['answers'])} ({rss_end / r1 - 1:+.1%})")


if __name__ == "__main__":
    main()
