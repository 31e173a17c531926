"""Rounds per second through the engine core alone (no devices, no journal): the synchronous part of
`flushtable run`. Prints JSON. Not a test: the figures vary with the machine and its load."""

from __future__ import annotations

import json
import random
import statistics
import time

from controller.engine import TableConfig, TableEngine, actions
from controller.engine.outputs import JournalRecord, Output
from controller.rules.games import game_spec
from drivers.events import BetChanged, CardDealt, Deal, DealerKey, DeckVerified, HandComplete, Shuffle

ROUNDS_PER_GAME = 300


def play(config: TableConfig, rounds: int, rng: random.Random) -> tuple[float, list[float], int]:
    engine = TableEngine(config)
    wagers = game_spec(config.game).wagers
    decision_spot = wagers.index(game_spec(config.game).decision_wager)
    now = 1_800_000_000.0
    latencies: list[float] = []
    records = 0

    def feed(event: object) -> list[Output]:
        nonlocal records
        started = time.perf_counter()
        out = engine.handle(event, now)
        latencies.append(time.perf_counter() - started)
        records += sum(isinstance(o, JournalRecord) for o in out)
        return out

    started = time.perf_counter()
    for _ in range(rounds):
        pending: list[Output] = engine.handle(actions.StartRound(), now)
        seats = list(config.seats)[: game_spec(config.game).max_players]
        for seat in seats:
            pending += feed(BetChanged("sensors", seat, 0, 500, 5, False))
            if config.game == "chase-the-flush":
                pending += feed(BetChanged("sensors", seat, 1, 500, 5, False))
        deck = list(range(52))
        rng.shuffle(deck)
        for out in pending:
            if isinstance(out, Shuffle):
                feed(DeckVerified("shuffler", 52, (), ()))
        queue = list(engine.handle(actions.NoMoreBets(), now))
        while queue:
            out = queue.pop(0)
            if isinstance(out, Deal):
                for position, count in out.positions:
                    for index in range(count):
                        queue += feed(CardDealt("shuffler", position, index, deck.pop()))
                    queue += feed(HandComplete("shuffler", position, count))
                if engine.state in ("decisions", "river"):
                    for seat in seats:
                        feed(BetChanged("sensors", seat, decision_spot, 500, 5, True))
                queue += feed(DealerKey("display", "confirm"))
        feed(DealerKey("display", "next"))
        for seat in seats:
            for spot in range(len(wagers)):
                feed(BetChanged("sensors", seat, spot, 0, 0, False))
        assert engine.state == "idle", engine.state
    return time.perf_counter() - started, latencies, records


def main() -> None:
    rng = random.Random(1)
    results = {}
    for config in (
        TableConfig(),
        TableConfig(game="top-flush"),
        TableConfig(game="chase-the-flush", seats=(1, 2, 3, 4, 5, 6, 7)),
    ):
        elapsed, latencies, records = play(config, ROUNDS_PER_GAME, rng)
        latencies.sort()
        results[config.game] = {
            "rounds": ROUNDS_PER_GAME,
            "seats": len(config.seats),
            "rounds_per_s": round(ROUNDS_PER_GAME / elapsed, 1),
            "events": len(latencies),
            "journal_records": records,
            "handle_p50_us": round(statistics.median(latencies) * 1e6, 1),
            "handle_p99_us": round(latencies[int(len(latencies) * 0.99)] * 1e6, 1),
        }
    print(json.dumps({"benchmark": "engine_core", "results": results}, indent=2))


if __name__ == "__main__":
    main()
