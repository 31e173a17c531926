"""The Python a floor batch's writes spend building the tables' and rounds' rows, side by side: what
``write_batch`` does before PostgreSQL (``round_rows``, ``table_row``, the two upserts' documents), in
CPU microseconds per message of a catch-up, for each checkout given, alternating (docs/floor.md
"Eleventh stop").

    python bench/bench_floor_batch_rows.py [--code DIR ...] [--tables 300] [--rounds 2] [--batch 1000]
                                           [--repeat 3]

Each turn runs in a child process of its own (``--code`` first on its import path: e.g. ``git archive
main | tar -x -C /tmp/before``; default: this checkout). ``--tables`` simulated tables (the real engine,
the three games in turn) play ``--rounds`` rounds; their messages (each round's private part after its
entry) are interleaved three at a time a table, as the tables' uplinks fill the stream together, and
taken by the checkout's ``FloorService._take_all`` in batches of ``--batch`` (the tables held in memory,
as in a running service). After each batch's take, the rows and documents its writes would send are built
and timed; the least of five passes. No server: the rows' Python only, which the whole service's figures
(bench/bench_floor_cpu.py) cannot resolve on a loaded machine.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

from code_turns import alternate_codes

_PASSES = 5

_CHILD = """
import asyncio, inspect, random, shutil, sys, tempfile, time
from pathlib import Path
from typing import Any, cast

from controller.floor import store
from controller.floor.checks import TableProjection
from controller.floor.intake import Delivery, RawHeaders
from controller.floor.service import FloorService
from controller.journal.state import TableState
from controller.journal.store import Journal
from controller.logs import configure_logging
from controller.simulation.floor_tables import MIXED_GAMES, SimTable
from controller.uplink import wire

configure_logging(level="warning")
tables, rounds, batch_size, passes = (int(a) for a in sys.argv[1:5])
# The tables' upsert document as the checkout builds it (its meters' JSON kept, where it has that).
keeps_json = "encoded_meters" in inspect.signature(store.table_row).parameters
encoded = {"encoded_meters": True} if keeps_json else {}

base = Path(tempfile.mkdtemp(prefix="flushtable-bench-rows-"))
bodies = {}
try:
    for index in range(tables):
        table_id = f"T{index:03d}"
        journal = Journal.open(base / f"{table_id}.sqlite", table_id, synchronous="OFF")
        sim = SimTable(journal, MIXED_GAMES[index % 3], random.Random(index))
        for _ in range(rounds):
            sim.play_round()
        bodies[table_id] = []
        for stored in journal.entries():
            bodies[table_id].append(wire.entry_body(stored.public_json()))
            if stored.private_text is not None and stored.round_id is not None:
                bodies[table_id].append(wire.private_body(table_id, stored.seq, stored.private_text))
        journal.close()
finally:
    shutil.rmtree(base, ignore_errors=True)
order = []
at = dict.fromkeys(bodies, 0)
while any(at[t] < len(bodies[t]) for t in bodies):
    for table_id, table_bodies in bodies.items():
        order += [(table_id, body) for body in table_bodies[at[table_id] : at[table_id] + 3]]
        at[table_id] += 3
headers = RawHeaders(b"NATS/1.0\\r\\nNats-Msg-Id: x\\r\\n\\r\\n")
deliveries = [
    Delivery(n, f"flushtable.main.{t}.journal", headers, body, f"$JS.ACK.FLUSHTABLE.floor.1.{n}.{n}.1.5")
    for n, (t, body) in enumerate(order, 1)
]


class Config:
    consumer = "floor"
    side_duties = False

    def __getattr__(self, name):
        return 1.0


def one_pass():
    service: Any = FloorService.__new__(FloorService)
    FloorService.__init__(service, cast(Any, Config()))
    for table_id in bodies:
        service._projections._tables[table_id] = TableProjection(table_id, state=TableState(table_id))
    loop = asyncio.new_event_loop()
    spent = 0.0
    try:
        for first in range(0, len(deliveries), batch_size):
            batch = store.Batch()
            loop.run_until_complete(service._take_all(None, batch, deliveries[first : first + batch_size]))
            started = time.process_time()
            store.rows_document(list(store.round_rows(batch.tables.values())))
            store.rows_document([store.table_row(p, **encoded) for p in batch.tables.values()])
            spent += time.process_time() - started
            for projection in batch.tables.values():
                projection.touched_rounds.clear()
    finally:
        loop.close()
    return spent / len(deliveries) * 1e6


print(min(one_pass() for _ in range(passes)))
"""


def _turn(code: Path, tables: int, rounds: int, batch: int) -> float:
    env = {**os.environ, "PYTHONPATH": str(code)}
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(tables), str(rounds), str(batch), str(_PASSES)],
        env=env,
        cwd=code,
        capture_output=True,
        text=True,
        check=True,
    )
    return round(float(done.stdout.strip().splitlines()[-1]), 3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--code", action="append", default=[], help="a checkout to run the rows from")
    parser.add_argument("--tables", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    figures = alternate_codes(
        args.code, args.repeat, lambda code: _turn(code, args.tables, args.rounds, args.batch)
    )
    print(
        json.dumps(
            {
                "tables": args.tables,
                "rounds": args.rounds,
                "batch": args.batch,
                "us_cpu_a_message": figures,
                "load_average": os.getloadavg(),
            }
        )
    )


if __name__ == "__main__":
    main()
