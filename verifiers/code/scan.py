"""Static reading of assert-based test code, in the parent, before anything runs.

`targets` names what the checker binds to proxies of the program (the function under test,
``Solution``, helpers the test calls that only the program defines). `proxy_limits` finds
what a proxy cannot express, so that it is reported instead of run:

* ``callable_arg``: a lambda, a function the test defines, or a built-in callable passed into
  a call of the program (the callable would have to cross the process boundary).
* ``identity``: an ``is`` / ``is not`` comparison with anything but None, True, False, a
  ``type(...)`` or a built-in type (values come back as copies, so identity means nothing).
* ``mutation``: a variable passed to the program and read again after the call. Handled, not
  refused: the program process sends changed arguments back and the checker updates its
  copies in place (`proxy.Channel`).
"""

from __future__ import annotations

import ast
import builtins
from functools import lru_cache

from dapo_bench.verifiers.code.harness import PREAMBLE

_BUILTINS = frozenset(dir(builtins))
_SINGLETONS = (None, True, False, Ellipsis)


def _parse(src: str | None) -> ast.Module | None:
    try:
        return ast.parse(src or "")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None  # the checker reports it (bad_test)


def _trees(sources: list[str | None]) -> list[ast.Module]:
    return [t for t in map(_parse, sources) if t is not None]


def _defined(tree: ast.AST) -> set[str]:
    out: set[str] = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load):
            out.add(n.id)
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(n.name)
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            out.update((a.asname or a.name).split(".")[0] for a in n.names)
        elif isinstance(n, ast.arg):
            out.add(n.arg)
        elif isinstance(n, ast.ExceptHandler) and n.name:
            out.add(n.name)
    return out


def _loaded(tree: ast.AST) -> list[str]:
    return [n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)]


@lru_cache(maxsize=1)
def _preamble_names() -> frozenset[str]:
    env: dict = {}
    exec(PREAMBLE, env)  # noqa: S102 - our own fixed import lines
    return frozenset(env)


def targets(sources: list[str | None], entry_point: str | None = None,
            given: str | None = None, preamble: bool = False) -> list[str]:
    """Names the checker binds to the program: ``entry_point`` first, then every name the test
    code reads but neither defines nor gets from the built-ins, the preamble or ``given`` (the
    HumanEval prompt, run in the checker). When that finds nothing, the built-in names the test
    calls (MBPP's ``sum``: the program shadows a built-in); the checker binds only the names
    the program really defines."""
    trees = _trees(sources)
    defined = set().union(*(_defined(t) for t in trees + _trees([given])))
    if preamble:
        defined |= _preamble_names()
    out = [entry_point] if entry_point else []
    for t in trees:
        for name in _loaded(t):
            if name not in defined and name not in _BUILTINS and name not in out:
                out.append(name)
    if not out:
        for t in trees:
            for n in ast.walk(t):
                if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and \
                        n.func.id in _BUILTINS and n.func.id not in out:
                    out.append(n.func.id)
    return out


def _root(node: ast.AST) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Call, ast.Subscript)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def proxy_limits(sources: list[str | None], names: list[str]) -> dict[str, bool]:
    """What of ``sources`` a proxy of ``names`` (plus HumanEval's ``candidate``) cannot express;
    see the module doc."""
    prog = set(names) | {"candidate"}
    found = {"callable_arg": False, "identity": False, "mutation": False}
    for tree in _trees(sources):
        local_fns = {n.name for n in ast.walk(tree)
                     if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
        assigned = _defined(tree) - local_fns
        reads = [(n.id, n.lineno) for n in ast.walk(tree)
                 if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)]
        for n in ast.walk(tree):
            if isinstance(n, ast.Compare) and \
                    any(isinstance(o, (ast.Is, ast.IsNot)) for o in n.ops) and \
                    not any(map(_identity_ok, [n.left, *n.comparators])):
                found["identity"] = True
            if not (isinstance(n, ast.Call) and _root(n.func) in prog):
                continue
            for a in [*n.args, *(k.value for k in n.keywords)]:
                heads = {id(c.func) for c in ast.walk(a) if isinstance(c, ast.Call)}
                for sub in ast.walk(a):
                    if isinstance(sub, ast.Lambda) or (
                            isinstance(sub, ast.Name) and id(sub) not in heads and
                            (sub.id in local_fns or (_is_builtin_callable(sub.id) and
                                                    sub.id not in assigned))):
                        found["callable_arg"] = True
                if isinstance(a, ast.Name) and any(r == a.id and line > (n.end_lineno or n.lineno)
                                                   for r, line in reads):
                    found["mutation"] = True
    return found


def checks_anything(sources: list[str | None]) -> bool:
    """Does the test code contain an ``assert`` or a ``raise`` (else it can check nothing)?
    Code that does not parse counts as checking: the checker reports it as ``bad_test``."""
    trees = _trees(sources)
    return len(trees) < len(sources) or any(isinstance(n, (ast.Assert, ast.Raise))
                                            for t in trees for n in ast.walk(t))


def _identity_ok(side: ast.AST) -> bool:
    """``x is None`` / ``type(x) is tuple``: identity that plain copies keep."""
    if isinstance(side, ast.Constant):
        return any(side.value is v for v in _SINGLETONS)
    if isinstance(side, ast.Call) and isinstance(side.func, ast.Name):
        return side.func.id == "type"
    return isinstance(side, ast.Name) and isinstance(getattr(builtins, side.id, None), type)


def _is_builtin_callable(name: str) -> bool:
    return name in _BUILTINS and name not in ("None", "True", "False", "Ellipsis") and \
        callable(getattr(builtins, name))
