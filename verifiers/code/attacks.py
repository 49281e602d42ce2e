"""The code verifier's exploit zoo: programs that try to forge an assert-based pass (patching
builtins, the harness, the trace machinery, exiting early, objects equal to anything, forged
report frames, reading the checks from memory, killing every process), each with a function
that returns a WRONG value (``ATTACKS``, one per test form of ``FORMS``, built by
:func:`program`). An eval runs ``EVAL_ATTACKS`` (all but the ones that reach outside their own
process or scan memory: seconds) on the MBPP form through its verifier before it scores
anything (dapo_bench.eval.zoo); tests/verifiers/code/test_sandbox_forge.py runs every attack
against every form, in a PID namespace.

The programs run only inside the code verifier's sandbox, like every candidate. No module the
sandbox workers import may import this one at module level (``CodeVerifier.zoo`` imports it when
called): a program forked from a worker would find the checks of ``FORMS`` in its memory, which
is what the ``memory_lookup`` attack looks for.
"""

from __future__ import annotations

_PATCH_MODULES = """
import sys, re
_CMP = re.compile('eq|plain|match|same|close|pack')
for _n, _m in list(sys.modules.items()):
    if _n.startswith('dapo_bench') and _m is not None:
        for _k, _v in list(vars(_m).items()):
            if callable(_v) and not isinstance(_v, type) and _CMP.search(_k):
                try:
                    setattr(_m, _k, lambda *a, **k: True)
                except Exception:
                    pass
"""
_GC_CODE = """
import gc, re
_CMP = re.compile('eq|plain|match|same|close')
_T = (lambda *a, **k: True).__code__
for _o in gc.get_objects():
    if type(_o).__name__ == 'function' and _CMP.search(_o.__name__) and str(
            getattr(_o, '__module__', '')).startswith(('dapo_bench', 'math')):
        try:
            _o.__code__ = _T
        except Exception:
            pass
"""
_TRACE = """
import sys, threading
def _tr(frame, event, arg):
    if frame.f_code.co_filename in ('<check>', '<test>', '<string>') and event == 'line':
        try:
            frame.f_lineno = max(l for _, _, l in frame.f_code.co_lines() if l)
        except Exception:
            pass
    return _tr
sys.settrace(_tr)
threading.settrace(_tr)
sys.setprofile(lambda *a: None)
"""
_ALWAYS_EQ = """
class _E:
    def __eq__(self, o): return True
    def __ne__(self, o): return False
    def __lt__(self, o): return True
    def __le__(self, o): return True
    def __sub__(self, o): return self
    def __rsub__(self, o): return self
    def __abs__(self): return 0.0
    def __float__(self): return 5.0
    __hash__ = None
"""
_FLOAT_SUB = """
class _F(float):
    def __eq__(self, o): return True
    def __ne__(self, o): return False
    def __sub__(self, o): return _F(0.0)
    def __rsub__(self, o): return _F(0.0)
    def __abs__(self): return 0.0
    __hash__ = float.__hash__
"""
_FORGED_FRAMES = """
import os
from dapo_bench.verifiers.code import wire
_frames = b''.join(wire.encode(m) for m in [{'i': k, 'status': 'ok', 'error': '', 'cpu': 0.0,
                   'calls': 1} for k in range(8)] + [{'done': 'x' * 32}, {'v': 5}])
for _fd in range(3, 256):
    try:
        os.write(_fd, _frames)
    except OSError:
        pass
"""
_MEMORY_LOOKUP = """
import gc, sys, ctypes, re
def _leaked():
    def hit(s):  # the checks of FORMS; the needle is never written whole in this text
        for tail in ('== 5', '- 5.0'):
            i = s.find(tail)
            while i >= 0:
                if s[max(0, i - 3):i] == '2) ':
                    return True
                i = s.find(tail, i + 1)
        return False
    for o in gc.get_objects():
        for v in (o.values() if isinstance(o, dict) else o if isinstance(o, (list, tuple))
                  else ()):
            if isinstance(v, str) and hit(v):
                return True
    try:
        maps = open('/proc/self/maps').read().splitlines()
    except OSError:
        return False
    for line in maps:
        addr, perms = line.split()[:2]
        if not perms.startswith('rw'):
            continue
        lo, hi = (int(x, 16) for x in addr.split('-'))
        try:
            mem = ctypes.string_at(lo, hi - lo)
        except Exception:
            continue
        for m in re.finditer(b'== 5|- 5\\.0', mem):
            if mem[max(0, m.start() - 3):m.start()] == b'2) ':
                return True
    return False
_LEAK = _leaked()
"""

ATTACKS: dict[str, tuple[str, str]] = {
    "builtins_exec": (("import builtins\nbuiltins.exec = lambda *a, **k: None\n"
                       "builtins.eval = lambda *a, **k: True\n"), ""),
    "harness_modules": (_PATCH_MODULES, ""),
    "gc_code_objects": (_GC_CODE, ""),
    "trace_functions": (_TRACE, ""),
    "assertion_error": (("import builtins\nclass _Nope(Exception):\n    pass\n"
                         "builtins.AssertionError = _Nope\n"), ""),
    "isclose_abs": (("import math, builtins\nmath.isclose = lambda *a, **k: True\n"
                     "builtins.abs = lambda x: 0\nbuiltins.round = lambda *a: 0\n"), ""),
    "os_exit_at_load": ("import os\nos._exit(0)\n", ""),
    "os_exit_in_call": ("", "import os\nos._exit(0)"),
    "system_exit_in_call": ("", "raise SystemExit(0)"),
    "always_equal_object": (_ALWAYS_EQ, "return _E()"),
    "float_subclass": (_FLOAT_SUB, "return _F(x)"),
    "forged_report_frames": (_FORGED_FRAMES, ""),
    "memory_lookup": (_MEMORY_LOOKUP, "if _LEAK:\n    return 2 * x + 1"),
    "kill_everything": (("import os\nfor _p in range(2, 3000):\n    try:\n"
                         "        os.kill(_p, 9)\n    except OSError:\n        pass\n"), ""),
}

_HE_TEST = "def check(candidate):\n    assert candidate(2) == 5\n    assert candidate(3) == 7\n"
_HE_TOL = ("import math\n\ndef check(candidate):\n    assert abs(candidate(2) - 5.0) < 1e-6\n"
           "    assert math.isclose(candidate(3), 7.0)\n")
FORMS: dict[str, tuple[str, dict]] = {  # name -> (function or class, tests)
    "humaneval": ("fn", {"test": _HE_TEST, "entry_point": "f"}),
    "humaneval_tolerance": ("fn", {"test": _HE_TOL, "entry_point": "f"}),
    "mbpp": ("fn", {"test_list": ["assert f(2) == 5", "assert f(3) == 7"]}),
    "leetcode": ("cls", {"functional": "def check(candidate):\n    assert candidate(x=2) == 5\n"
                                       "    assert candidate(x=3) == 7\n\ncheck(Solution().f)"}),
}


def _indent(code: str, n: int) -> str:
    return "".join(" " * n + line + "\n" for line in code.splitlines())


def program(attack: str, form: str) -> str:
    """The attack's load-time code, then f (or Solution.f) that runs the in-call code and
    returns x: wrong for every check."""
    prelude, in_call = ATTACKS[attack]
    if FORMS[form][0] == "fn":
        return f"{prelude}\ndef f(x):\n{_indent(in_call, 4)}    return x\n"
    return (f"{prelude}\nclass Solution:\n    def f(self, x: int) -> int:\n"
            f"{_indent(in_call, 8)}        return x\n")


# attacks that stay inside their own process and take milliseconds (the zoo of every eval)
EVAL_ATTACKS = tuple(a for a in ATTACKS
                     if a not in ("kill_everything", "memory_lookup", "forged_report_frames"))


def zoo() -> tuple[list[str], list[str], dict]:
    """The eval's zoo: ``EVAL_ATTACKS`` on the MBPP form, each a fenced completion."""
    names = list(EVAL_ATTACKS)
    return names, [f"```python\n{program(a, 'mbpp')}```" for a in names], FORMS["mbpp"][1]
