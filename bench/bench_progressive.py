"""The linked progressive's must-show, printed as one JSON line (docs/floor.md "Linked progressive"):
one meter over 50 simulated tables for 20,000 rounds, hits forced by presets, while the floor process,
nats-server and PostgreSQL are each SIGKILLed and started again; then the books checked to the cent.

    python bench/bench_progressive.py [--tables 50] [--rounds 20000] [--dir DIR]

How the tables are driven (controller/simulation/linked_tables.py): each is a real journal (SQLite)
with a real uplink to a real nats-server (TLS, one user per table) and a real link client; a round
writes round_started, bets_locked (each seat's ante and Progressive unit) and round_settled whose
settlement is the rules' own ``settle_progressive`` result, then the table claims its hits over NATS.
Rounds go round robin over the tables at ``--rate`` rounds a second across the floor (default 100: 2 a
second per table, a hundred times a real table's pace; no cards are dealt: the
hits are the presets', the engine's own Progressive round is tested in tests/progressive/). Presets:
every 97th round one table has several hits (two 7-card runs sharing the meter, a 6-card run, a 5-card
and a 3-card run); every 151st, two tables hit the 7-card level one after the other; otherwise a fixed
award at about 1 round in 80. At 1/4, 1/2 and 3/4 of the rounds one server is SIGKILLed (the floor
process running the floor service and the linked progressive; nats-server; PostgreSQL, postmaster and
backends): just before, a table hits (its claim is made while the link is lost); the tables play on
until every link reports lost (their Progressive wagers refused at the lock) and then the server is
started again. Every 500 rounds (``--confirm-every``) a supervisor confirms the meter awards pending
so far, in the order recorded, each twice (the second a replay); the rest at the end. The tables'
100 connections live in this one process: after a restart they connect a few at a time
(controller/simulation/linked_floor.py ``CONNECTS_AT_ONCE``), as 50 separate tables would. Checked
after (from PostgreSQL's rows and the journals, controller/simulation/linked_floor.py ``check_books``):
base + Σ increments + Σ resets − Σ meter awards = the meter;
Σ hidden − Σ resets funded + Σ overflow = the reserve; every award paid exactly once, confirmations in
the order the controller recorded the awards; every claim's awards for exactly the seats it named;
the in-meter = the journals' count of settled Progressive wagers = the tables' own count; every claim
sent again gets its first answer and records nothing. ``problems`` empty: all of it holds.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import tempfile
from pathlib import Path

from controller.logs import configure_logging
from controller.simulation.floor.embedded import EmbeddedFloor
from controller.simulation.linked_floor import Scenario, run_scenario


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--tables", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=20_000)
    parser.add_argument(
        "--down-rounds", type=int, default=100, help="rounds played while each server is down"
    )
    parser.add_argument("--seed", type=int, default=23)
    parser.add_argument("--no-kills", action="store_true")
    parser.add_argument(
        "--rate", type=float, default=100.0, help="rounds a second across the floor (0: unpaced)"
    )
    parser.add_argument(
        "--confirm-every",
        type=int,
        default=500,
        help="rounds between a supervisor's confirmations (0: at the end)",
    )
    parser.add_argument("--timeout-s", type=float, default=900.0)
    parser.add_argument("--out", default="progressive.json", help="the file under bench/results/")
    parser.add_argument(
        "--dir", default=None, help="where the servers and journals live (default: a temp dir)"
    )
    args = parser.parse_args()
    configure_logging(level="warning")  # the journal logs every entry at info
    base = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="flushtable-bench-progressive-"))
    base.mkdir(parents=True, exist_ok=True)
    os.chmod(base, 0o755)  # the cluster runs as the postgres user
    table_ids = [f"T{n:03d}" for n in range(1, args.tables + 1)]
    floor = EmbeddedFloor(base / "floor", table_ids, ack_wait_s=2)
    scenario = Scenario(
        tables=args.tables,
        rounds=args.rounds,
        kills=not args.no_kills,
        down_rounds=args.down_rounds,
        seed=args.seed,
        timeout_s=args.timeout_s,
        rate_per_s=args.rate or None,
        confirm_every=args.confirm_every or None,
    )
    try:
        floor.start()
        figures = {
            "tables": args.tables,
            "rounds": args.rounds,
            **asyncio.run(run_scenario(base, floor, scenario)),
        }
        figures["ok"] = not figures["problems"]
        print(json.dumps(figures))
        results = Path(__file__).resolve().parent / "results" / args.out
        results.write_text(json.dumps(figures, indent=2) + "\n")
    finally:
        floor.stop()
        if not args.dir:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
