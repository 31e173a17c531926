"""Rounds per second through the engine core alone (no devices, no journal): the synchronous part of
`flushtable run`. Prints JSON. Not a test: the figures vary with the machine and its load.

``--compare DIR`` (issue 28: the engine core side by side with another checkout in one run): for each of
``--passes`` passes, DIR's engine and this checkout's each play the same seeded rounds of every game in
a fresh interpreter (this file's harness for both, the engine imported from each checkout), in turn, so
that both meet the same load; prints each pass's CPU (the process's, not the wall clock) per round and
the median ratio of rounds per CPU second, this checkout over DIR's."""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

from controller.engine import TableConfig, TableEngine, actions
from controller.engine.outputs import JournalRecord, Output
from controller.rules.games import game_spec
from drivers.events import BetChanged, CardDealt, Deal, DealerKey, DeckVerified, HandComplete, Shuffle

ROUNDS_PER_GAME = 300


def state_of(engine: TableEngine) -> str:
    """The table's state, from this checkout's engine (``view()``) or, under ``--compare``, from a
    checkout's from before the view (its ``state`` property)."""
    view = getattr(engine, "view", None)
    state: str = view().state if view is not None else getattr(engine, "state")  # noqa: B009
    return state


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
                if state_of(engine) in ("decisions", "river"):
                    for seat in seats:
                        feed(BetChanged("sensors", seat, decision_spot, 500, 5, True))
                queue += feed(DealerKey("display", "confirm"))
        feed(DealerKey("display", "next"))
        for seat in seats:
            for spot in range(len(wagers)):
                feed(BetChanged("sensors", seat, spot, 0, 0, False))
        assert state_of(engine) == "idle", state_of(engine)
    return time.perf_counter() - started, latencies, records


CONFIGS = {
    "high-card-flush": TableConfig(),
    "top-flush": TableConfig(game="top-flush"),
    "chase-the-flush": TableConfig(game="chase-the-flush", seats=(1, 2, 3, 4, 5, 6, 7)),
}
WARM_UP_ROUNDS = 20


def cpu_ms_per_round() -> dict[str, float]:
    """Each game's engine CPU per round (process time), after a few rounds to warm the caches."""
    figures = {}
    for game, config in CONFIGS.items():
        play(config, WARM_UP_ROUNDS, random.Random(0))
        started_s = time.process_time()
        play(config, ROUNDS_PER_GAME, random.Random(1))
        figures[game] = round(1000 * (time.process_time() - started_s) / ROUNDS_PER_GAME, 4)
    return figures


_CHILD = (
    "import importlib.util, json, sys; "
    "spec = importlib.util.spec_from_file_location('bench_engine', sys.argv[1]); "
    "bench = importlib.util.module_from_spec(spec); spec.loader.exec_module(bench); "
    "import controller; assert controller.__file__.startswith(sys.argv[2]), controller.__file__; "
    "print(json.dumps(bench.cpu_ms_per_round()))"
)


def compare(before: Path, passes: int) -> None:
    root = Path(__file__).resolve().parents[1]
    checkouts = {"before": before.resolve(), "after": root}
    runs: dict[str, list[dict[str, float]]] = {"before": [], "after": []}
    for _ in range(passes):
        for name, checkout in checkouts.items():
            env = {**os.environ, "PYTHONPATH": str(checkout)}
            done = subprocess.run(
                [sys.executable, "-c", _CHILD, str(Path(__file__).resolve()), str(checkout)],
                capture_output=True,
                text=True,
                env=env,
                cwd=checkout,
                timeout=600,
                check=True,
            )
            runs[name].append(json.loads(done.stdout))
    results = {}
    for game in CONFIGS:
        before_ms = [run[game] for run in runs["before"]]
        after_ms = [run[game] for run in runs["after"]]
        results[game] = {
            "before_cpu_ms_per_round": before_ms,
            "after_cpu_ms_per_round": after_ms,
            "before_median_ms": statistics.median(before_ms),
            "after_median_ms": statistics.median(after_ms),
            "rounds_per_cpu_s_ratio": round(statistics.median(before_ms) / statistics.median(after_ms), 2),
        }
    print(
        json.dumps(
            {
                "benchmark": "engine_core side by side",
                "before": str(checkouts["before"]),
                "passes": passes,
                "rounds_per_game": ROUNDS_PER_GAME,
                "load_average_1m": round(os.getloadavg()[0], 2),
                "results": results,
            },
            indent=2,
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--compare", type=Path, metavar="DIR", help="another checkout, timed in turn")
    parser.add_argument("--passes", type=int, default=5, help="passes of both checkouts (with --compare)")
    args = parser.parse_args()
    if args.compare is not None:
        compare(args.compare, args.passes)
        return
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
