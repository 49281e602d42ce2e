"""Public corpora of real model responses to math problems, read at bench time (never stored here).

Each loader returns a list of :data:`Pair` ``(response, gold, label, ref)``: the response text,
the gold answer as one string, the label (is the response right?) and a short reference that
finds the row again (``processbench/math-17 Qwen2-7B-Instruct``). Every ``repo`` argument is a
checkout or a git dir (``git clone --bare``, or what a mirror fetch leaves); files are read with
``git show REV:PATH`` at the pinned commits below, so a later commit that moves the data away
changes nothing.

ProcessBench (:func:`processbench`): QwenLM/ProcessBench at commit ``ee5ae00`` (2024-12-10;
the next commits move the data to the Hugging Face hub, ``Qwen/ProcessBench``, Apache-2.0),
``dataset/{gsm8k,math,olympiadbench,omnimath}.json``: 400 + 1,000 + 1,000 + 1,000 step-by-step
solutions by 12 open instruct models (Qwen2-1.5B/7B/72B-Instruct, Qwen2.5-1.5B/7B/72B-Instruct,
Qwen2.5-Math-7B/72B-Instruct, Meta-Llama-3-8B/70B-Instruct, Llama-3.1-8B/70B-Instruct), half of
each split with a right final answer. The label is the source's ``final_answer_correct``: the
final answer judged against the reference answer by Qwen2.5-72B-Instruct, then every solution
reviewed step by step by human experts (solutions judged wrong whose steps the experts found
right were dropped; paper, arXiv 2412.06559, section 3.2). The authors had Qwen2.5-72B-Instruct
re-split each solution into paragraphs (dropping the < 0.5% whose final answer changed); the
paragraphs are joined here with blank lines. ProcessBench ships no gold answers; they are joined by problem text:

- gsm8k: openai/grade-school-math ``grade_school_math/data/test.jsonl`` (MIT), after ``####``;
- math: MATH's own answers as annotated in MARIO-Math-Reasoning/MARIO_EVAL
  ``data/math_testset_annotation.json`` (the 5,000 MATH test problems, the answer as MATH's
  solution boxes it: ``\\$32,\\!348``, ``x \\in [-2,7]``, ``145^\\circ``; MATH is MIT);
- olympiadbench: QwenLM/Qwen2.5-Math ``evaluation/data/olympiadbench/test.jsonl`` (the 675
  OE_TO_maths_en_COMP problems, Apache-2.0), its one-element ``final_answer`` list: 986 of 1,000;
- omnimath: KbsdJames/omni-math-rule ``omni_math_rule.jsonl`` (the rule-gradable part of
  Omni-MATH, Apache-2.0): 649 of 1,000. Rows whose problem has no gold are left out.

SkyThought (:func:`skythought`): NovaSky-AI/SkyThought (Apache-2.0) at commit ``9a750c7``
(2025-04-08, "add exp"; removed later), ``skythought/Qwen2.5-Math/evaluation/outputs/**.jsonl``:
the Qwen2.5-Math evaluation harness's saved outputs (greedy, one sample a problem) on MATH-500,
Minerva Math, OlympiadBench, AIME 2024 and AMC 2023, of Qwen2.5-14B-Instruct, gemma-2-27b-it,
Qwen2.5-Math-7B (the base model with the CoT prompt), and Sky-T1 models (Qwen2.5-14B/32B and
gemma-2-27b fine-tuned on QwQ-style long reasoning, ``<|begin_of_thought|>`` ...
``<|end_of_solution|>``; the ``short`` checkpoints answer briefly). Files of 4 MiB and more
were not mirrored (several Sky-T1 MATH-500 and OlympiadBench runs); Llama-3.1-8B (base) is left
out (its outputs are mostly empty). The label is the harness's ``score`` (its own extraction
and ``math_equal`` against its normalised ``gt``): an automatic grader, not a human, wrong in
both directions (it misses ``4.5 \\times 10^{33}`` against ``4.5e33``, labels, lists joined by
"and"); where it, ours and math-verify disagree, read the row. The gold is the source's own
answer (see :func:`skythought`). ``long=True`` gives the long-CoT
runs (Sky-T1 without ``short``: responses of 5 K to 100 K characters), ``long=False`` the rest.

Licenses: ProcessBench and SkyThought are Apache-2.0, the gold sources MIT / Apache-2.0; the
data stays in those repositories and is only read by the bench.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

Pair = tuple[str, str, bool, str]  # (response, gold, label, ref)

PROCESSBENCH_REV = "ee5ae00"
PROCESSBENCH_SPLITS = ("gsm8k", "math", "olympiadbench", "omnimath")
GSM8K_TEST = "grade_school_math/data/test.jsonl"
MARIO_MATH = "data/math_testset_annotation.json"
QWEN_OLYMPIADBENCH = "evaluation/data/olympiadbench/test.jsonl"
OMNI_MATH_RULE = "omni_math_rule.jsonl"
SKYTHOUGHT_REV = "9a750c7"
SKYTHOUGHT_OUTPUTS = "skythought/Qwen2.5-Math/evaluation/outputs"
SKYTHOUGHT_DATA = "skythought/Qwen2.5-Math/evaluation/data/{}/test.jsonl"
SKYTHOUGHT_SKIP = ("meta-llama/",)


def read(repo: str, rel: str, rev: str = "HEAD") -> str:
    """File *rel* of *repo* at *rev*: from the work tree when *rev* is HEAD and the file is
    there, else ``git show`` (a checkout or a bare git dir)."""
    p = Path(repo)
    if rev == "HEAD" and (p / rel).is_file():
        return (p / rel).read_text()
    return subprocess.run(["git", "-C", str(p), "show", f"{rev}:{rel}"], capture_output=True,
                          text=True, check=True).stdout


def _key(problem: str) -> str:
    return re.sub(r"\s+", " ", problem).strip()


def _jsonl(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def processbench_golds(gsm8k_repo: str | None = None, mario_repo: str | None = None,
                       qwen_math_repo: str | None = None,
                       omni_rule_repo: str | None = None) -> dict[str, dict[str, str]]:
    """Gold answers by problem text for each ProcessBench split whose source repo is given."""
    golds = {}
    if gsm8k_repo:
        golds["gsm8k"] = {_key(r["question"]): r["answer"].rsplit("####", 1)[1].strip()
                          for r in _jsonl(read(gsm8k_repo, GSM8K_TEST))}
    if mario_repo:
        golds["math"] = {_key(r["question"]): r["answer"]
                         for r in json.loads(read(mario_repo, MARIO_MATH))}
    if qwen_math_repo:
        golds["olympiadbench"] = {_key(r["question"]): r["final_answer"][0]
                                  for r in _jsonl(read(qwen_math_repo, QWEN_OLYMPIADBENCH))}
    if omni_rule_repo:
        golds["omnimath"] = {_key(r["problem"]): r["answer"]
                             for r in _jsonl(read(omni_rule_repo, OMNI_MATH_RULE))}
    return golds


def processbench(repo: str, split: str, golds: dict[str, str]) -> list[Pair]:
    """ProcessBench *split*'s solutions with a gold in *golds* (see the module docstring)."""
    rows = json.loads(read(repo, f"dataset/{split}.json", PROCESSBENCH_REV))
    out = []
    for r in rows:
        gold = golds.get(_key(r["problem"]))
        if gold is not None:
            out.append(("\n\n".join(r["steps"]), gold, bool(r["final_answer_correct"]),
                        f"processbench/{r['id']} {r['generator']}"))
    return out


def skythought_files(repo: str) -> list[str]:
    names = subprocess.run(["git", "-C", repo, "ls-tree", "-r", "--name-only", SKYTHOUGHT_REV,
                            SKYTHOUGHT_OUTPUTS], capture_output=True, text=True, check=True)
    return [n for n in names.stdout.split() if n.endswith("_e-1.jsonl")
            and not any(s in n for s in SKYTHOUGHT_SKIP)]


def _is_long(name: str) -> bool:
    return "Sky-T1" in name and "short" not in name


def _skythought_olympiad_golds(repo: str) -> list[str]:
    data = _jsonl(read(repo, SKYTHOUGHT_DATA.format("olympiadbench"), SKYTHOUGHT_REV))
    return [r["final_answer"][0] for r in data]


def skythought(repo: str, long: bool) -> list[Pair]:
    """SkyThought's saved outputs (see the module docstring); files absent from the mirror
    (over its size limit) are skipped. The gold is the source's own answer: the row's
    ``answer`` (MATH-500, AIME, AMC), OlympiadBench's ``final_answer`` (from the data file in
    the same commit, by ``idx``), else the harness's ``gt`` (Minerva: its solution's last box).
    The harness's ``gt`` elsewhere is its normalised copy, which loses text (``(a+5)(b+2)``
    becomes ``(+5)(b+2)``, a column vector's row breaks are dropped, ``east`` becomes empty)."""
    olympiad = _skythought_olympiad_golds(repo)
    out = []
    for name in skythought_files(repo):
        if _is_long(name) != long:
            continue
        try:
            rows = _jsonl(read(repo, name, SKYTHOUGHT_REV))
        except subprocess.CalledProcessError:
            continue
        run = name.removeprefix(SKYTHOUGHT_OUTPUTS + "/").split("_eval/")[0]
        for r in rows:
            gold = (r["answer"] if "answer" in r else olympiad[int(r["idx"])]
                    if "/olympiadbench/" in name else r["gt"])
            out.append((r["code"][0], str(gold), bool(r["score"][0]),
                        f"skythought/{run}#{r['idx']}"))
    return out
