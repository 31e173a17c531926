"""What the stored totals cost to count per metered entry (controller/journal/totals.py
``totals_by_period``, which the append runs in its own transaction for every entry of METER_KINDS).
Prints JSON: the entries counted, the best of ``--repeat`` runs, and microseconds per entry.

    python bench/journal_fingerprint.py --engine-session /tmp/fp.sqlite     # a journal to count
    python bench/totals_fold_cost.py /tmp/fp.sqlite                          # this checkout
    PYTHONPATH=OTHER python OTHER/bench/totals_fold_cost.py /tmp/fp.sqlite   # another one, to compare

Wall-clock figures of a shared machine: compare two checkouts run back to back, never assert them.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from controller.journal import Journal
from controller.journal.schema import counted_rows
from controller.journal.totals import totals_by_period


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("journal", type=Path)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    with Journal.open_existing(args.journal) as journal, journal.file.lock:
        rows = list(counted_rows(journal.file.connection, journal.file.path))
    best_s = float("inf")
    for _ in range(max(1, args.repeat)):
        started = time.perf_counter()
        totals_by_period(rows)
        best_s = min(best_s, time.perf_counter() - started)
    print(
        json.dumps(
            {
                "journal": str(args.journal),
                "entries_counted": len(rows),
                "repeat": args.repeat,
                "best_s": round(best_s, 6),
                "us_per_entry": round(best_s / max(1, len(rows)) * 1e6, 2),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
