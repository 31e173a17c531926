"""Must show (issue 30): `flushtable run` SIGKILLed at random moments, one of them right after a round
settles, and one byte flipped in the last transaction of its write-ahead log each time: no settled
round that anything acted on (printed, paid, anchored) is ever voided without the table refusing to
open, and `journal verify` refuses exactly when `run` does, with the same reason
(tests/daemon/crash_flip.py says what each trial checks).

A few kills here (about 4 s each); a longer run: FLUSHTABLE_CRASH_FLIP_KILLS=60, or
`python -m tests.daemon.crash_flip --kills 60`, which prints its figures."""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.daemon.crash_flip import flip_repeatedly

KILLS = int(os.environ.get("FLUSHTABLE_CRASH_FLIP_KILLS", "8"))
SEED = 30


def test_no_settled_round_acted_on_is_voided_after_a_kill_and_a_flipped_wal_byte(tmp_path: Path) -> None:
    report = flip_repeatedly(KILLS, SEED, tmp_path)
    figures = report.figures()
    print(f"\n{json.dumps(figures)}")
    assert figures["problems"] == []
    assert figures["kills"] == KILLS
    # The trials tested something: a transaction was flipped, and rounds had been printed as settled.
    assert figures["wal_transaction_flipped"] > 0
    assert figures["rounds_printed_before_kills"] > 0
