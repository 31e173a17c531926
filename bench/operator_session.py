"""The operator's entries of one seeded session, from two checkouts, compared (issue 29: the
operator_action split). Prints JSON.

    PYTHONPATH=<old tree> python bench/operator_session.py --write OLD.sqlite   # the earlier release
    python bench/operator_session.py --write NEW.sqlite                         # this checkout
    python bench/operator_session.py --compare OLD.sqlite NEW.sqlite            # this checkout

``--write`` plays the same seeded rounds through the real engine (tests/journal/scripted.py: a kill
asked by the dealer and confirmed, a past-posted spot accepted, over-limit raises refused, a voided
round) and a manager's settings and refusals (tests/engine/table.py), appending every record the
engine returns to OUT with that checkout's ``Journal``. ``--compare`` reads both with this release:
every row but the operator's must be byte-identical (seq, round, source, kind, version, payload and
private part without its salt), and each earlier ``operator_action`` must read (upcast) as exactly the
entry this release wrote in its place.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sqlite3
import sys
from contextlib import closing
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SALT = re.compile(rb',?"salt":"[0-9a-f]+"')
ROUNDS = 6


def write(out: Path) -> None:
    sys.path.append(str(ROOT))  # tests/ of the checkout first on PYTHONPATH, else this one's
    from controller.engine import TableConfig  # noqa: PLC0415 - the checkout's, after the path is set
    from controller.engine import actions as a  # noqa: PLC0415
    from controller.journal import Journal  # noqa: PLC0415
    from tests.engine.table import Table, stack  # noqa: PLC0415
    from tests.journal.scripted import play_round  # noqa: PLC0415

    rng = random.Random(29)
    with Journal.open(out, "OP") as journal:
        for n in range(ROUNDS):
            play_round(journal, rng, players=3, over_limit_rate=0.5, past_post=n % 2 == 0,
                       accept_past_post=True, kill_request=n % 3 == 0)  # fmt: skip
        play_round(journal, rng, outcome="void")
        table = Table(TableConfig(table_id="OP", config_digest="d1"), stack())
        for action in (
            a.SetLimits(200, 50_000, "mia"),
            a.SetBonusLimit("flush", 1000, "mia"),
            a.SetPaytable("flush", "hcf-flush-dp", "mia"),
            a.SetLimits(5000, 1000, "mia"),  # refused
            a.VoidRound("no round", "sue"),  # refused
            a.StartRound(),
        ):
            table.call(table.engine.handle, action, table.now_s)
        table.bet(1, "ante", 500)
        table.call(table.engine.handle, a.KillSeat(1, "left the table", "sam"), table.now_s)
        journal.append_many(table.journal())


def _rows(path: Path) -> list[tuple[Any, ...]]:
    with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
        return db.execute(
            "SELECT seq, round_id, source, kind, version, CAST(payload AS BLOB), CAST(private AS BLOB) "
            "FROM journal ORDER BY seq"
        ).fetchall()


def compare(old: Path, new: Path) -> dict[str, Any]:
    from controller.journal import Journal  # noqa: PLC0415

    old_rows, new_rows = _rows(old), _rows(new)
    with Journal.open_existing(old, readonly=True) as a, Journal.open_existing(new, readonly=True) as b:
        old_entries, new_entries = list(a.entries()), list(b.entries())
    same = upcast_equal = upcast_differ = other_differ = 0
    for old_row, new_row, old_entry, new_entry in zip(
        old_rows, new_rows, old_entries, new_entries, strict=True
    ):
        if old_row[3] == "operator_action":
            equal = old_row[:3] == new_row[:3] and old_entry.entry == new_entry.entry
            upcast_equal += equal
            upcast_differ += not equal
            continue
        strip = [SALT.sub(b"", part) if isinstance(part, bytes) else part for part in (*old_row, *new_row)]
        if strip[:7] == strip[7:]:
            same += 1
        else:
            other_differ += 1
    kinds_new = sorted(
        {row[3] for row, old_row in zip(new_rows, old_rows, strict=True) if old_row[3] == "operator_action"}
    )
    return {
        "entries": [len(old_rows), len(new_rows)],
        "rows_byte_identical": same,
        "rows_differing": other_differ,
        "operator_action_rows": upcast_equal + upcast_differ,
        "operator_action_read_as_the_new_entry": upcast_equal,
        "operator_action_read_otherwise": upcast_differ,
        "written_now_as": kinds_new,
        "ok": len(old_rows) == len(new_rows) and other_differ == 0 and upcast_differ == 0,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", type=Path)
    parser.add_argument("--compare", type=Path, nargs=2)
    args = parser.parse_args()
    if args.write is not None:
        write(args.write)
    if args.compare is not None:
        print(json.dumps(compare(*args.compare), indent=2))


if __name__ == "__main__":
    main()
