"""The floor's wire decode alone, per message: ``wire.decode`` (the msgspec fast path) against
``wire.decode_reference`` (Python's json reader and the field checks) on every body real tables' uplinks
send (docs/floor.md "CPU per message").

    python bench/bench_wire_decode.py [--rounds 10] [--repeat 5] [--out FILE]

Three simulated tables (one of each game, the real engine) play ``--rounds`` rounds each; every entry
and private-part body their uplinks would send is decoded by each decoder, ``--repeat`` times; printed
as JSON: the process CPU microseconds per message of each (the best pass: the least disturbed by the
machine's other work), and how many bodies the fast path took.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from controller.journal.store import Journal
from controller.logs import configure_logging
from controller.simulation.floor_tables import MIXED_GAMES, SimTable
from controller.uplink import wire


def _bodies(base: Path, rounds: int) -> list[bytes]:
    bodies: list[bytes] = []
    for index, game in enumerate(MIXED_GAMES):
        table_id = f"W{index}"
        journal = Journal.open(base / f"{table_id}.sqlite", table_id, synchronous="OFF")
        try:
            sim = SimTable(journal, game, random.Random(index))
            for _ in range(rounds):
                sim.play_round()
            for stored in journal.entries():
                bodies.append(wire.entry_body(stored.public_json()))
                if stored.private_text is not None:
                    bodies.append(wire.private_body(table_id, stored.seq, stored.private_text))
        finally:
            journal.close()
    return bodies


def bench(rounds: int, repeat: int) -> dict[str, Any]:
    base = Path(tempfile.mkdtemp(prefix="flushtable-bench-wire-"))
    try:
        bodies = _bodies(base, rounds)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    figures: dict[str, Any] = {
        "bodies": len(bodies),
        "mean_body_bytes": round(sum(map(len, bodies)) / len(bodies)),
        "fast_path_took": sum(1 for body in bodies if wire._decode_fast(body) is not None),
    }
    for name, decode in (("decode_reference", wire.decode_reference), ("decode", wire.decode)):
        best_s = float("inf")
        for _ in range(repeat):
            started = time.process_time()
            for body in bodies:
                decode(body)
            best_s = min(best_s, time.process_time() - started)
        figures[f"{name}_cpu_us_per_message"] = round(best_s / len(bodies) * 1e6, 2)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--out", default=None, help="also write the JSON to bench/results/FILE")
    args = parser.parse_args()
    configure_logging(level="warning")
    figures = bench(args.rounds, args.repeat)
    print(json.dumps(figures))
    if args.out:
        (Path(__file__).resolve().parent / "results" / args.out).write_text(
            json.dumps(figures, indent=2) + "\n"
        )


if __name__ == "__main__":
    main()
