"""Soak: the whole table — simulated devices over pseudo-terminals, drivers, engine, SQLite journal —
for many accelerated rounds with random faults: line noise on every device's line, unplugged cables,
the shoe's red light, miscounts (short and extra hands, the banker's too), a card read twice, and
past-posting. A simulated supervisor clears every latched fault after a short delay, so the table
carries on. Prints JSON: rounds played, settled, dead, voided, held, the faults injected and raised,
and whether every money line balances (each settlement conserves money and re-settles to itself; the
meters balance; the chain verifies; every round closed exactly once).

    python bench/soak_table.py [--rounds 2000] [--fault-rate 0.15] [--seed 1] [--time-scale 1000]

Exit status 0 when everything balances, 1 otherwise. A short version runs in pytest
(tests/daemon/test_soak.py). Every wait is bounded: a table that stops closing rounds for
STALL_TIMEOUT_S is stopped and reported as stalled.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import json
import os
import random
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from controller.config import load_config
from controller.daemon import RunOptions
from controller.engine import actions as a
from controller.journal.kinds import CLOSING_KINDS
from controller.journal.meters import compute_meters
from controller.journal.store import Journal
from controller.journal.verify import verify_chain
from controller.logs import configure_logging
from controller.rules.settle import settle_round_json
from controller.simulation.table import SimulatedTable, SimulationOptions
from sim_devices.noise import NoiseRates
from sim_devices.shuffler import PlannedFault
from sim_devices.table import SimTable
from table_names import records

STALL_TIMEOUT_S = 60.0  # no round closed for this long (wall): the soak stops and says so
# The shoe's silence mid-deal that makes a misdeal (`[timeouts] deal_s`, wall seconds whatever the time
# scale): shorter than STUCK_VOID_S, so a deal that never comes is the engine's to call (a misdeal: the
# round dead, every wager returned), not the soak's impatient supervisor's. Longer than any unplug or
# hang the soak injects (0.4 s at most).
SOAK_DEAL_TIMEOUT_S = 2.0
STUCK_VOID_S = 5.0  # a round in play this long (wall) without closing: the supervisor voids it (counted)
SUPERVISOR_CLEAR_AFTER_S = 0.05
FAULT_KINDS: tuple[str, ...] = (
    "red_light",
    "short",
    "extra",
    "banker_short",
    "dealt_twice",
    "unplug",
    "past_posting",
)
NOISE = NoiseRates(flip=2e-5, drop=1e-5, duplicate=1e-5, split=0.01)


@dataclass(slots=True)
class Injector:
    """Between rounds, with probability ``fault_rate``, plans one fault for the round that starts."""

    table: SimulatedTable
    rng: random.Random
    fault_rate: float
    injected: Counter[str] = field(default_factory=Counter)
    last_close_mono_s: float = field(default_factory=time.monotonic)
    stuck_voided: list[dict[str, Any]] = field(default_factory=list)  # rounds a supervisor had to void

    async def run(self) -> None:
        daemon = self.table.daemon
        sim = self.table.devices
        assert isinstance(sim, SimTable), "the soak injects faults into devices in the daemon's process"
        engine = daemon.engine  # read only: the injector acts through the devices and the queue
        shoe = sim.shuffler(engine.view().config.shuffler_device)
        sensors = sim.bet_sensors(engine.view().config.sensors_device)
        seen_round: str | None = None
        closed = 0
        while True:
            await asyncio.sleep(0.005)
            if daemon.summary.rounds_closed != closed:
                closed = daemon.summary.rounds_closed
                self.last_close_mono_s = time.monotonic()
            if time.monotonic() - self.last_close_mono_s > STALL_TIMEOUT_S:
                self.injected["stalled"] += 1
                daemon.request_stop()
                return
            live = engine.view().round
            if (
                live is not None
                and not live.closed
                and not engine.view().latched
                and time.monotonic() - self.last_close_mono_s > STUCK_VOID_S
            ):
                # A round that makes no progress with no fault latched: what a floor supervisor does
                # is void it from the panel (every wager returned). Counted and reported: each one is
                # a finding about the table, not a pass.
                self.stuck_voided.append({"round_id": live.round_id, "state": engine.view().state})
                reason = f"soak: no progress for {STUCK_VOID_S:g} s in {engine.view().state}"
                daemon.submit(a.VoidRound(reason=reason, by="sim-supervisor"))
                self.last_close_mono_s = time.monotonic()
            if live is None or live.round_id == seen_round:
                continue
            seen_round = live.round_id
            shoe.planned.clear()  # a fault planned for a seat that did not play is not carried over
            if self.rng.random() >= self.fault_rate:
                continue
            kind = self.rng.choice(FAULT_KINDS)
            self.injected[kind] += 1
            seats = sorted(live.seats) or [1]
            if kind == "red_light":
                shoe.plan_fault(PlannedFault("red_light", at_card=self.rng.randrange(0, 7 * len(seats) + 7)))
            elif kind in ("short", "extra"):
                shoe.plan_fault(
                    PlannedFault("short" if kind == "short" else "extra", position=self.rng.choice(seats))
                )
            elif kind == "banker_short":
                shoe.plan_fault(PlannedFault("short", position=0))
            elif kind == "dealt_twice":
                shoe.plan_fault(
                    PlannedFault("dealt_twice", at_card=self.rng.randrange(1, 7 * len(seats) + 7))
                )
            elif kind == "unplug":
                device = sim.devices[self.rng.choice(sorted(sim.devices))]
                device.spawn(device.unplug_for(self.rng.uniform(0.05, 0.4)), "soak-unplug")
            else:  # past-posting: chips added to an ante once the bets are locked
                deadline_s = time.monotonic() + 2.0
                while engine.view().state in ("idle", "betting") and time.monotonic() < deadline_s:
                    await asyncio.sleep(0.002)
                seat = self.rng.choice(seats)
                amount = engine.view().spots.get((seat, 0), 0)
                with contextlib.suppress(ValueError):
                    sensors.place(seat, 0, amount + 500)


def check_journal(journal_path: Path) -> dict[str, Any]:
    """Every money line of every closed round, the closings, the meters and the chain."""
    unbalanced: list[str] = []
    resettled_differently: list[str] = []
    closings: Counter[str | None] = Counter()
    started: set[str | None] = set()
    held = 0
    latching: Counter[str] = Counter()
    integrity: Counter[str] = Counter()  # what the table refused as impossible: worth reading
    with Journal.open_existing(journal_path) as journal:
        for entry in journal.entries():
            if entry.kind == "round_started":
                started.add(entry.round_id)
            elif entry.kind == "fault_raised" and entry.payload.get("severity") == "latching":
                latching[str(entry.payload.get("kind"))] += 1
            elif entry.kind == "fault_raised" and entry.payload.get("kind") == "integrity":
                integrity[str(entry.payload.get("detail"))[:120]] += 1
            elif entry.kind == "state_changed" and entry.payload.get("to") == "held":
                held += 1
            if entry.kind not in CLOSING_KINDS:
                continue
            closings[entry.round_id] += 1
            settlement = entry.payload["settlement"]
            if not _balances(settlement):
                unbalanced.append(str(entry.round_id))
            if entry.kind != "round_voided" and settle_round_json(entry.payload["round"]) != settlement:
                resettled_differently.append(str(entry.round_id))
        meters = compute_meters(journal).to_json()
    verify = verify_chain(journal_path)
    closed_twice = sorted(str(round_id) for round_id, times in closings.items() if times > 1)
    never_closed = sorted(str(round_id) for round_id in started - set(closings))
    return {
        "held": held,
        "latching_faults": dict(sorted(latching.items())),
        "faults_raised": meters["faults_by_kind"],
        "integrity_faults": dict(integrity.most_common(5)),
        "money_lines_balance": not unbalanced and not resettled_differently,
        "unbalanced_rounds": unbalanced[:10],
        "resettled_differently": resettled_differently[:10],
        "meters_balanced": meters["balanced"],
        "handle_cents": meters["handle_cents"],
        "returned_cents": meters["returned_cents"],
        "house_win_cents": meters["house_win_cents"],
        "closed_twice": closed_twice,
        "never_closed": never_closed,
        "chain_verifies": verify.ok,
        "entries": verify.entries_checked,
    }


def _balances(settlement: dict[str, Any]) -> bool:
    players = 0
    for seat in settlement["seats"]:
        wagers_net = 0
        for wager in seat["wagers"].values():
            result, stake, net = wager["result"], wager["stake"], wager["net"]
            if result in ("returned", "push") and net != 0:
                return False
            if result == "lose" and net != -stake:
                return False
            if result == "win" and net < 0:
                return False
            wagers_net += net
        if wagers_net - seat.get("rake", 0) != seat["net"]:
            return False
        players += seat["net"]
    # The banker's net leaves the Progressive wager out: the house's progressive banks it, and its take
    # is the settlement's progressive.net_cents (docs/settle.md "The Progressive wager").
    progressive_net = int((settlement.get("progressive") or {}).get("net_cents", 0))
    return bool(players + settlement["banker_net"] + settlement.get("rake", 0) + progressive_net == 0)


async def soak(
    journal_path: Path,
    *,
    rounds: int,
    seed: int,
    fault_rate: float,
    time_scale: float,
    config_path: Path | None = None,
    noise: NoiseRates | None = NOISE,
    deal_timeout_s: float = SOAK_DEAL_TIMEOUT_S,
) -> dict[str, Any]:
    config = load_config(config_path)
    config = records.replace(config, timeouts=records.replace(config.timeouts, deal_s=deal_timeout_s))
    injectors: list[asyncio.Task[None]] = []
    rng = random.Random(seed)
    holder: dict[str, Injector] = {}

    def on_ready(table: SimulatedTable) -> None:
        injector = Injector(table, rng, fault_rate)
        holder["injector"] = injector
        injectors.append(asyncio.get_running_loop().create_task(injector.run(), name="soak-injector"))

    options = RunOptions(journal_path=journal_path, rounds=rounds, print_rounds=False)
    simulation = SimulationOptions(
        seed=seed,
        autoplay=True,
        time_scale=time_scale,
        supervisor_clear_after_s=SUPERVISOR_CLEAR_AFTER_S,
        noise=noise,
        walk_away_rate=0.03,  # the soak plays walk-aways (decision timeouts) among its rounds
    )
    table = SimulatedTable(config, options, simulation, out=io.StringIO(), on_ready=on_ready)
    started_s = time.monotonic()
    try:
        await table.run()
    finally:
        for task in injectors:
            task.cancel()
        for task in injectors:
            with contextlib.suppress(asyncio.CancelledError):
                await task
    elapsed_s = time.monotonic() - started_s
    summary = table.summary
    injected = holder["injector"].injected if holder else Counter()
    stuck_voided = holder["injector"].stuck_voided if holder else []
    report: dict[str, Any] = {
        "benchmark": "soak_table",
        "game": config.game,
        "rounds_target": rounds,
        "rounds_played": summary.rounds_closed,
        "settled": summary.rounds_settled,
        "dead": summary.rounds_dead,
        "voided": summary.rounds_voided,
        "stalled": bool(injected.pop("stalled", 0)),
        "faults_injected": dict(sorted(injected.items())),
        "stuck_rounds_voided_by_supervisor": len(stuck_voided),
        "stuck_rounds": stuck_voided[:20],
        "noise": {"flip": noise.flip, "drop": noise.drop, "duplicate": noise.duplicate, "split": noise.split}
        if noise
        else None,
        "seconds": round(elapsed_s, 1),
        "rounds_per_s": round(summary.rounds_closed / elapsed_s, 2),
        "time_scale": time_scale,
        "deal_timeout_s": deal_timeout_s,
    }
    report.update(check_journal(journal_path))
    report["ok"] = bool(
        report["money_lines_balance"]
        and report["meters_balanced"]
        and report["chain_verifies"]
        and not report["closed_twice"]
        and not report["never_closed"]
        and not report["stalled"]
        and report["rounds_played"] >= rounds
    )
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2000)
    parser.add_argument("--fault-rate", type=float, default=0.15, help="share of rounds given a fault")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--time-scale", type=float, default=1000.0)
    parser.add_argument("--config", type=Path, default=None, help="default: the embedded table")
    parser.add_argument(
        "--journal", type=Path, default=None, help="keep the journal here (default: a temp dir)"
    )
    args = parser.parse_args()
    configure_logging(level="error", json_lines=True, stream=open(os.devnull, "w"))  # noqa: SIM115
    with tempfile.TemporaryDirectory(prefix="soak_table-") as directory:
        journal_path = args.journal or Path(directory) / "journal.sqlite"
        report = asyncio.run(
            soak(
                journal_path,
                rounds=args.rounds,
                seed=args.seed,
                fault_rate=args.fault_rate,
                time_scale=args.time_scale,
                config_path=args.config,
            )
        )
    report["load_average"] = [round(value, 2) for value in os.getloadavg()]
    print(json.dumps(report))
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
