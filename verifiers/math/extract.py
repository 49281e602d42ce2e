"""Finding the final answer in a model response, and the gold answer in a worked solution.

Order of precedence in :func:`extract_answer` (the first that finds something wins):

1. the last ``\\boxed{...}`` or ``\\fbox{...}`` (nested braces; ``\\boxed 5`` too);
2. the last "final answer is", "the answer is", "answer:" (any case) or GSM8K ``####``,
   read up to the end of its line or sentence; an answer written in ``$..$``, ``\\(..\\)``
   or ``\\[..\\]`` right after the phrase is read to its closing delimiter;
3. if ``fallback_last_number`` is on (a task spec can switch it off), the last number in the
   text (``-12``, ``3.5``, ``1,000``, ``3/4``).

Only the last box counts: ``\\boxed{1331} and \\boxed{1728}`` extracts ``1728``.
Not covered: answers stated only in words ("the answer is five"), or given before a
later unrelated box.
"""

from __future__ import annotations

import re

from dapo_bench.errors import UserError

MAX_TEXT = 100_000  # characters of a model response we scan at all; longer is too_large

_BOX = re.compile(r"\\(?:boxed|fbox)(?![a-zA-Z])")
_PHRASE = re.compile(r"final answer is|the answer is|answer\s*:|####", re.IGNORECASE)
_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?(?:/\d+)?")
_SENTENCE_END = re.compile(r"\.(?:\s|$)|\n")
_CLOSERS = {"$$": "$$", "$": "$", "\\(": "\\)", "\\[": "\\]"}


def _braced(text: str, start: int) -> str | None:
    """Content of the brace group opening at text[start] (``\\{``/``\\}`` do not count)."""
    depth, i, n = 0, start, len(text)
    while i < n:
        ch = text[i]
        if ch == "\\":
            i += 2
            continue
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return text[start + 1:i]
        i += 1
    return None


def last_boxed(text: str) -> str | None:
    """Content of the last complete ``\\boxed{}``/``\\fbox{}`` in *text*, or None."""
    starts = [m.end() for m in _BOX.finditer(text)]
    for pos in reversed(starts):
        i = pos
        while i < len(text) and text[i] in " \t\n":
            i += 1
        if i < len(text) and text[i] == "{":
            got = _braced(text, i)
            if got is not None:
                return got.strip()
        elif i > pos:  # "\boxed 5": one token, up to a space or a math delimiter
            m = re.match(r"[^\s$]+", text[i:])
            if m:
                return m.group(0).rstrip(".")
    return None


def _after_phrase(text: str) -> str | None:
    last = None
    for last in _PHRASE.finditer(text):
        pass
    if last is None:
        return None
    rest = text[last.end():].lstrip(" \t:*")
    for opener in ("$$", "$", "\\(", "\\["):
        if rest.startswith(opener):
            end = rest.find(_CLOSERS[opener], len(opener))
            if end > 0:
                return rest[len(opener):end].strip()
    m = _SENTENCE_END.search(rest)
    ans = (rest[: m.start()] if m else rest).strip()
    return ans or None


def extract_answer(text: str, *, fallback_last_number: bool = True) -> str | None:
    """The final answer of a model response (see the module docstring), or None."""
    if not isinstance(text, str) or not text.strip():
        return None
    boxed = last_boxed(text)
    if boxed is not None:
        return boxed
    ans = _after_phrase(text)
    if ans is not None:
        return ans
    if fallback_last_number:
        last = None
        for last in _NUMBER.finditer(text):
            pass
        if last is not None:
            return last.group(0).rstrip(",")
    return None


def extract_gold_from_solution(solution_text: str) -> str:
    """The gold answer inside a worked solution: its last ``\\boxed{}`` (MATH, Minerva), else
    the text after GSM8K's ``####``. Raises UserError when there is neither."""
    boxed = last_boxed(solution_text)
    if boxed is not None:
        return boxed
    if "####" in solution_text:
        return solution_text.rsplit("####", 1)[1].strip()
    raise UserError(f"no \\boxed{{}} or #### answer in solution {solution_text[:60]!r}...")
