"""Must show (issue 13): a designated-player table run at the table, with no simulated players. Each
round is a scenario file (tests/daemon/dp_scenarios/*.toml: the dealer's keys and the chips on the bet
sensors, the bank spot included) played by the real daemon on its simulated devices over
pseudo-terminals, into a real journal; every recalled round re-settles identically with `settle`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from controller.journal.store import JournalEntry
from controller.journal.verify import verify_chain
from tests.daemon.harness import DEVICES_TOML, check_recall_settles, entries, run_daemon

# Their own directory: tests/privacy plays every file of tests/daemon/scenarios on a house table.
SCENARIOS = Path(__file__).with_name("dp_scenarios")

DP_TABLE = """
[table]
id = "HCF2"
game = "high-card-flush"
seats = 7

[banking]
mode = "designated-player"

[limits]
min_ante_cents = 500
max_ante_cents = 50000
aggregate_bonus_cap_cents = 2000000

[designated_player]
min_bank_cents = 20000

[rake]
method = "players_not_dp"
amount_cents = 50
"""


def play(tmp_path: Path, scenario: str, *, dp_offer_s: float = 30.0) -> list[JournalEntry]:
    journal_path = tmp_path / "journal.sqlite"
    config_path = tmp_path / "dp.toml"
    config_path.write_text(
        DP_TABLE
        + f"\n[timeouts]\ndecision_s = 30\ndp_offer_s = {dp_offer_s}\n"
        + f'\n[journal]\npath = "{journal_path}"\n'
        + DEVICES_TOML,
        encoding="utf-8",
    )
    run_daemon(
        config_path,
        journal_path,
        rounds=1,
        seed=5,
        autoplay=False,
        time_scale=1.0,
        card_interval_s=0.0,
        scenario_path=SCENARIOS / f"{scenario}.toml",
        timeout_s=40.0,
    )
    assert verify_chain(journal_path).ok
    records = check_recall_settles(journal_path)
    assert [record["status"] for record in records] == ["settled"]
    return entries(journal_path)


def of_kind(journal: list[JournalEntry], kind: str) -> list[dict[str, Any]]:
    return [entry.payload for entry in journal if entry.kind == kind]


def refusals(journal: list[JournalEntry]) -> list[str]:
    return [
        str(payload["detail"])
        for payload in of_kind(journal, "operator_action")
        if str(payload["detail"]).startswith("refused:")
    ]


def test_accept_with_the_bank_on_the_sensors_and_a_seat_dead_by_its_bonus(tmp_path: Path) -> None:
    journal = play(tmp_path, "dp_sensor_bank")
    banks = [(p["seat"], p["amount_cents"]) for p in of_kind(journal, "bet_changed") if p["wager"] == "bank"]
    assert set(banks) == {(1, 20_000)}  # the bank spot (re-reported after the lock)
    [moved] = of_kind(journal, "button_moved")
    assert (moved["to_seat"], moved["reason"]) == (1, "accepted, funds 200.00")
    [started] = of_kind(journal, "round_started")
    assert started["banking"] == {
        "mode": "designated-player",
        "seat": 1,
        "funds": 20_000,
        "bonus_cap": 2_000_000,
    }
    # Seat 2's straight-flush bonus could win 1,000.00: with its 20.00 of ante and raise it is not covered.
    [dead] = of_kind(journal, "dead_hand")
    assert dead["seat"] == 2
    assert dead["reason"]["code"] == "not_covered"
    [settled] = of_kind(journal, "round_settled")
    seats = {seat["seat"]: seat for seat in settled["settlement"]["seats"]}
    assert seats[2]["status"] == "dead"
    assert {name: w["result"] for name, w in seats[2]["wagers"].items()} == {
        "ante": "returned",
        "straight_flush": "returned",
    }
    assert seats[2]["rake"] == 0
    assert seats[3]["status"] == "live"
    assert settled["settlement"]["designated_player"]["shortfall"] == 0


def test_a_keyed_bank_after_a_bank_below_the_minimum_and_a_waive_by_key(tmp_path: Path) -> None:
    journal = play(tmp_path, "dp_keyed_bank")
    assert "refused: a bank of 1.00 is below the table's minimum bank 200.00" in refusals(journal)
    assert of_kind(journal, "dp_waived") == [{"seat": 1}]
    [moved] = of_kind(journal, "button_moved")
    assert (moved["to_seat"], moved["reason"]) == (2, "accepted, funds 500.00")
    keys = [(p["key"], p["seat"]) for p in of_kind(journal, "dealer_key")]
    assert keys[:3] == [("dp_accepts", 1), ("dp_waives", None), ("dp_accepts", 2)]
    [settled] = of_kind(journal, "round_settled")
    assert settled["round"]["banking"]["seat"] == 2
    assert sorted(seat["seat"] for seat in settled["settlement"]["seats"]) == [3, 4]


def test_an_unanswered_offer_is_waived_by_its_timeout(tmp_path: Path) -> None:
    journal = play(tmp_path, "dp_offer_timeout", dp_offer_s=3.0)
    [waived] = [entry for entry in journal if entry.kind == "dp_waived"]
    assert (waived.payload, waived.source) == ({"seat": 1}, "engine")
    [moved] = of_kind(journal, "button_moved")
    assert (moved["to_seat"], moved["reason"]) == (2, "accepted, funds 300.00")
    [settled] = of_kind(journal, "round_settled")
    assert settled["round"]["banking"]["funds"] == 30_000
