"""How a long exact computation tells the person waiting how far it is (`flushtable math`).

The solvers call a :data:`ProgressFn` with (stage, done, total) at each step; they never print or
read a clock. :class:`ProgressPrinter` is the command line's: one line on standard error when a stage
starts and ends, and between them at most one every ``every_s`` seconds, with the share done, the time
spent and an estimate of the time left. Its clock is injected, so its tests need no sleep.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TextIO

ProgressFn = Callable[[str, int, int], None]
"""``progress(stage, done, total)``: ``done`` of ``total`` steps of ``stage`` are finished."""

DEFAULT_EVERY_S = 5.0


def _duration(seconds: float) -> str:
    whole = round(seconds)
    if whole < 60:
        return f"{whole} s"
    minutes, secs = divmod(whole, 60)
    return f"{minutes} min {secs:02d} s"


class ProgressPrinter:
    """A :data:`ProgressFn` that writes lines like
    ``math chase-the-flush: hole-hand classes 412/1,755 (23%), 2 min 05 s so far, about 7 min 00 s left``.
    """

    def __init__(
        self,
        label: str,
        out: TextIO,
        *,
        every_s: float = DEFAULT_EVERY_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.label = label
        self.out = out
        self.every_s = every_s
        self.clock = clock
        self._stage: str | None = None
        self._stage_started_s = 0.0
        self._last_line_s = 0.0

    def __call__(self, stage: str, done: int, total: int) -> None:
        now_s = self.clock()
        if stage != self._stage:
            self._stage = stage
            self._stage_started_s = now_s
            self._last_line_s = now_s
            self._write(f"{self.label}: {stage}: {total:,} steps")
            return
        finished = done >= total
        if not finished and now_s - self._last_line_s < self.every_s:
            return
        self._last_line_s = now_s
        spent_s = now_s - self._stage_started_s
        if finished:
            self._write(f"{self.label}: {stage}: done in {_duration(spent_s)}")
            return
        share = done / total if total else 0.0
        left = f", about {_duration(spent_s * (1 - share) / share)} left" if done else ""
        self._write(
            f"{self.label}: {stage} {done:,}/{total:,} ({share:.0%}), {_duration(spent_s)} so far{left}"
        )

    def _write(self, line: str) -> None:
        self.out.write(line + "\n")
        self.out.flush()
