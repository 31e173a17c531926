"""Must show: each cause of a dead hand, past-posting, an over-limit raise (and its correction) and a
walk-away, each driven from a scenario file (tests/daemon/scenarios/*.toml, the simulator's format,
docs/devices.md) played by the real daemon on its simulated devices over pseudo-terminals, with the
journal entries each leaves. No simulated players here: the scenario is the only thing at the table."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from controller.config import load_config
from controller.daemon import TableDaemon
from controller.errors import UserError
from controller.journal import entries as typed
from controller.journal.recall import recall_records
from controller.journal.store import JournalEntry
from controller.journal.verify import verify_chain
from controller.rules.cards import parse_card
from tests.daemon.harness import (
    FLUSHTABLE,
    DaemonRun,
    check_every_round_closed_once,
    check_recall_settles,
    entries,
    flushtable,
    run_daemon,
    simulated_table,
    write_config,
)
from tests.device_harness.leaks import run_async

SCENARIOS = Path(__file__).with_name("scenarios")


def play_scenario(
    tmp_path: Path,
    name: str,
    *,
    game: str = "hcf-house",
    decision_s: float = 30.0,
    stop_when: Callable[[TableDaemon], bool] | None = None,
    **options: Any,
) -> tuple[DaemonRun, list[JournalEntry]]:
    options.setdefault("card_interval_s", 0.0)
    config_path = write_config(tmp_path, game, decision_s=decision_s)
    journal_path = tmp_path / "journal.sqlite"
    run = run_daemon(
        config_path,
        journal_path,
        rounds=1,
        seed=3,
        autoplay=False,
        time_scale=1.0,
        scenario_path=SCENARIOS / f"{name}.toml",
        stop_when=stop_when,
        timeout_s=30.0,
        **options,
    )
    assert verify_chain(journal_path).ok
    return run, entries(journal_path)


def of_kind(all_entries: list[JournalEntry], kind: str) -> list[dict[str, Any]]:
    return [entry.payload for entry in all_entries if entry.kind == kind]


def engine_faults(all_entries: list[JournalEntry]) -> list[dict[str, Any]]:
    return [
        payload for payload in of_kind(all_entries, "fault_raised") if payload["kind"] != "shuffler_fault"
    ]


def private_of(all_entries: list[JournalEntry], kind: str) -> list[dict[str, Any] | None]:
    return [entry.private for entry in all_entries if entry.kind == kind]


def dealt(all_entries: list[JournalEntry]) -> dict[tuple[int, int], str]:
    """(position, index) -> card code, from the card_dealt entries' private parts."""
    return {
        (part["position"], part["index"]): part["card"]
        for part in private_of(all_entries, "card_dealt")
        if part is not None and part["card"] is not None
    }


def check_reasons_are_public(all_entries: list[JournalEntry]) -> None:
    """Every reason is structured, and its message, public, names no card: no card code dealt, no
    "card N" with N a card's number, no position or index a card was dealt to. Each entry's public part
    holds none of its kind's private fields."""
    codes = set(dealt(all_entries).values())
    assert codes  # the deal journaled its cards (privately)
    numbers = {int(parse_card(code)) for code in codes}
    reasons = 0
    for entry in all_entries:
        assert not set(entry.public) & typed.PRIVATE_FIELDS[entry.kind], entry.kind
        reason = entry.public.get("reason")
        if entry.kind in ("dead_hand", "round_dead", "fault_raised", "decision_refused"):
            assert isinstance(reason, dict), entry.kind
        if not isinstance(reason, dict):
            continue
        reasons += 1
        assert set(reason) <= {"code", "message", "seat"}
        message = str(reason["message"])
        words = set(message.replace(",", " ").replace(":", " ").replace("(", " ").replace(")", " ").split())
        assert not words & codes, (entry.kind, message)
        assert not [number for number in numbers if f"card {number} " in f"{message} "], (entry.kind, message)
        assert "position" not in message, (entry.kind, message)
        assert "index" not in message, (entry.kind, message)
    assert reasons


def check_viewers_see_no_detail(journal_path: Path, round_id: str) -> None:
    """Recall, as a viewer gets it: the dead round's entries keep their private parts to themselves;
    the auditor's record (--private) has them."""
    [record] = recall_records(journal_path, round_id=round_id)
    [audit] = recall_records(journal_path, round_id=round_id, with_private=True)
    private_names = typed.PRIVATE_FIELDS["fault_raised"]
    for fault in record["faults"]:
        assert not set(fault) & private_names
    private_events = [event for event in audit["events"] if event["private"] is not None]
    assert private_events
    hidden = {event["seq"] for event in record["events"] if event["hidden"]}
    assert hidden == {event["seq"] for event in private_events}
    assert all(event["private"] is None for event in record["events"])


def returned_everything(settlement: dict[str, Any]) -> bool:
    return (
        all(
            wager["result"] == "returned" and wager["net"] == 0
            for seat in settlement["seats"]
            for wager in seat["wagers"].values()
        )
        and settlement["banker_net"] == 0
    )


def test_seat_miscount_kills_that_seat_only(tmp_path: Path) -> None:
    _run, journal = play_scenario(tmp_path, "seat_miscount")
    assert of_kind(journal, "dead_hand") == [
        {
            "seat": 1,
            "reason": {
                "code": "card_count",
                "message": "wrong card count: the shoe counted 6 cards, 7 due",
                "seat": 1,
            },
        }
    ]
    [fault] = engine_faults(journal)
    assert (fault["kind"], fault["severity"]) == ("dead_hand", "alert")  # a seat's dead hand holds nothing
    assert fault["reason"] == {
        "code": "card_count",
        "message": "seat 1: wrong card count: the shoe counted 6 cards, 7 due",
    }
    # The shoe's own words and the position it dealt to are its fault's private part, not its message.
    [shoe_fault] = [entry for entry in journal if entry.kind == "fault_raised" and entry.public["device"]]
    assert shoe_fault.public["reason"] == {"code": "card_count", "message": "a card count fault at seat 1"}
    assert shoe_fault.private is not None
    assert shoe_fault.private["position"] == 1
    assert shoe_fault.private["device_detail"] == "dealt 6 cards, 7 requested"
    assert "position 1" in shoe_fault.private["message"]
    check_reasons_are_public(journal)
    # The shoe reports its miscount as a fault of its own: an alert too, and the shoe is ready again at
    # once. Nothing latches; the table is not held.
    assert {(f["kind"], f["severity"]) for f in of_kind(journal, "fault_raised")} == {
        ("dead_hand", "alert"),
        ("shuffler_fault", "alert"),
    }
    shoe = [entry["state"] for entry in of_kind(journal, "device_status") if entry["device"] == "shuffler"]
    assert shoe[-1] == "ready"
    [settled] = of_kind(journal, "round_settled")
    seats = {seat["seat"]: seat for seat in settled["settlement"]["seats"]}
    assert seats[1]["status"] == "dead"
    assert seats[1]["hand"] is None
    assert seats[1]["wagers"] == {"ante": {"stake": 1000, "result": "returned", "net": 0}}
    assert seats[2]["status"] == "live"
    assert [d["seat"] for d in of_kind(journal, "decision")] == [2]  # seat 1 had nothing to decide
    check_every_round_closed_once(journal)
    check_recall_settles(tmp_path / "journal.sqlite")


@pytest.mark.parametrize(
    ("scenario", "game", "fault_kind", "code", "reason_starts", "private_says"),
    [
        (
            "banker_miscount",
            "hcf-house",
            "dead_hand",
            "card_count",
            "wrong card count for the banker",
            "card_count at position 0: dealt 6 cards, 7 requested",
        ),
        (
            "card_seen_twice",
            "hcf-house",
            "dead_hand",
            "card_repeated",
            "a card seen twice",
            "dealt twice (first at position 1 index 4)",
        ),
        (
            "red_light_during_deal",
            "hcf-house",
            "red_light",
            "red_light",
            "shuffler red light during the deal",
            "red_light at position 1",
        ),
        (
            "chase_community_miscount",
            "chase",
            "dead_hand",
            "card_count",
            "wrong card count for the community",
            "card_count at position 15: dealt 1 cards, 2 requested",
        ),
    ],
)
def test_whole_round_dead_returns_every_wager_and_latches(  # noqa: PLR0917
    tmp_path: Path,
    scenario: str,
    game: str,
    fault_kind: str,
    code: str,
    reason_starts: str,
    private_says: str,
) -> None:
    run, journal = play_scenario(tmp_path, scenario, game=game)
    assert (run.summary.rounds_dead, run.summary.rounds_settled) == (1, 0)
    [dead] = of_kind(journal, "dead_hand")
    assert dead["seat"] is None
    assert dead["reason"]["code"] == code
    assert dead["reason"]["message"].startswith(reason_starts)
    latched = [fault for fault in engine_faults(journal) if fault["severity"] == "latching"]
    assert [fault["kind"] for fault in latched] == [fault_kind]
    assert latched[0]["reason"]["message"] == f"round dead: {dead['reason']['message']}"
    assert not of_kind(journal, "fault_cleared")
    [round_dead] = of_kind(journal, "round_dead")
    assert round_dead["reason"] == {"code": code, "message": dead["reason"]["message"]}
    # The public messages name no card; what the shoe said of which card, where, is private.
    check_reasons_are_public(journal)
    privates = [
        entry.private
        for entry in journal
        if entry.kind in ("dead_hand", "round_dead", "fault_raised") and entry.private is not None
    ]
    assert any(private_says in str(part.get("message")) for part in privates), privates
    check_viewers_see_no_detail(tmp_path / "journal.sqlite", round_id_of(journal))
    assert round_dead["round"]["dead"] is True
    assert round_dead["round"]["dealer"] == []  # a dead hand's cards are never shown
    assert all(seat["cards"] == [] for seat in round_dead["round"]["seats"])
    assert returned_everything(round_dead["settlement"])
    [locked] = of_kind(journal, "bets_locked")
    returned = {
        str(seat["seat"]): {name: wager["stake"] for name, wager in seat["wagers"].items()}
        for seat in round_dead["settlement"]["seats"]
    }
    assert returned == locked["wagers"]
    assert "round_settled" not in {entry.kind for entry in journal}
    check_every_round_closed_once(journal)
    check_recall_settles(tmp_path / "journal.sqlite")


def round_id_of(all_entries: list[JournalEntry]) -> str:
    [started] = [entry for entry in all_entries if entry.kind == "round_started"]
    assert started.round_id is not None
    return started.round_id


def test_a_card_seen_twice_is_named_only_in_the_private_part(tmp_path: Path) -> None:
    """The card dealt twice (card 23, seat 1's fifth card) is in the dead hand's private part, by
    number, position and index, with the shoe's words: never in its public message."""
    _run, journal = play_scenario(tmp_path, "card_seen_twice")
    cards = dealt(journal)
    for kind in ("dead_hand", "round_dead"):
        [entry] = [entry for entry in journal if entry.kind == kind]
        part = entry.private
        assert part is not None
        assert part["card"] == 23
        assert (part["first_position"], part["first_index"], part["position"], part["index"]) == (1, 4, 1, 5)
        # The number is the card really dealt there first (the private part tells the truth) ...
        assert int(parse_card(cards[(1, 4)])) == 23
        assert part["device_detail"] == "card 23 dealt twice (first at position 1 index 4)"
        assert "card 23" in part["message"]
        # ... and the public message says what happened without it.
        assert entry.public["reason"] == {
            "code": "card_repeated",
            "message": "a card seen twice or misread during the deal",
        }
        assert "23" not in str(entry.public)
        assert cards[(1, 4)] not in str(entry.public)
    check_reasons_are_public(journal)


def test_past_posting_holds_the_table_across_a_restart(tmp_path: Path) -> None:
    _run, journal = play_scenario(
        tmp_path, "past_posting", stop_when=lambda daemon: daemon.engine.view().held
    )
    assert of_kind(journal, "past_posting") == [
        {"seat": 2, "wager": "ante", "locked_cents": 1000, "seen_cents": 5000}
    ]
    [fault] = engine_faults(journal)
    assert (fault["kind"], fault["severity"], fault["device"]) == ("past_posting", "latching", "sensors")
    assert any(p["to"] == "held" for p in of_kind(journal, "state_changed"))
    assert not [entry for entry in journal if entry.kind in ("round_settled", "round_dead", "round_voided")]

    # Restarted (SIGTERM left the held round open): recovery voids it, every locked wager returned, and
    # the latched fault still holds the table — no round starts until a supervisor clears it.
    seen: dict[str, bool] = {}

    def held_after_restart(daemon: TableDaemon) -> bool:
        seen["held"] = daemon.engine.view().held
        return True

    config_path = tmp_path / "hcf-house.toml"
    rerun = run_daemon(
        config_path, tmp_path / "journal.sqlite", autoplay=True, time_scale=1.0, stop_when=held_after_restart
    )
    assert seen["held"] is True
    assert len(rerun.summary.recovered_voided) == 1
    journal = entries(tmp_path / "journal.sqlite")
    [voided] = [entry for entry in journal if entry.kind == "round_voided"]
    assert voided.source == "recovery"
    assert returned_everything(voided.payload["settlement"])
    assert len(of_kind(journal, "round_started")) == 1  # the held table started nothing new
    check_every_round_closed_once(journal)

    # docs/operations.md: with the daemon stopped, `flushtable clear`; the next start plays again.
    cleared = flushtable(
        "clear", "--journal", str(tmp_path / "journal.sqlite"), "--reason", "chips checked", "--by", "alice"
    )
    assert cleared.returncode == 0, cleared.stderr
    played = run_daemon(config_path, tmp_path / "journal.sqlite", rounds=1, seed=4, autoplay=True)
    assert played.summary.rounds_closed == 1
    journal = entries(tmp_path / "journal.sqlite")
    assert [e.payload["by"] for e in journal if e.kind == "fault_cleared"] == ["alice"]
    check_every_round_closed_once(journal)


def test_over_limit_raise_is_refused_until_corrected(tmp_path: Path) -> None:
    _run, journal = play_scenario(tmp_path, "over_limit_raise")
    [refused] = of_kind(journal, "decision_refused")
    assert (refused["seat"], refused["action"], refused["amount_cents"]) == (1, "raise", 3000)
    # The public reason names the seat and the amount; the limit speaks of the hand: private.
    assert refused["reason"] == {
        "code": "over_limit",
        "message": "seat 1: raise of 30.00 refused (over the limit)",
        "seat": 1,
    }
    [refused_entry] = [entry for entry in journal if entry.kind == "decision_refused"]
    assert refused_entry.private == {"limit_detail": "over the limit: exactly 10.00 with a 4-card flush"}
    assert "flush" not in str(refused_entry.public)
    [fault] = engine_faults(journal)
    assert (fault["kind"], fault["severity"]) == ("over_limit_raise", "alert")
    assert fault["reason"] == {
        "code": "over_limit",
        "message": "seat 1: raise of 30.00 refused (over the limit)",
    }
    assert "flush" not in str(fault)  # the alert names seat and amount, never the hand
    check_reasons_are_public(journal)
    # The dealer's first confirm is refused while the raise stands uncorrected.
    operator = of_kind(journal, "action_refused")
    assert any("must be corrected" in action["reason"] for action in operator)
    decisions = {d["seat"]: d for d in of_kind(journal, "decision")}
    assert decisions[1]["amount_cents"] == 1000
    assert decisions[1]["cause"] == "sensor"
    kinds = [entry.kind for entry in journal]
    assert kinds.index("decision_refused") < kinds.index("decision") < kinds.index("round_settled")
    [settled] = of_kind(journal, "round_settled")
    seat1 = next(seat for seat in settled["round"]["seats"] if seat["seat"] == 1)
    assert seat1["wagers"]["raise"] == 1000
    check_recall_settles(tmp_path / "journal.sqlite")


def test_walk_away_folds_on_the_decision_timeout(tmp_path: Path) -> None:
    _run, journal = play_scenario(tmp_path, "walk_away", decision_s=1.0)
    decisions = of_kind(journal, "decision")
    assert {"seat": 2, "action": "fold", "amount_cents": 0, "street": None, "cause": "timeout"} in decisions
    [settled] = of_kind(journal, "round_settled")
    seat2 = next(seat for seat in settled["round"]["seats"] if seat["seat"] == 2)
    assert seat2["folded"] is True
    result2 = next(seat for seat in settled["settlement"]["seats"] if seat["seat"] == 2)
    assert result2["wagers"]["ante"]["result"] == "lose"
    check_recall_settles(tmp_path / "journal.sqlite")


def test_chase_walk_away_checks_before_the_river_and_folds_on_it(tmp_path: Path) -> None:
    _run, journal = play_scenario(tmp_path, "chase_walk_away", game="chase", decision_s=1.0)
    seat1 = [(d["street"], d["action"], d["cause"]) for d in of_kind(journal, "decision") if d["seat"] == 1]
    assert seat1 == [
        ("preflop", "check", "timeout"),
        ("flop", "check", "timeout"),
        ("river", "fold", "timeout"),
    ]
    seat2 = [
        (d["street"], d["action"], d["amount_cents"]) for d in of_kind(journal, "decision") if d["seat"] == 2
    ]
    assert seat2 == [("preflop", "all_in", 3000)]
    check_recall_settles(tmp_path / "journal.sqlite")


def test_a_bad_scenario_file_is_one_line_before_anything_starts(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text(
        '[[step]]\nafter = "shuffle"\nat_s = 0\ndevice = "display"\naction = "press"\nkey = "next"\n'
    )
    config = load_config(write_config(tmp_path, "hcf-house"))
    table = simulated_table(config, tmp_path / "j.sqlite", scenario_path=bad)
    with pytest.raises(UserError, match=r"step\[1\]\.after: 'shuffle' is not one of start, deal, lock"):
        run_async(table.run)
    assert not (tmp_path / "j.sqlite").exists()  # refused before the journal opened


def test_flushtable_clear_releases_a_running_table_and_the_shoe_is_reset(tmp_path: Path) -> None:
    """The red light holds the running table; `flushtable clear`, run from another process while the
    daemon runs, releases it within the journal watch's interval: the daemon adopts the clearing (one
    fault_cleared entry, the command's), resets the shoe left in fault, and the table is idle again."""
    config_path = write_config(tmp_path, "hcf-house")
    journal_path = tmp_path / "journal.sqlite"
    table = simulated_table(
        load_config(config_path),
        journal_path,
        seed=3,
        autoplay=False,
        time_scale=1.0,
        card_interval_s=0.0,
        print_rounds=False,
        scenario_path=SCENARIOS / "red_light_during_deal.toml",
    )
    daemon = table.daemon

    async def until(predicate: Callable[[], bool], what: str) -> None:
        try:
            async with asyncio.timeout(30):  # bounded: a condition, not a window
                while not (daemon.running and predicate()):
                    await asyncio.sleep(0.01)
        except TimeoutError:
            raise AssertionError(f"never: {what}") from None

    async def main() -> None:
        running = asyncio.get_running_loop().create_task(table.run())
        try:
            await until(lambda: daemon.engine.view().held, "the red light held the table")
            # The shoe's fault report follows its red light on the line.
            await until(
                lambda: daemon.engine._faults.device_health["shuffler"] == "fault", "the shoe in fault"
            )
            cleared = await asyncio.create_subprocess_exec(
                FLUSHTABLE,
                "clear",
                "--journal",
                str(journal_path),
                "--by",
                "sue",
                "--reason",
                "shoe cleaned and checked",
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
            )
            out, err = await cleared.communicate()
            assert cleared.returncode == 0, err.decode()
            assert "The table is no longer held." in out.decode()
            await until(lambda: not daemon.engine.view().held, "the daemon adopted the clearing")
            await until(
                lambda: daemon.engine._faults.device_health["shuffler"] == "ready", "the shoe was reset"
            )
            # Released to idle (the scenario's dealer may already have opened the next round's betting
            # by now: the state itself is not asserted, the release is, from the journal).
            released = [
                entry.payload
                for entry in daemon.journal.entries(kinds=["state_changed"])
                if entry.payload.get("from") == "held"
            ]
            assert released
            assert released[-1]["to"] == "idle", released
        finally:
            daemon.request_stop()
            await running

    run_async(main, timeout_s=60.0)
    assert verify_chain(journal_path).ok
    journal = entries(journal_path)
    [fault] = [payload for payload in of_kind(journal, "fault_raised") if payload["severity"] == "latching"]
    assert of_kind(journal, "fault_cleared") == [
        {"fault_id": fault["fault_id"], "by": "sue", "reason": "shoe cleaned and checked"}
    ]
    assert of_kind(journal, "device_reset") == [
        {"device": "shuffler", "by": "sue", "reason": "in fault when its table was released"}
    ]
    kinds = [entry.kind for entry in journal]
    cleared_at = kinds.index("fault_cleared")
    reset_at = kinds.index("device_reset")
    assert cleared_at < reset_at
    statuses = [entry.payload["state"] for entry in journal[reset_at:] if entry.kind == "device_status"]
    assert statuses[-1] == "ready"


def test_the_shoe_unplugged_mid_deal_holds_and_the_deal_resumes_exactly(tmp_path: Path) -> None:
    """The shoe's cable pulled for 0.3 s at the 5th card: the round holds (device_lost latches), a
    supervisor clears it, and the shoe's cards dealt meanwhile arrive after it reconnects, each exactly
    once and in order: the deal completes and the round settles, every card accounted for."""
    run, journal = play_scenario(
        tmp_path, "unplug_during_deal", supervisor_clear_after_s=0.1, card_interval_s=0.01
    )
    assert (run.summary.rounds_settled, run.summary.rounds_dead) == (1, 0)
    kinds = [entry.kind for entry in journal]
    assert kinds.index("device_lost") < kinds.index("fault_cleared") < kinds.index("round_settled")
    [lost] = [fault for fault in of_kind(journal, "fault_raised") if fault["kind"] == "device_lost"]
    assert lost["severity"] == "latching"
    cards = [(entry["position"], entry["index"]) for entry in of_kind(journal, "card_dealt")]
    assert cards == [(1, index) for index in range(7)] + [(2, index) for index in range(7)] + [
        (0, index) for index in range(7)
    ]
    assert len({entry["card"] for entry in of_kind(journal, "card_dealt")}) == 21
    check_every_round_closed_once(journal)
    check_recall_settles(tmp_path / "journal.sqlite")


def test_the_shoe_losing_power_mid_deal_is_a_misdeal_within_a_second_of_its_return(tmp_path: Path) -> None:
    """The shoe loses power at the 5th card and is back 0.3 s later with no deal. The driver asks it
    (status_query) after the handshake; its answer (no deal) ends the round at once - not after the
    deal timeout (30 s here, as long as the whole run may last)."""
    run, journal = play_scenario(
        tmp_path, "power_cycle_during_deal", supervisor_clear_after_s=0.1, card_interval_s=0.01
    )
    assert (run.summary.rounds_settled, run.summary.rounds_dead) == (0, 1)
    back = [e for e in journal if e.kind == "device_ready" and e.payload["device"] == "shuffler"][-1]
    [dead] = [e for e in journal if e.kind == "round_dead"]
    assert dead.payload["reason"]["message"].startswith(
        "the shoe came back without this deal (it reports none, 0 cards reported)"
    )
    seconds = (_utc(dead.time_utc) - _utc(back.time_utc)).total_seconds()
    assert 0 <= seconds <= 1.0, seconds
    kinds = [entry.kind for entry in journal]
    assert kinds.index("device_lost") < kinds.index("round_dead")
    check_every_round_closed_once(journal)


def _utc(text: str) -> datetime:
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ")
