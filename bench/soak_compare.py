"""Same money before and after: a faulted soak of the engine with a fixed seed, journaled to a real
journal file, whose settlements are extracted from the journal and compared with an earlier run's.

The engine is driven in-process in accelerated time, as bench/soak_engine.py drives it: the simulated
players and dealer (controller/engine/autoplay.py), a seeded shoe, faults injected into the shoe's
reports and the bet sensors (a card lost, a red light, a card read twice, past-posting), a simulated
supervisor clearing every latched fault (and now and then voiding the held round). Every journal
record the engine returns is appended, in order, to a real SQLite journal (one per table
configuration, synchronous=OFF: a soak of the logic, not of the disk). The round closings
(round_settled, round_dead, round_voided) are then read back from the journals: round_id, closing
kind, each seat's settled net, the banker's net and the rake.

    PYTHONPATH=$PWD .venv/bin/python bench/soak_compare.py --rounds 500 --out bench/results/soak-before.json
    PYTHONPATH=$PWD .venv/bin/python bench/soak_compare.py --rounds 500 --out bench/results/soak-after.json \
        --compare bench/results/soak-before.json

Prints JSON: rounds, settled rounds, identical (yes/no, with --compare) and the first difference.
Only the engine's public entry point is used (``engine.handle(item, now_s)``), so the same script
runs against the engine before and after a refactoring.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import random
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import structlog

from controller.engine import JournalRecord, TableConfig, TableEngine
from controller.engine import actions as a
from controller.engine.outputs import Output
from controller.engine.state import DESIGNATED_PLAYER
from controller.journal.store import Journal
from controller.simulation.autoplay import AutoPlayer, PlaceChips, engine_input
from drivers.events import (
    BetChanged,
    CardDealt,
    Deal,
    DeckVerified,
    HandComplete,
    Shuffle,
    ShufflerFault,
)

CLOSINGS = ("round_settled", "round_dead", "round_voided")
Closings = dict[str, list[dict[str, Any]]]
START_S = 1_800_000_000.0

CONFIGS: dict[str, TableConfig] = {
    "high-card-flush/house": TableConfig(),
    "high-card-flush/designated-player": TableConfig(
        banking_mode=DESIGNATED_PLAYER,
        rake={"method": "ii", "amount": 50},
        bonus_cap_cents=200_000,
        house_may_bank=True,
    ),
    "top-flush": TableConfig(game="top-flush"),
    "chase-the-flush": TableConfig(game="chase-the-flush", seats=(1, 2, 3, 4, 5, 6, 7)),
}


def soak(config: TableConfig, rounds: int, seed: int, fault_rate: float, journal: Journal) -> None:
    """Play ``rounds`` closed rounds on ``config``, journaling every record the engine returns."""
    rng = random.Random(seed)
    engine = TableEngine(config)
    player = AutoPlayer(random.Random(seed + 1))
    now = START_S
    closed = 0
    deck: list[int] = []

    def run(outputs: list[Output]) -> None:
        nonlocal closed, deck
        queue = list(outputs)
        while queue:
            out = queue.pop(0)
            if isinstance(out, JournalRecord):
                journal.append(out.kind, out.payload, round_id=out.round_id, source=out.source)
                if out.kind in CLOSINGS:
                    closed += 1
            elif isinstance(out, Shuffle):
                deck = list(range(52))
                rng.shuffle(deck)
                queue += engine.handle(DeckVerified("shuffler", 52, (), ()), now)
            elif isinstance(out, Deal):
                for position, count in out.positions:
                    for index in range(count):
                        card = deck.pop()
                        if rng.random() < fault_rate / 4:
                            fault = rng.choice(["drop", "red_light", "twice", "past_post"])
                            if fault == "drop":
                                continue
                            if fault == "red_light":
                                queue += engine.handle(ShufflerFault("shuffler", "red_light", position), now)
                            elif fault == "twice":
                                card = 51 - card if 51 - card not in deck else card
                            else:
                                queue += engine.handle(BetChanged("sensors", 1, 0, 99_900, 999, True), now)
                        queue += engine.handle(CardDealt("shuffler", position, index, card), now)
                    queue += engine.handle(HandComplete("shuffler", position, count), now)

    steps = 0
    while closed < rounds:
        steps += 1
        if steps > rounds * 400:
            raise SystemExit(f"stalled in {engine.view().state} after {closed} rounds")
        if engine.view().held:
            # Now and then the supervisor voids the held round instead of letting it resume.
            if rng.random() < 0.2:
                run(
                    engine.handle(
                        a.VoidRound("soak: supervisor voids the held round", "soak-supervisor"), now
                    )
                )
            for action in player.next_actions(engine.view()):
                if isinstance(action, PlaceChips):
                    run(
                        engine.handle(
                            BetChanged("sensors", action.seat, action.spot, action.amount_cents, 0, True), now
                        )
                    )
            for fault_id in sorted(engine.view().latched):
                run(engine.handle(a.ClearFault(fault_id, "soak-supervisor", "simulated fault checked"), now))
            continue
        actions = player.next_actions(engine.view())
        if not actions:
            now += config.decision_timeout_s + 1  # accelerated time: the walk-away timeout
            run(engine.handle(a.Tick(), now))
            continue
        for action in actions:
            now += 0.5
            run(engine.handle(engine_input(action, locked=engine.view().state != "betting"), now))


def settlements(journal: Journal) -> list[dict[str, Any]]:
    """Every round closing in the journal, in order: the money each seat and the banker settled to."""
    closings: list[dict[str, Any]] = []
    for entry in journal.entries(kinds=CLOSINGS):
        settlement = entry.payload["settlement"]
        closings.append(
            {
                "round_id": entry.round_id,
                "kind": entry.kind,
                "seats": {str(seat["seat"]): seat["net"] for seat in settlement["seats"]},
                "banker_net": settlement["banker_net"],
                "rake": settlement["rake"],
            }
        )
    return closings


def journal_digest(journal: Journal) -> str:
    """A digest of every entry's kind, round, source and public payload, in order: a stricter check
    than the money (the same records, not only the same settlements)."""
    digest = hashlib.sha256()
    for entry in journal.entries():
        line = [entry.kind, entry.round_id, entry.source, entry.payload]
        digest.update(json.dumps(line, sort_keys=True).encode() + b"\n")
    return digest.hexdigest()


def first_difference(
    before: dict[str, list[dict[str, Any]]], after: dict[str, list[dict[str, Any]]]
) -> object:
    for table in sorted(set(before) | set(after)):
        old, new = before.get(table, []), after.get(table, [])
        for index in range(max(len(old), len(new))):
            a_round = old[index] if index < len(old) else None
            b_round = new[index] if index < len(new) else None
            if a_round != b_round:
                return {"table": table, "index": index, "before": a_round, "after": b_round}
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2000, help="rounds closed per table configuration")
    parser.add_argument("--seed", type=int, default=12)
    parser.add_argument("--fault-rate", type=float, default=0.05, help="chance per card of an injected fault")
    parser.add_argument("--out", type=Path, required=True, help="write the settlements here (JSON)")
    parser.add_argument("--compare", type=Path, help="an earlier run's settlements to compare with")
    args = parser.parse_args()
    # The journal logs every entry it appends: a soak of 2,000 rounds would print 200,000 lines.
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.ERROR))
    started = time.perf_counter()
    result: Closings = {}
    digests: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as scratch:
        for number, (name, config) in enumerate(CONFIGS.items()):
            clock = lambda: datetime(2027, 1, 15, tzinfo=UTC)  # noqa: E731 (the journal's own timestamps)
            path = Path(scratch) / f"table-{number}.sqlite"
            with Journal.open(path, config.table_id, clock=clock, synchronous="OFF") as journal:
                soak(config, args.rounds, args.seed + number, args.fault_rate, journal)
                result[name] = settlements(journal)
                digests[name] = journal_digest(journal)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    saved = {"seed": args.seed, "fault_rate": args.fault_rate, "tables": result, "journal_sha256": digests}
    args.out.write_text(json.dumps(saved, indent=1))
    closings = [round_ for rounds in result.values() for round_ in rounds]
    report: dict[str, object] = {
        "benchmark": "soak_compare",
        "seed": args.seed,
        "fault_rate_per_card": args.fault_rate,
        "rounds": len(closings),
        "settled_rounds": sum(1 for round_ in closings if round_["kind"] == "round_settled"),
        "dead_rounds": sum(1 for round_ in closings if round_["kind"] == "round_dead"),
        "voided_rounds": sum(1 for round_ in closings if round_["kind"] == "round_voided"),
        "by_table": {name: len(rounds) for name, rounds in result.items()},
        "seconds": round(time.perf_counter() - started, 1),
        "written": str(args.out),
    }
    if args.compare is not None:
        earlier = json.loads(args.compare.read_text())
        difference = first_difference(earlier["tables"], result)
        report["compared_with"] = str(args.compare)
        report["identical"] = "yes" if difference is None else "no"
        report["first_difference"] = difference
        report["journals_identical"] = "yes" if earlier.get("journal_sha256") == digests else "no"
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
