"""The crash test's child: recovers the journal like the daemon does at start, then plays rounds
forever, one entry per transaction, printing each entry's seq and hash once ``append`` has returned
(so the parent knows what was committed when it sends SIGKILL).

    python -m tests.journal.appender JOURNAL SEED [deferred]

``deferred``: the checkpoints as the daemon runs them (controller/daemon_checkpoints.py): none inside a
commit, a thread checkpointing beside the appends on a connection of its own.
"""

from __future__ import annotations

import random
import sys
import threading
import time
from collections.abc import Iterable

from controller.daemon_checkpoints import catch_up
from controller.journal import Journal, JournalEntry
from controller.journal.recovery import recover
from controller.journal.store import AppendItem
from controller.logs import configure_logging
from tests.journal.scripted import play_round


class ReportingJournal(Journal):
    def append_many(self, items: Iterable[AppendItem]) -> list[JournalEntry]:
        written = super().append_many(items)
        for entry in written:
            sys.stdout.write(f"{entry.seq} {entry.hash}\n")
        sys.stdout.flush()
        return written


def main() -> None:
    path, seed = sys.argv[1], int(sys.argv[2])
    configure_logging(level="warning")  # standard output carries the report
    rng = random.Random(seed)
    journal = ReportingJournal.open(path, "T1")
    if sys.argv[3:] == ["deferred"]:
        journal.wal.defer_checkpoints()
        checkpointer = Journal.open_existing(path, readonly=False)

        def checkpoints() -> None:
            while True:
                catch_up(checkpointer)
                time.sleep(0.002)

        threading.Thread(target=checkpoints, daemon=True).start()
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    recover(journal)
    for _ in range(10_000):  # bounded; the parent kills it long before
        game = rng.choice(("high-card-flush", "top-flush", "chase-the-flush"))
        mode = "designated-player" if game == "high-card-flush" and rng.random() < 0.3 else "house"
        play_round(journal, rng, game=game, banking_mode=mode, batch=False)


if __name__ == "__main__":
    main()
