"""The sentences read through the typed entries (controller/journal/sentence.py ``_sentence``): each
kind decoded by the one typed decoder reads as it read from its payload (the sentences below were the
payload renderers' for the same entries), and a payload that is not its kind's falls back to its own
fields rather than reading as "None proposed None"."""

from __future__ import annotations

import importlib.util
import subprocess
from pathlib import Path
from typing import Any

import msgspec
import pytest
from structlog.testing import capture_logs

from controller.journal import entries as e
from controller.journal.sentence import _TYPED_SENTENCES, entry_sentence
from controller.logs import configure_logging

REPO = Path(__file__).resolve().parents[2]
# The release before the kinds with a private part were read typed (the commit issue 29's work began at).
RELEASE_BEFORE_TYPED_SENTENCES = "8ec31aa"
R = "2027-01-15T08:10:00.000000Z"
ROUND = "RT1-20270115-000001AB"

SENTENCES: list[tuple[e.Entry, str]] = [
    (
        e.ClockOffset(
            source="sntp://10.0.0.1:123",
            offset_us=-3_000_000,
            delay_us=1000,
            bound_us=1_000_000,
            within_bound=False,
            table_time_utc=R,
        ),
        "Clock offset -3.000 s from sntp://10.0.0.1:123 (PAST the bound of 1.000 s)",
    ),
    (
        e.ClockOffset(
            source="sntp://10.0.0.1:123",
            offset_us=2_500,
            delay_us=900,
            bound_us=1_000_000,
            within_bound=True,
            table_time_utc=R,
        ),
        "Clock offset +0.003 s from sntp://10.0.0.1:123 (within the bound of 1.000 s)",
    ),
    (
        e.ClockOffset(
            source="sntp://10.0.0.1:123",
            offset_us=None,
            delay_us=None,
            bound_us=1_000_000,
            within_bound=False,
            table_time_utc=R,
            error="no answer",
        ),
        "Clock not measured against sntp://10.0.0.1:123: no answer",
    ),
    (
        e.ConfigChecked(
            source="table.toml",
            file_sha256="a" * 64,
            config_digest="b" * 64,
            previous_file_sha256=None,
            previous_config_digest=None,
            settings={"game": "x"},
            changed=[],
        ),
        "Configuration table.toml checked at start: first check",
    ),
    (
        e.ConfigChecked(
            source="table.toml",
            file_sha256="c" * 64,
            config_digest="d" * 64,
            previous_file_sha256="a" * 64,
            previous_config_digest="b" * 64,
            settings={"game": "x"},
            changed=["limits.max_ante_cents: 10000 -> 20000"],
            unapproved=True,
        ),
        "Configuration table.toml checked at start: limits.max_ante_cents: 10000 -> 20000 — NOT APPROVED",
    ),
    (
        e.ConfigChecked(
            source="table.toml",
            file_sha256="c" * 64,
            config_digest="d" * 64,
            previous_file_sha256="a" * 64,
            previous_config_digest="b" * 64,
            settings={"game": "x"},
            changed=[],
            approved_change="CT1-0007",
        ),
        "Configuration table.toml checked at start: unchanged (approved by change CT1-0007)",
    ),
    (
        e.ChangeProposed(
            change_id="CT1-0001",
            change_kind="limits",
            params={"min_ante_cents": 500},
            summary="ante limits 5.00 to 200.00",
            by="max",
            reason="promo",
            lapses_utc=R,
        ),
        "max proposed CT1-0001: ante limits 5.00 to 200.00 (promo); a second manager must approve "
        "it before 2027-01-15T08:10:00.000000Z",
    ),
    (
        e.ChangeProposed(
            change_id="CT1-0002",
            change_kind="limits",
            params={},
            summary="ante limits",
            by="max",
            reason="",
            lapses_utc=R,
        ),
        "max proposed CT1-0002: ante limits; a second manager must approve it before "
        "2027-01-15T08:10:00.000000Z",
    ),
    (
        e.ChangeApproved(
            change_id="CT1-0001",
            change_kind="limits",
            proposed_by="max",
            by="mia",
            summary="ante limits 5.00 to 200.00",
        ),
        "mia approved CT1-0001 proposed by max: ante limits 5.00 to 200.00",
    ),
    (
        e.ChangeLapsed(change_id="CT1-0003", change_kind="limits", proposed_by="max", lapses_utc=R),
        "CT1-0003 proposed by max lapsed unapproved at 2027-01-15T08:10:00.000000Z",
    ),
    (
        e.ChangeRefused(change_id=None, by="max", reason="change_kind: 'nope' is not known", closed=True),
        "max: a proposal closed: change_kind: 'nope' is not known",
    ),
    (
        e.ChangeRefused(
            change_id="CT1-0001", by="max", reason="a second manager must approve it", closed=False
        ),
        "max: CT1-0001 refused: a second manager must approve it",
    ),
    (
        e.SoftwareVerified(
            release="1.2.3",
            release_digest="d" * 64,
            development=False,
            key_id="0123456789abcdef",
            files=412,
            dependencies=37,
        ),
        "Software verified at start: release 1.2.3, digest dddddddddddddddd, 412 files and 37 "
        "dependencies, signed by key 0123456789abcdef",
    ),
    (
        e.SoftwareVerified(
            release="0.0.0+dev",
            release_digest="e" * 64,
            development=True,
            key_id="fedcba9876543210",
            files=400,
            dependencies=30,
        ),
        "Software verified at start: release 0.0.0+dev, digest eeeeeeeeeeeeeeee, 400 files and 30 "
        "dependencies, signed by key fedcba9876543210 (a DEVELOPMENT release, not for a live table)",
    ),
    (
        e.SoftwareChecked(seed="1" * 64, aggregate="2" * 64, files=412, requested_by="floor:ops"),
        "Seeded software verification for floor:ops: seed 1111111111111111, aggregate "
        "2222222222222222 over 412 files",
    ),
    (
        e.NoiseSuppressed(
            category="login_failed", source="addr:10.0.0.9", count=490, first_time_utc=R, last_time_utc=R
        ),
        "490 more login failed from addr:10.0.0.9 counted, not journaled one by one",
    ),
    (
        e.ClockStepped(wall_clock_utc=R, journal_time_utc=R, step_back_us=3_250_000),
        "The wall clock went back 3.250 s: the journal keeps 2027-01-15T08:10:00.000000Z until the "
        "clock passes it",
    ),
    (
        e.FaultCleared(fault_id="FT1-000001", by="sue", reason="jam cleared"),
        "sue cleared FT1-000001: jam cleared",
    ),
    (
        e.FaultAcknowledged(fault_id="FT1-000001", by="sue"),
        "sue acknowledged FT1-000001",
    ),
    (
        e.TableOpened(
            game="top-flush", banking_mode="designated_player", config_digest="b" * 64, by="daemon"
        ),
        "Table opened by daemon: Top Flush, designated player",
    ),
    (
        e.TableClosed(by="daemon", reason="shutdown"),
        "Table closed by daemon: shutdown",
    ),
    (
        e.DeviceReady(
            device="shuffler",
            kind_of_device="shuffler",
            model="SIM-1",
            serial_number="S1",
            firmware_version="2.1",
        ),
        "shuffler ready: SIM-1 firmware 2.1",
    ),
    (
        e.DeviceLost(device="shoe", reason="cable pulled"),
        "shoe lost: cable pulled",
    ),
    (
        e.DeviceStatus(device="shoe", state="fault", fault_code=7, lamp="red"),
        "shoe reports fault, lamp red, fault code 7",
    ),
    (
        e.DeviceStatus(device="shoe", state="ready", fault_code=0, lamp=""),
        "shoe reports ready, lamp off",
    ),
    (
        e.Login(user="sue", role="supervisor", remote="127.0.0.1"),
        "sue (supervisor) logged in from 127.0.0.1",
    ),
    (
        e.LoginFailed(user="sue", remote="127.0.0.1", reason="bad password"),
        "Failed login as sue from 127.0.0.1: bad password",
    ),
    (
        e.StateChanged(machine="round", from_state="settling", to="paying", trigger="pay"),
        "The round went from settling to paying",
    ),
    (
        e.RoundStarted(round_id=ROUND, game="top-flush", banking={"mode": "house"}, seats=[1, 3, 5]),
        "Round RT1-20270115-000001AB started: Top Flush, seats 1, 3, 5",
    ),
    (
        e.RoundStarted(round_id=ROUND, game="top-flush", banking={"mode": "house"}, seats=[]),
        "Round RT1-20270115-000001AB started: Top Flush, seats none",
    ),
    (
        e.BetChanged(seat=2, wager="ante", amount_cents=2500, chip_count=25, locked=False),
        "Seat 2 ante: sensors read 25.00",
    ),
    (
        e.BetChanged(seat=2, wager="flush", amount_cents=500, chip_count=5, locked=True),
        "Seat 2 flush bonus: sensors read 5.00 (after the lock)",
    ),
    (
        e.PastPosting(seat=2, wager="ante", locked_cents=500, seen_cents=5000),
        "Past posting at seat 2 ante: 5.00 locked, 50.00 seen after the lock",
    ),
    (
        e.HandComplete(position=0, card_count=7),
        "The dealer has 7 cards",
    ),
    (
        e.HandComplete(position=15, card_count=3),
        "The board has 3 cards",
    ),
    (
        e.HandComplete(position=4, card_count=7),
        "Seat 4 has 7 cards",
    ),
    (
        e.DealerKey(key="next", seat=None),
        "Dealer pressed next",
    ),
    (
        e.DealerKey(key="kill_request", seat=4),
        "Dealer pressed kill request for seat 4",
    ),
    (
        e.ButtonMoved(from_seat=None, to_seat=3, reason="start", by="daemon"),
        "Button moved to seat 3 by daemon: start",
    ),
    (
        e.ButtonMoved(from_seat=3, to_seat=5, reason="rotation", by="engine", funds_cents=100000),
        "Button moved to seat 5 from seat 3 by engine: rotation",
    ),
    (
        e.VoidOrdered(by="sue", reason="cards exposed"),
        "sue voided the round: cards exposed",
    ),
    (
        e.DeviceReset(device="shuffler", by="sue", reason="in fault"),
        "sue reset shuffler: in fault",
    ),
    (
        e.DifferenceAccepted(
            fault_id="FT1-000001", by="sue", reason="stays out", spot="seat 3 flush reads 10.00"
        ),
        "sue accepted the difference (FT1-000001): seat 3 flush reads 10.00: stays out",
    ),
    (
        e.SecurityEvent(device="shoe", reason="forged frame", detail="bad MAC"),
        "Security event on shoe: forged frame bad MAC",
    ),
    (
        e.OperatorNote(action="shift_change", by="sue", detail="handover to sam"),
        "sue: shift change: handover to sam",
    ),
    (
        e.ProgressiveRefusedAtLock(by="engine", reason="the floor is unreachable"),
        "Progressive wagers refused at the lock: the floor is unreachable",
    ),
    (
        e.LinkedClaimAnswered(by="floor", answer="approved"),
        "The floor answered the progressive claim: approved",
    ),
    (
        e.LinkedConfirmationSent(by="sue", message="paid", award_id="A-7"),
        "sue confirmed progressive award A-7 paid: sent to the floor",
    ),
    (
        e.LinkedConfirmationSent(by="sue", message="paid", award_id=None),
        "sue confirmed progressive award  paid: sent to the floor",
    ),
    (
        e.Decision(seat=1, action="raise", amount_cents=123456, street=None, cause="chips"),
        "Seat 1: raise 1,234.56",
    ),
    (
        e.Decision(seat=2, action="check", amount_cents=0, street="river", cause="key"),
        "Seat 2: check on the river",
    ),
    (
        e.SeatKilled(seat=3, by="sue", reason="hand exposed", excluded=False, requested_by="dealer"),
        "sue killed seat 3's hand at the dealer's request: hand exposed",
    ),
    (
        e.SeatKilled(seat=3, by="sue", reason="hand exposed", excluded=False, requested_by=None),
        "sue killed seat 3's hand: hand exposed",
    ),
    (
        e.SeatKilled(seat=4, by="sue", reason="no funds", excluded=True, requested_by=None),
        "sue excluded seat 4 from the round: no funds",
    ),
    (
        e.KillSeatRequest(
            seat=3, status="requested", by="dealer", requested_by=None, reason=None, request_number=2
        ),
        "The dealer asks a supervisor to kill seat 3's hand (request 2)",
    ),
    (
        e.KillSeatRequest(
            seat=3, status="lapsed", by="engine", requested_by="dealer", reason="timeout", request_number=None
        ),
        "The request to kill seat 3's hand lapsed: timeout",
    ),
    (
        e.KillSeatRequest(
            seat=3, status="confirmed", by="sue", requested_by="dealer", reason="exposed", request_number=1
        ),
        "sue confirmed the dealer's request to kill seat 3's hand (request 1): exposed",
    ),
    (
        e.ProgressiveParametersChanged(
            meter_id="M1", by="max", after={"unit_cents": 100}, before=None, reason="new link"
        ),
        "Progressive M1: parameters set (the meter opens at its base) by max",
    ),
    (
        e.ProgressiveParametersChanged(
            meter_id="M1", by="mia", after={"unit_cents": 200}, before={"unit_cents": 100}, reason="promo"
        ),
        "Progressive M1: parameters changed by mia: promo",
    ),
    (
        e.ProgressiveParametersChanged(
            meter_id="M1", by="mia", after={"unit_cents": 200}, before={"unit_cents": 100}, reason=""
        ),
        "Progressive M1: parameters changed by mia",
    ),
    (
        e.ProgressiveContribution(
            meter_id="M1",
            table_id="T1",
            round_id=ROUND,
            wagers=3,
            unit_cents=100,
            in_meter_cents=300,
            increment_cents=210,
            to_meter_cents=210,
            hidden_cents=90,
            meter_after_cents=1_000_210,
            reserve_after_cents=5_090,
        ),
        "Progressive: 3 wager(s) from table T1, 2.10 to the meter (now 10,002.10), 0.90 to the reserve",
    ),
    (
        e.ProgressiveOverflow(
            meter_id="M1", table_id="T1", round_id=ROUND, overflow_cents=1234, reserve_after_cents=6_324
        ),
        "Progressive: the meter is at its limit; 12.34 to the overflow",
    ),
    (
        e.ProgressiveAwardClaimed(
            meter_id="M1",
            award_id="A-7",
            claim_number=7,
            table_id="T1",
            round_id=ROUND,
            seat=3,
            line=7,
            award={"meter_share_percent": 100},
            amount_cents=1_000_210,
            paid_from="meter",
            needs_confirmation=True,
            meter_before_cents=1_000_210,
            meter_after_cents=0,
            shared_by=1,
        ),
        "Progressive hit #7: seat 3 at table T1, 7-card straight flush, 10,002.10 from the meter "
        "(awaiting a supervisor)",
    ),
    (
        e.ProgressiveAwardClaimed(
            meter_id="M1",
            award_id="A-8",
            claim_number=8,
            table_id="T1",
            round_id=ROUND,
            seat=2,
            line=5,
            award=4000,
            amount_cents=4000,
            paid_from="house",
            needs_confirmation=False,
            meter_before_cents=None,
            meter_after_cents=None,
            shared_by=1,
        ),
        "Progressive hit #8: seat 2 at table T1, 5-card straight flush, 40.00 from the house",
    ),
    (
        e.ProgressiveAwardPaid(
            meter_id="M1",
            award_id="A-7",
            table_id="T1",
            round_id=ROUND,
            seat=3,
            amount_cents=1_000_210,
            by="sue",
        ),
        "Progressive award A-7 paid: 10,002.10, confirmed by sue",
    ),
    (
        e.ProgressiveAwardPaid(
            meter_id="M1",
            award_id="A-8",
            table_id="T1",
            round_id=ROUND,
            seat=2,
            amount_cents=4000,
            by="engine",
        ),
        "Progressive award A-8 paid: 40.00",
    ),
    (
        e.ProgressiveReset(
            meter_id="M1",
            table_id="T1",
            round_id=ROUND,
            amount_cents=1_000_000,
            from_reserve_cents=5_000,
            house_added_cents=995_000,
            reserve_after_cents=0,
        ),
        "Progressive meter re-seeded to 10,000.00: 50.00 from the reserve, 9,950.00 added by the house",
    ),
    (
        e.ProgressiveReserve(
            meter_id="M1", amount_cents=50_000, reason="seed", by="max", reserve_after_cents=55_000
        ),
        "Progressive reserve +500.00 by max: seed",
    ),
    (
        e.ProgressiveReserve(
            meter_id="M1", amount_cents=-20_000, reason="correction", by="max", reserve_after_cents=35_000
        ),
        "Progressive reserve -200.00 by max: correction",
    ),
    (
        e.BetsLocked(wagers={"10": {"ante": 100}, "3": {"ante": 2500, "straight_flush": 500}}),
        "Bets locked — seat 3: ante 25.00, straight flush bonus 5.00; seat 10: ante 1.00",
    ),
    (
        e.BetsLocked(wagers={}),
        "Bets locked — no wagers",
    ),
    (
        e.RoundVoided(round={}, settlement={}, reason="cards exposed", by="sam"),
        "Round voided by sam — every wager returned in full: cards exposed",
    ),
    (
        e.PanelRequest(
            action="set_limits", by="max", request={"min_ante_cents": 500, "note": "x"}, outcome="done"
        ),
        "max asked to set limits: min ante cents 5.00, note x",
    ),
    (
        e.PanelRequest(action="kill_seat", by="sue", request={}, outcome="refused: no round"),
        "sue asked to kill seat — refused: no round",
    ),
    (
        e.LimitsSet(
            by="max",
            after={
                "min_ante_cents": 500,
                "max_ante_cents": 20000,
                "max_bonus_cents": {"flush": 5000, "straight_flush": 20000},
                "own_max_bonus_cents": {"flush": 5000},
            },
            before={"min_ante_cents": 500, "max_ante_cents": 10000},
            config_digest=None,
        ),
        "max set the limits: ante 5.00 to 200.00, bonus maxima flush bonus 50.00, straight flush "
        "bonus 200.00 (the ante's maximum) (were 5.00 to 100.00)",
    ),
    (
        e.LimitsSet(
            by="max", after={"min_ante_cents": 500, "max_ante_cents": 20000}, before=None, config_digest=None
        ),
        "max set the limits: ante 5.00 to 200.00",
    ),
    (
        e.PaytableSet(
            wager="flush", by="max", after="hcf-flush-dp", before="hcf-flush-house", config_digest=None
        ),
        "max set the flush bonus paytable: hcf-flush-dp (was hcf-flush-house)",
    ),
    (
        e.PaytableSet(wager="flush", by="max", after={"7": 100}, before=None, config_digest=None),
        "max set the flush bonus paytable: custom lines",
    ),
]


def test_every_typed_sentence_is_shown_here() -> None:
    shown = {entry.kind for entry, _ in SENTENCES} | {entry.kind for entry, _, _ in GATED}
    assert shown == set(_TYPED_SENTENCES)


@pytest.mark.parametrize(("entry", "expected"), SENTENCES, ids=[entry.kind for entry, _ in SENTENCES])
def test_a_typed_sentence_reads_as_the_payload_sentence_did(entry: e.Entry, expected: str) -> None:
    event = {"kind": entry.kind, "payload": e.public_dict(entry), "hidden": False}
    assert entry_sentence(event) == expected


def test_a_payload_not_of_its_kind_reads_as_its_own_fields() -> None:
    """A change_proposed missing its fields is not its kind: its fields as they are, not "None proposed"."""
    odd = {"kind": "change_proposed", "payload": {"change_id": "CT1-0001", "by": "max"}}
    assert entry_sentence(odd) == "Change proposed: change id CT1-0001, by max"
    garbled = {"kind": "clock_offset", "payload": {"source": "sntp://x:123", "offset_us": "soon"}}
    assert entry_sentence(garbled) == "Clock offset: source sntp://x:123, offset us soon"


# Entries of their kind (the typed decoder takes them: it checks only the outer shape, such as
# ``settlement: dict[str, Any]``) whose inner fields are of another shape: an older row, a hand-made one.
MALFORMED_INSIDE: list[tuple[dict[str, Any], str, str]] = [
    (
        {"kind": "round_settled", "payload": {"settlement": {"seats": 5, "banker_net": 1}}},
        "Round settled",
        "TypeError",
    ),
    (
        {"kind": "limits_set", "payload": {"by": "max", "after": {"max_bonus_cents": 7}}},
        "Limits set: by max",
        "AttributeError",
    ),
]


@pytest.mark.parametrize(
    ("event", "expected", "error"), MALFORMED_INSIDE, ids=[event["kind"] for event, _, _ in MALFORMED_INSIDE]
)
def test_a_malformed_inner_field_reads_as_plain_words_and_is_logged(
    event: dict[str, Any], expected: str, error: str
) -> None:
    """Never a failed page (the panel's event stream and recall read every entry through here): the
    plain-words line, and the fallback logged so a wrong sentence does not hide behind it."""
    configure_logging(level="debug")  # the fallback is a debug line; the fixture resets the defaults
    with capture_logs() as logs:
        assert entry_sentence(event) == expected
    assert [(log["event"], log["kind"]) for log in logs] == [("sentence_fallback", event["kind"])]
    assert logs[0]["error"].startswith(error)


def test_a_malformed_typed_entry_handed_over_reads_as_plain_words() -> None:
    """The panel hands over the typed entry (``privacy.viewer_typed``): its render guarded the same way."""
    settled = e.RoundSettled(settlement={"seats": 5, "banker_net": 1})
    event = {"kind": "round_settled", "payload": e.public_dict(settled), "hidden": False}
    configure_logging(level="debug")
    with capture_logs() as logs:
        assert entry_sentence(event, entry=settled) == "Round settled: bank by seat None"
    assert [log["event"] for log in logs] == ["sentence_fallback"]


# --- the kinds with a private part (and dp_waived): read typed since issue 29 ------------------------
# The entries as the gate lets them out: each with its private part shown (the round revealed: the
# payload holds both parts merged, as the gate's viewer event gives it) and withheld (its public view).
# Each sentence is the one the payload renderers of the release before wrote for the same event
# (byte for byte: test_the_gated_sentences_are_the_earlier_releases below runs that release's module).
SEAT_3_REASON = e.Reason(code="card_repeated", message="a card reported twice at seat 3", seat=3)
GATED: list[tuple[e.Entry, str, str]] = [
    (
        e.CardDealt(private=e.CardDealtPrivate(position=3, index=0, card="Qd")),
        "Qd dealt to seat 3",
        "A card dealt face down (shown once the round is revealed)",
    ),
    (
        e.CardDealt(private=e.CardDealtPrivate(position=0, index=1, card=None)),
        "an unreadable card dealt to the dealer",
        "A card dealt face down (shown once the round is revealed)",
    ),
    (
        e.DeckVerified(
            card_count=51,
            missing_count=1,
            extra_count=0,
            private=e.DeckVerifiedPrivate(missing=["Qd"], extra=[]),
        ),
        "Deck verified: 51 cards, 1 missing, 0 extra",
        "Deck verified: 51 cards, 1 missing, 0 extra",
    ),
    (
        e.DecisionRefused(
            seat=2,
            action="raise",
            amount_cents=2500,
            reason=e.Reason(code="over_limit", message="the raise is over its limit", seat=2),
            private=e.DecisionRefusedPrivate(limit_detail="exactly 25.00 with a 3-card flush"),
        ),
        "Refused: the raise is over its limit",
        "Refused: the raise is over its limit",
    ),
    (
        e.DeadHand(
            seat=3,
            reason=SEAT_3_REASON,
            private=e.ReasonDetail(message="Qd reported twice", card=49, position=3, index=2),
        ),
        "Dead hand at seat 3: a card reported twice at seat 3",
        "Dead hand at seat 3: a card reported twice at seat 3",
    ),
    (
        e.DeadHand(seat=None, reason=e.Reason(code="red_light", message="the shoe's fault lamp")),
        "Dead hand at the table: the shoe's fault lamp",
        "Dead hand at the table: the shoe's fault lamp",
    ),
    (
        e.RoundSettled(
            settlement={
                "game": "high-card-flush",
                "banking": "house",
                "dead": False,
                "dealer": {"qualifies": True},
                "seats": [{"seat": 1, "net": -500, "wagers": {}}, {"seat": 2, "net": 1000, "wagers": {}}],
                "banker_net": -500,
                "rake": 0,
            },
            private=e.RoundSettledPrivate(
                round={"game": "high-card-flush", "dealer": ["As"], "seats": []},
                hands={
                    "dealer": {"cards": ["As"]},
                    "seats": {"1": {"cards": ["2c"]}, "2": {"cards": ["Kd"]}},
                },
            ),
        ),
        "Round settled: 2 seat(s), banker net -5.00, rake 0.00",
        "Round settled: 2 seat(s), banker net -5.00, rake 0.00",
    ),
    (
        e.RoundDead(
            round={"game": "high-card-flush", "dead": True},
            settlement={"seats": []},
            reason=e.Reason(code="shoe_fault", message="the shoe stopped"),
            private=e.ReasonDetail(message="jam at card 7"),
        ),
        "Round dead — every wager returned in full: the shoe stopped",
        "Round dead — every wager returned in full: the shoe stopped",
    ),
    (
        e.FaultRaised(
            fault_id="FT1-000004",
            kind_of_fault="card_repeated",
            severity="latching",
            device="shoe",
            reason=SEAT_3_REASON,
            private=e.ReasonDetail(message="Qd reported twice", card=49),
        ),
        "Latching fault FT1-000004, card repeated: a card reported twice at seat 3 (device shoe)",
        "Latching fault FT1-000004, card repeated: a card reported twice at seat 3 (device shoe)",
    ),
    (
        e.FaultRaised(
            fault_id="FT1-000005",
            kind_of_fault="clock_offset",
            severity="alert",
            device=None,
            reason=e.Reason(code="clock_offset", message="3.0 s off"),
        ),
        "Alert FT1-000005, clock offset: 3.0 s off",
        "Alert FT1-000005, clock offset: 3.0 s off",
    ),
    (
        e.DpWaived(seat=4),
        "Seat 4 waived the designated player's button",
        "Seat 4 waived the designated player's button",
    ),
    (
        e.ActionRefused(
            action="kill_seat",
            by="sue",
            reason="not now",
            private=e.ActionRefusedPrivate(refusal_detail="seat 3 holds a flush"),
        ),
        "sue: kill seat refused: not now",
        "sue: kill seat refused: not now",
    ),
    (
        e.OperatorAction(action="set_limits", by="max", detail={"min_ante_cents": 500}, outcome="done"),
        "max asked to set limits: min ante cents 5.00",
        "max asked to set limits: min ante cents 5.00",
    ),
]


def gated_events(entry: e.Entry) -> tuple[dict[str, object], dict[str, object]]:
    """The entry's event as the gate gives it once its round is revealed, and before."""
    public, private = e.public_dict(entry), e.private_dict(entry)
    shown: dict[str, object] = {
        "kind": entry.kind,
        "payload": e.merged_payload(entry.kind, public, private),
        "private": private,
        "hidden": False,
    }
    withheld: dict[str, object] = {
        "kind": entry.kind,
        "payload": public,
        "private": None,
        "hidden": private is not None,
    }
    return shown, withheld


def public_view(entry: e.Entry) -> e.Entry:
    return msgspec.structs.replace(entry, private=None) if entry.private_part() is not None else entry


@pytest.mark.parametrize(("entry", "revealed", "withheld"), GATED, ids=[g[0].kind for g in GATED])
def test_the_kinds_with_a_private_part_read_typed_shown_and_withheld(
    entry: e.Entry, revealed: str, withheld: str
) -> None:
    assert entry.kind in _TYPED_SENTENCES
    shown, hidden = gated_events(entry)
    assert entry_sentence(shown) == revealed
    assert entry_sentence(hidden) == withheld
    # The panel hands over the typed entry the gate lets out (privacy.viewer_typed): the same sentences.
    if (
        entry.kind != "operator_action"
    ):  # a row of an earlier release: read as today's kind, decoded as written
        assert entry_sentence(shown, entry=entry) == revealed
        assert entry_sentence(hidden, entry=public_view(entry)) == withheld
    # Nothing private in the sentence of the public view (the card, the detail of a refusal).
    for secret in ("Qd", "3-card flush", "jam", "holds a flush"):
        if secret not in withheld:
            assert secret not in entry_sentence(hidden)


def test_the_gated_sentences_are_the_earlier_releases(tmp_path: Path) -> None:
    """The same events through the payload renderers of the release before (its sentence.py, from git):
    byte for byte the sentences above."""
    source = subprocess.run(
        ["git", "show", f"{RELEASE_BEFORE_TYPED_SENTENCES}:controller/journal/sentence.py"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    file = tmp_path / "sentence_before.py"
    file.write_text(source)
    spec = importlib.util.spec_from_file_location("flushtable_sentence_before", file)
    assert spec is not None
    assert spec.loader is not None
    before = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(before)
    for entry, revealed, withheld in GATED:
        shown, hidden = gated_events(entry)
        assert (before.entry_sentence(shown), before.entry_sentence(hidden)) == (revealed, withheld), (
            entry.kind
        )
