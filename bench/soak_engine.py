"""Soak of the engine core: 2,000 rounds per game played by the simulated players and dealer
(controller/simulation/autoplay.py) in accelerated time, with faults injected into the shoe's reports and the
bet sensors at random (a card lost, a red light, a card read twice, past-posting), a simulated
supervisor clearing every latched fault. Core only: no devices, no pseudo-terminals, no journal file
(the full-stack soak is the daemon's). Prints JSON: rounds settled / dead / voided, dead seats,
past-postings, faults, and whether every money line balanced and every closing re-settled identically.

    .venv/bin/python bench/soak_engine.py [--rounds N] [--seed S] [--fault-rate P]
"""

from __future__ import annotations

import argparse
import json
import random
import time
from collections import Counter

from controller.engine import JournalRecord, TableConfig, TableEngine
from controller.engine import actions as a
from controller.engine.outputs import Output
from controller.engine.state import DESIGNATED_PLAYER
from controller.rules.settle import settle_round_json
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


def soak(config: TableConfig, rounds: int, seed: int, fault_rate: float) -> dict[str, object]:
    rng = random.Random(seed)
    engine = TableEngine(config)
    player = AutoPlayer(random.Random(seed + 1))
    now = 1_800_000_000.0
    kinds: Counter[str] = Counter()
    balanced = True
    resettled = True
    closed = 0
    deck: list[int] = []
    events = 0

    def run(outputs: list[Output]) -> None:
        nonlocal balanced, resettled, closed, events, deck
        queue = list(outputs)
        while queue:
            out = queue.pop(0)
            if isinstance(out, JournalRecord):
                kinds[out.kind] += 1
                if out.kind in CLOSINGS:
                    closed += 1
                    settlement = out.payload["settlement"]
                    assert isinstance(settlement, dict)
                    nets = sum(seat["net"] for seat in settlement["seats"])
                    balanced &= nets + settlement["banker_net"] + settlement["rake"] == 0
                    resettled &= settle_round_json(out.payload["round"]) == settlement
            elif isinstance(out, Shuffle):
                deck = list(range(52))
                rng.shuffle(deck)
                events += 1
                queue += engine.handle(DeckVerified("shuffler", 52, (), ()), now)
            elif isinstance(out, Deal):
                for position, count in out.positions:
                    for index in range(count):
                        card = deck.pop()
                        roll = rng.random()
                        if roll < fault_rate / 4:
                            fault = rng.choice(["drop", "red_light", "twice", "past_post"])
                            if fault == "drop":
                                continue
                            if fault == "red_light":
                                queue += engine.handle(ShufflerFault("shuffler", "red_light", position), now)
                            elif fault == "twice":
                                card = 51 - card if 51 - card not in deck else card
                            else:
                                queue += engine.handle(BetChanged("sensors", 1, 0, 99_900, 999, True), now)
                        events += 1
                        queue += engine.handle(CardDealt("shuffler", position, index, card), now)
                    events += 1
                    queue += engine.handle(HandComplete("shuffler", position, count), now)

    started = time.perf_counter()
    steps = 0
    while closed < rounds:
        steps += 1
        if steps > rounds * 400:
            raise SystemExit(f"stalled in {engine.view().state} after {closed} rounds")
        if engine.view().held:
            for action in player.next_actions(engine.view()):
                if isinstance(action, PlaceChips):
                    run(
                        engine.handle(
                            BetChanged("sensors", action.seat, action.spot, action.amount_cents, 0, True), now
                        )
                    )
            for fault_id in list(engine.view().latched):
                run(engine.handle(a.ClearFault(fault_id, "soak-supervisor", "simulated fault checked"), now))
            continue
        actions = player.next_actions(engine.view())
        if not actions:
            now += config.decision_timeout_s + 1  # accelerated time: the walk-away timeout
            run(engine.handle(a.Tick(), now))
            continue
        for action in actions:
            now += 0.5
            events += 1
            run(engine.handle(engine_input(action, locked=engine.view().state != "betting"), now))
    elapsed = time.perf_counter() - started
    return {
        "rounds_closed": closed,
        "rounds_settled": kinds["round_settled"],
        "rounds_dead": kinds["round_dead"],
        "rounds_voided": kinds["round_voided"],
        "dead_seats": kinds["dead_hand"] - kinds["round_dead"],
        "past_postings": kinds["past_posting"],
        "faults_raised": kinds["fault_raised"],
        "faults_cleared": kinds["fault_cleared"],
        "decisions": kinds["decision"],
        "decisions_refused": kinds["decision_refused"],
        "every_money_line_balances": balanced,
        "every_closing_resettles_identically": resettled,
        "events_fed": events,
        "journal_records": sum(kinds.values()),
        "seconds": round(elapsed, 2),
        "rounds_per_s": round(closed / elapsed, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--fault-rate", type=float, default=0.05, help="chance per card of an injected fault")
    args = parser.parse_args()
    configs = {
        "high-card-flush/house": TableConfig(),
        "high-card-flush/designated-player": TableConfig(
            banking_mode=DESIGNATED_PLAYER, rake={"method": "ii", "amount": 50}, bonus_cap_cents=200_000
        ),
        "top-flush": TableConfig(game="top-flush"),
        "chase-the-flush": TableConfig(game="chase-the-flush", seats=(1, 2, 3, 4, 5, 6, 7)),
    }
    results = {
        name: soak(config, args.rounds, args.seed, args.fault_rate) for name, config in configs.items()
    }
    print(
        json.dumps(
            {
                "benchmark": "engine_soak",
                "rounds_per_game": args.rounds,
                "fault_rate_per_card": args.fault_rate,
                "results": results,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
