"""math-verify's own regression cases, read from its test files at bench time (never committed).

    cases = load_cases("/path/to/Math-Verify")      # a checkout, or a bare git dir (git show)

Each ``@pytest.mark.parametrize`` whose argument names include ``gold`` and ``pred`` gives one
:class:`Case` per row: ``gold``, ``pred``, the expected verdict (``expected``/``result``), and
the options its test passes to math-verify (``precision``, ``strict``,
``allow_set_relation_comp``, the extraction ``match_types``), read from the test function's
call of ``compare_strings(...)`` (or plain ``verify(parse(gold), parse(pred))``). Rows are read
with ``ast.literal_eval``; the one f-string row (``f"{math.sqrt(17):.15f}"``) is evaluated by a
tiny interpreter that knows only ``math.<fn>(constant)`` and format specs.

A case is *short* when both gold and prediction are at most ``SHORT`` characters (an answer),
*long* otherwise (a model response): 220 short and 49 long cases in math-verify 0.8/0.9.
"""

from __future__ import annotations

import ast
import math
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

SHORT = 200
_DEFAULTS = {"match_types": ["latex", "expr"], "precision": 6, "strict": True,
             "allow_set_relation_comp": False}


@dataclass(frozen=True)
class Case:
    where: str  # file::function
    gold: str
    pred: str
    expected: bool
    options: dict = field(default_factory=dict)  # math-verify options; {} = parse()/verify()

    @property
    def short(self) -> bool:
        return len(self.gold) <= SHORT and len(self.pred) <= SHORT


def _sources(repo: Path) -> dict[str, str]:
    """tests/*.py of a checkout, or of HEAD in a (bare) git dir."""
    tests = repo / "tests"
    if tests.is_dir():
        return {f"tests/{p.name}": p.read_text() for p in sorted(tests.glob("test_*.py"))}
    names = subprocess.run(["git", "--git-dir", str(repo), "ls-tree", "-r", "--name-only",
                            "HEAD", "tests/"], capture_output=True, text=True, check=True)
    out = {}
    for name in names.stdout.split():
        if Path(name).name.startswith("test_") and name.endswith(".py"):
            out[name] = subprocess.run(["git", "--git-dir", str(repo), "show", f"HEAD:{name}"],
                                       capture_output=True, text=True, check=True).stdout
    if not out:
        raise SystemExit(f"no tests/test_*.py in {repo} (a Math-Verify checkout or git dir)")
    return out


def _value(node: ast.AST):
    """literal_eval, plus f-strings of math.<fn>(constant) with a format spec."""
    try:
        return ast.literal_eval(node)
    except ValueError:
        pass
    if isinstance(node, ast.Tuple):
        return tuple(_value(e) for e in node.elts)
    if isinstance(node, ast.JoinedStr):
        return "".join(_value(v) for v in node.values)
    if isinstance(node, ast.FormattedValue):
        spec = "".join(_value(v) for v in node.format_spec.values) if node.format_spec else ""
        return format(_value(node.value), spec)
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name) and node.func.value.id == "math"):
        return getattr(math, node.func.attr)(*[_value(a) for a in node.args])
    raise ValueError(f"unsupported expression at line {getattr(node, 'lineno', '?')}")


def _call_options(fn: ast.FunctionDef) -> dict | None:
    """math-verify options of the test *fn*: compare_strings' defaults updated by the kwargs
    of its call (a name stays a name: a parametrize column), {} for a plain
    ``verify(parse(gold), parse(pred))``, None when the test calls neither."""
    plain = False
    for node in ast.walk(fn):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            if node.func.id == "compare_strings":
                return {**_DEFAULTS, **{k.arg: (k.value.id if isinstance(k.value, ast.Name)
                                                else _value(k.value)) for k in node.keywords}}
            plain |= node.func.id == "verify"
    return {} if plain else None


def load_cases(repo: str | Path) -> list[Case]:
    cases = []
    for fname, src in _sources(Path(repo)).items():
        for fn in ast.walk(ast.parse(src)):
            if not isinstance(fn, ast.FunctionDef):
                continue
            call = _call_options(fn)
            for dec in fn.decorator_list:
                if not (isinstance(dec, ast.Call) and getattr(dec.func, "attr", "") == "parametrize"):
                    continue
                names = [n.strip() for n in _value(dec.args[0]).split(",")]
                if not {"gold", "pred"} <= set(names) or call is None:
                    continue
                for row in dec.args[1].elts:
                    r = dict(zip(names, _value(row)))
                    opts = {k: r[v] if isinstance(v, str) and v in r else v
                            for k, v in call.items()}
                    exp = r.get("expected", r.get("result"))
                    cases.append(Case(f"{fname}::{fn.name}", r["gold"], r["pred"], bool(exp),
                                      opts))
    return cases


def math_verify_verdict(case: Case) -> bool:
    """math-verify's verdict on *case*, with the options its own test passes."""
    from math_verify import ExprExtractionConfig, LatexExtractionConfig, parse, verify

    if not case.options:
        return bool(verify(parse(case.gold), parse(case.pred)))
    o = case.options
    targets = [LatexExtractionConfig(boxed_match_priority=0) if t == "latex"
               else ExprExtractionConfig() for t in o["match_types"]]
    return bool(verify(parse(case.gold, targets), parse(case.pred, targets),
                       float_rounding=o["precision"], strict=o["strict"],
                       allow_set_relation_comp=o["allow_set_relation_comp"]))
