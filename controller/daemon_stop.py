"""How `flushtable run` stops (docs/operations.md "Stopping the table"): what the daemon tells the
person at the terminal, and how long it waits for the round in play.

    first Ctrl-C (SIGINT) or SIGTERM: "stopping: ..." on standard error at once; no new round; the
        round in play may finish for up to the decision timeout (wall seconds), then the table stops
    second Ctrl-C or SIGTERM: "stopping now: ..."; the wait for the round ends at once; the open round
        is voided at the next start with every wager returned (journal recovery, as after a crash)

Nothing waits longer than the decision timeout for the round: a walk-away is the longest a round in
play can stall on the people at the table, and a supervisor stopping a table must not wait on a seat
that has gone. After the wait the shutdown itself takes well under a second (controller/daemon.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from collections.abc import Callable
from typing import TextIO

from controller.daemon_journal import DaemonJournal
from controller.daemon_start import StartCancelled, cancel_start

ROUND_CHECK_S = 0.05  # how often the wait looks whether the round in play has closed
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


def open_journal_unless_cancelled(
    ledger: DaemonJournal, loop: asyncio.AbstractEventLoop, *, new_journal: bool
) -> bool:
    """The journal opened and proved (controller/journal/proof.py); False: a signal cancelled the
    start meanwhile (said on standard error, nothing appended, the loop's handlers removed)."""
    during_proof = {
        signal_number: signal.signal(signal_number, cancel_start) for signal_number in STOP_SIGNALS
    }
    try:
        ledger.open(new_journal=new_journal)
    except BaseException as error:
        remove_stop_signal_handlers(loop)
        if not isinstance(error, StartCancelled):
            raise
        if ledger.opened:
            ledger.close()
        print(f"stopping: {error} before the table opened (nothing appended)", file=sys.stderr)
        return False
    finally:
        for signal_number, handler in during_proof.items():
            signal.signal(signal_number, handler)  # back to the loop's (asyncio's own) handler
    return True


def remove_stop_signal_handlers(loop: asyncio.AbstractEventLoop) -> None:
    for signal_number in STOP_SIGNALS:
        loop.remove_signal_handler(signal_number)  # False when already removed


class StopRequest:
    """The stop of one daemon: asked for (by a signal, the rounds asked for, or a failure), and asked
    for *now* (a second signal). Messages go to ``err`` (the terminal), not the log alone."""

    def __init__(self, round_wait_s: float, *, err: TextIO | None = None) -> None:
        self.round_wait_s = round_wait_s  # the decision timeout, in wall seconds
        self.err = err
        self.asked = asyncio.Event()
        self.now = asyncio.Event()
        self.signals = 0

    def _say(self, line: str) -> None:
        print(line, file=self.err if self.err is not None else sys.stderr, flush=True)

    def signalled(self, round_in_play: bool) -> None:
        """SIGINT or SIGTERM: the first stops after the round in play; the next stops now."""
        self.signals += 1
        if self.signals == 1:
            if round_in_play:
                self._say(
                    "stopping: the round in play finishes first "
                    f"(up to {self.round_wait_s:g} s: the decision timeout); press Ctrl-C again to stop "
                    "now - the open round is voided with every wager returned at the next start"
                )
            else:
                self._say("stopping: no round in play")
        elif not self.now.is_set():
            open_round = ": the open round is voided with every wager returned at the next start"
            self._say(f"stopping now{open_round if round_in_play else ''}")
            self.now.set()
        self.asked.set()

    async def wait_round(self, round_in_play: Callable[[], bool]) -> None:
        """Until the round in play has closed, the decision timeout has passed, or a second signal."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(self.round_wait_s):
                while round_in_play() and not self.now.is_set():
                    with contextlib.suppress(TimeoutError):
                        async with asyncio.timeout(ROUND_CHECK_S):
                            await self.now.wait()
