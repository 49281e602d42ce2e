"""Progress display for eval and training stages: rich bars (items, rate, ETA) on a terminal;
plain log lines (one per update, at most every 10 s, plus the end) with ``quiet`` or when stderr
is not a TTY. Each line names the stage's own unit (``mc labels: 64/17727 states``); items read
back from a resumed run count as done but not in the rate or the ETA.

Not covered: nested bars; progress of the model load itself.
"""

from __future__ import annotations

import sys
import time
from typing import Any


class Progress:
    def __init__(self, quiet: bool = False):
        self.quiet = quiet
        self.plain = quiet or not sys.stderr.isatty()
        self._rich: Any = None
        self._state: dict[Any, list] = {}
        if not self.plain:
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )
            from rich.progress import Progress as RichProgress

            self._rich = RichProgress(
                TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                _rate_column(), TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
            )
            self._rich.start()

    def start(self, name: str, total: int, done: int, unit: str = "problems") -> Any:
        if self._rich is not None:
            return self._rich.add_task(f"{name} ({unit})", total=total, completed=done)
        self._state[name] = [total, done, done, time.perf_counter(), 0.0, unit]
        if done:
            self._log(f"{name}: {done}/{total} {unit} already done, resuming")
        return name

    def advance(self, bar: Any, k: int, resumed: bool = False) -> None:
        """``k`` more items done; ``resumed``: read back from an earlier run, not made now."""
        if self._rich is not None:
            if resumed:  # restart the bar's clock and rate at the new count
                task = next(t for t in self._rich.tasks if t.id == bar)
                self._rich.reset(bar, total=task.total, completed=task.completed + k)
            else:
                self._rich.update(bar, advance=k)
            return
        st = self._state[bar]
        st[1] += k
        if resumed:
            st[2] += k
            st[3] = time.perf_counter()
            return
        now = time.perf_counter()
        if now - st[4] >= 10 or st[1] >= st[0]:
            st[4] = now
            if now - st[3] < 1.0:  # just (re)started: no rate to speak of yet
                self._log(f"{bar}: {st[1]}/{st[0]} {st[5]}")
                return
            rate = (st[1] - st[2]) / (now - st[3])
            eta = (st[0] - st[1]) / rate if rate > 0 else float("inf")
            self._log(f"{bar}: {st[1]}/{st[0]} {st[5]}, {rate:.2f}/s, ETA {eta:.0f}s")

    def finish(self, bar: Any, made: int | None = None) -> None:
        """``made``: this rank's share of the new items, when several ranks fill one bar."""
        if self._rich is None:
            st = self._state[bar]
            if made is not None:
                what = f"made {made} of the {st[0] - st[2]} new {st[5]}"
            else:
                what = f"{st[1]}/{st[0]} {st[5]}" + (f", {st[1] - st[2]} new" if st[2] else "")
            self._log(f"{bar}: done ({what}) in {time.perf_counter() - st[3]:.1f}s")

    def note(self, msg: str) -> None:
        """One line on stderr (nothing when quiet)."""
        if self._rich is not None:
            self._rich.console.print(msg, highlight=False)
        elif not self.quiet:
            self._log(msg)

    def close(self) -> None:
        if self._rich is not None:
            self._rich.stop()
            self._rich = None

    @staticmethod
    def _log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)


def _rate_column() -> Any:
    from rich.progress import ProgressColumn
    from rich.text import Text

    class RateColumn(ProgressColumn):
        """Problems per second over this run's progress (resumed problems not counted)."""

        def render(self, task: Any) -> Text:
            return Text("-/s" if task.speed is None else f"{task.speed:.2f}/s")

    return RateColumn()

