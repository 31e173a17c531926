"""The segments' crash test's child (tests/journal/test_segments_crash.py): starts as `run` does
(the start-up proof, which finishes a seal a crash cut short; recovery, which voids the interrupted
round), then plays rounds forever, one entry per transaction, and seals the open segment after every
``ROUNDS_PER_SEGMENT`` rounds as `run` seals it (the anchor at its end first). It prints each entry's
seq and hash once its append has returned, and ``sealed N`` once a seal has returned, so the parent
knows what was committed when it sends SIGKILL.

    python -m tests.journal.segment_appender JOURNAL SEED KEY_HEX
"""

from __future__ import annotations

import random
import sys
from collections.abc import Iterable
from pathlib import Path

from controller.journal import Journal, JournalEntry
from controller.journal.anchor import Anchor, write_anchor
from controller.journal.proof import prepare_for_run
from controller.journal.recovery import rebuild_state, recover
from controller.journal.segments import seal_open_segment
from controller.journal.store import AppendItem
from controller.logs import configure_logging
from tests.journal.scripted import play_round

ROUNDS_PER_SEGMENT = 1


class ReportingJournal(Journal):
    def append_many(self, items: Iterable[AppendItem]) -> list[JournalEntry]:
        written = super().append_many(items)
        for entry in written:
            sys.stdout.write(f"{entry.seq} {entry.hash}\n")
        sys.stdout.flush()
        return written


def main() -> None:
    path, seed, key = Path(sys.argv[1]), int(sys.argv[2]), bytes.fromhex(sys.argv[3])
    configure_logging(level="warning")  # standard output carries the report
    rng = random.Random(seed)

    def anchor_at(seq: int, hash_hex: str) -> None:
        write_anchor(path, Anchor.of("T1", seq, hash_hex), key=key)

    anchored = prepare_for_run(path, "T1", key=key)
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    journal = ReportingJournal.open(path, "T1")
    recover(journal, anchored=anchored)
    for _ in range(10_000):  # bounded; the parent kills it long before
        for _ in range(ROUNDS_PER_SEGMENT):
            game = rng.choice(("high-card-flush", "top-flush", "chase-the-flush"))
            mode = "designated-player" if game == "high-card-flush" and rng.random() < 0.3 else "house"
            # Half the rounds an entry a transaction (a kill leaves one open), half one transaction.
            play_round(journal, rng, game=game, banking_mode=mode, batch=rng.random() < 0.5)
            last = journal.last_entry()
            assert last is not None
            anchor_at(last.seq, last.hash)  # as the daemon anchors a round's close
        state = rebuild_state(journal)
        journal.close()
        seal = seal_open_segment(path, state, key=key, write_anchor_at_end=anchor_at)
        assert seal is not None
        sys.stdout.write(f"sealed {seal.segment}\n")
        sys.stdout.flush()
        journal = ReportingJournal.open(path, "T1")


if __name__ == "__main__":
    main()
