"""Must show: the crash test. `flushtable run` in a subprocess on one journal, killed with SIGKILL at 30
random moments across rounds (and a few during start-up and recovery), restarted each time; then a
clean run to the end. Afterwards the chain verifies (`flushtable journal verify`), no round is closed
twice, every round that started is closed exactly once, every wager is settled or returned, and the
meters (`flushtable meters --json`) balance. About two minutes: most of it is the command's start-up.

The table is Chase the Flush: the game with the most state inside a round (three deals, three decision
streets, an all-in decided on one street and settled two deals later), so a kill can land between a
decided wager and its settlement. (At High Card Flush the raises are decided in the same journal
transaction as the settlement, so no kill can separate them.)"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from controller.journal.store import JournalEntry
from tests.daemon.crash import CrashReport, crash_repeatedly, daemon_command
from tests.daemon.harness import (
    by_round,
    check_every_round_closed_once,
    check_recall_settles,
    entries,
    flushtable,
    write_config,
)

KILLS = 30
SEED = 20261129


@dataclass(frozen=True, slots=True)
class Crashed:
    journal_path: Path
    report: CrashReport
    journal: list[JournalEntry]
    verify: Any
    meters: dict[str, Any]


@pytest.fixture(scope="module")
def crashed(tmp_path_factory: pytest.TempPathFactory) -> Crashed:
    directory = tmp_path_factory.mktemp("crash")
    config = write_config(directory, "chase")
    journal_path = directory / "journal.sqlite"
    report = crash_repeatedly(journal_path, kills=KILLS, seed=SEED, config=config)
    # Then a clean run: recovery voids what the last kill left open, one round is played, exit 0.
    final = flushtable(*daemon_command(journal_path, SEED, 50.0, rounds=1, config=config)[1:], timeout_s=60)
    assert final.returncode == 0, final.stderr[-2000:]
    verify = flushtable("journal", "verify", "--journal", str(journal_path))
    meters = flushtable("meters", "--json", "--journal", str(journal_path))
    assert meters.returncode == 0, meters.stdout + meters.stderr
    return Crashed(journal_path, report, entries(journal_path), verify, json.loads(meters.stdout))


def test_killed_thirty_times_across_rounds(crashed: Crashed) -> None:
    assert crashed.report.kills >= KILLS
    started = [e for e in crashed.journal if e.kind == "round_started"]
    # The kills landed across rounds: many rounds, and many rounds open at a kill (voided afterwards).
    assert len(started) >= 10, len(started)
    voided = [e for e in crashed.journal if e.kind == "round_voided"]
    assert len(voided) >= 5, len(voided)
    assert all(e.source == "recovery" for e in voided)


def test_chain_verifies(crashed: Crashed) -> None:
    assert crashed.verify.returncode == 0, crashed.verify.stdout + crashed.verify.stderr


def test_every_round_closed_exactly_once_and_settles_as_recalled(crashed: Crashed) -> None:
    closings = check_every_round_closed_once(crashed.journal)
    assert closings["round_settled"] >= 5, closings
    check_recall_settles(crashed.journal_path)  # each settlement conserves money and re-settles equal


def test_voided_rounds_return_every_locked_wager(crashed: Crashed) -> None:
    for round_id, round_entries in by_round(crashed.journal).items():
        closing = round_entries[-1]
        if closing.kind != "round_voided":
            continue
        locked = [e.payload["wagers"] for e in round_entries if e.kind == "bets_locked"]
        returned = _returned(closing.payload["settlement"])
        expected = {
            (int(seat), wager): cents
            for seat, wagers in (locked[0] if locked else {}).items()
            for wager, cents in wagers.items()
        }
        for key, cents in expected.items():
            assert returned.get(key, 0) >= cents, (round_id, key, cents, returned)
        assert closing.payload["settlement"]["banker_net"] == 0


def test_voided_rounds_return_decided_raises_too(crashed: Crashed) -> None:
    missing = []
    voided_after_a_decision = 0
    for round_id, round_entries in by_round(crashed.journal).items():
        closing = round_entries[-1]
        if closing.kind != "round_voided":
            continue
        returned = _returned(closing.payload["settlement"])
        for decision in (e.payload for e in round_entries if e.kind == "decision"):
            if decision["action"] in ("raise", "play", "all_in") and decision["amount_cents"] > 0:
                voided_after_a_decision += 1
                wager = "all_in" if decision["action"] == "all_in" else decision["action"]
                if returned.get((decision["seat"], wager), 0) != decision["amount_cents"]:
                    missing.append((round_id, decision["seat"], wager, decision["amount_cents"]))
    assert not missing, f"decided wagers not returned by the void: {missing}"
    # The check ran on something: some kill landed between an all-in and its round's settlement.
    assert voided_after_a_decision > 0, "no kill landed after a decided wager: the check proved nothing"


def test_meters_balance(crashed: Crashed) -> None:
    meters = crashed.meters
    assert meters["balanced"] is True
    assert meters["unbalanced_rounds"] == []
    assert meters["rounds_open"] == 0
    assert (
        meters["rounds_started"] == meters["rounds_settled"] + meters["rounds_dead"] + meters["rounds_voided"]
    )
    assert meters["player_net_cents"] + meters["banker_net_cents"] + meters["rake_cents"] == 0


def _returned(settlement: dict[str, Any]) -> dict[tuple[int, str], int]:
    return {
        (seat["seat"], name): wager["stake"]
        for seat in settlement["seats"]
        for name, wager in seat["wagers"].items()
        if wager["result"] == "returned" and wager["net"] == 0
    }
