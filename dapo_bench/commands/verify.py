"""``dapo-bench verify --verifier NAME FILE.jsonl``: score predictions with any verifier.

Reads one JSON object a line (prediction and gold fields, names per verifier or flags), writes
one JSON line per input, in order, to stdout or ``--out``, and a summary table on stderr.
The output file is written atomically at the end: an interrupted run leaves no partial file.

Math: short answers and full responses may be mixed in one file, no flag needed (the
verifier detects a bare answer); each line's ``extracted`` is the text taken as the answer,
and with ``--explain`` the line also says how it was found (``answer_from``) and which rule
decided (``rule``). A line may carry ``finish_reason`` (``stop`` or ``length``, as an eval's
samples do): a ``length`` response was cut off at the token cap and is credited only for a
boxed answer or one after an answer phrase (reason ``truncated`` otherwise).

Its flags are the fields of :class:`VerifyOptions`, each declared once with its help.
"""

from __future__ import annotations

import json
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

from dapo_bench.commands.common import examples, options_of, with_options
from dapo_bench.config import option

EXAMPLES = examples("""
    dapo-bench verify preds.jsonl                     # math: fields prediction, gold
    dapo-bench verify preds.jsonl --explain --out verdicts.jsonl
    dapo-bench verify programs.jsonl --verifier code --workers 2
""")


@dataclass(frozen=True)
class VerifyOptions:
    """``dapo-bench verify``'s flags (``FILE.jsonl`` is its argument), each declared once, here,
    with its help: a flag (:func:`register` makes them from the fields) and a row of
    docs/math-verifier.md's options table (``config.options_table``;
    tests/commands/test_command_options.py keeps the two equal)."""

    verifier: str = option("math", "a registered verifier: math | code (see 'dapo-bench list')")
    prediction_field: str | None = option(
        None, "field holding the prediction (the verifier's: math 'prediction', code 'program')")
    gold_field: str | None = option(
        None, "field holding the gold (the verifier's: math 'gold', code 'tests')")
    # option() makes a field whose default is the value given: ruff cannot tell from a Path
    out: Path | None = option(None, "write JSONL here (default: stdout)")  # noqa: RUF009
    timeout: float | None = option(None, "seconds per item (verifier's default)")
    workers: int | None = option(None, "worker processes (default: all cores)")
    explain: bool = option(False, "math: add how the answer was found and which rule decided")


def register(app: typer.Typer, option_cls: type = VerifyOptions) -> None:
    """Add ``verify`` to *app*, its flags made from *option_cls*' fields (``VerifyOptions``;
    the tests pass a subclass with a field added)."""

    def verify_cmd(
        file: Annotated[Path, typer.Argument(
            metavar="FILE.jsonl", help="JSONL input, one object a line")],
        **values: Any,
    ) -> None:
        """Verify predictions against gold answers (math) or tests (code)."""
        from dapo_bench.errors import UserError
        from dapo_bench.io import atomic_write_jsonl, check_out_file, iter_jsonl_lines
        from dapo_bench.serve.rows import check_item, verdict_row
        from dapo_bench.verifiers.base import VERIFIERS

        o = options_of(option_cls, values)
        verifier, timeout, workers, out = o.verifier, o.timeout, o.workers, o.out
        cls = VERIFIERS.get(verifier)
        pf, gf = o.prediction_field or cls.fields[0], o.gold_field or cls.fields[1]
        for flag, val in (("--timeout", timeout), ("--workers", workers)):
            if val is not None and val <= 0:
                raise UserError(f"{flag} must be > 0, got {val:g}")
        if out is not None:  # before the work: not the input, not a directory, writable
            check_out_file(out, inputs=[file])
        preds, golds, finished = [], [], []
        for i, row in iter_jsonl_lines(file):
            pred, gold, done = check_item(f"{file}:{i}", cls, row, pf, gf)
            preds.append(pred)
            golds.append(gold)
            finished.append(done)
        opts = {k: v for k, v in (("timeout", timeout), ("workers", workers)) if v is not None}
        v = cls(**opts)
        t0 = time.perf_counter()
        try:
            verdicts = v.verify_batch(preds, golds, finished=finished)
        finally:
            v.close()
        wall = time.perf_counter() - t0
        out_rows = [verdict_row(i, vd, o.explain) for i, vd in enumerate(verdicts)]
        if out is not None:
            atomic_write_jsonl(out, out_rows)
        else:
            for r in out_rows:
                sys.stdout.write(json.dumps(r, ensure_ascii=False) + "\n")
        _summary(verifier, verdicts, wall)

    def _summary(name: str, verdicts: list, wall: float) -> None:
        """The counts by reason on stderr, as plain aligned text (rich's table cost every
        call 20-45 ms of imports: a reward pipeline calls this command per batch)."""
        n = len(verdicts)
        passed = sum(v.passed for v in verdicts)
        rows = [("reason", "count"), *((r, str(c)) for r, c in
                                       Counter(v.reason for v in verdicts).most_common())]
        width = max(len(r) for r, _ in rows)
        lines = [f"{name} verifier: {passed}/{n} passed in {wall:.2f}s",
                 *(f"  {r:<{width}}  {c:>5}" for r, c in rows)]
        sys.stderr.write("\n".join(lines) + "\n")

    app.command("verify", epilog=EXAMPLES)(with_options(verify_cmd, option_cls))
