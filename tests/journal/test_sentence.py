"""Journal entries as sentences for people (controller/journal/sentence.py): every kind has its own,
amounts read as money, a card is named only once the gate lets it out, and an odd payload still reads."""

from __future__ import annotations

import pytest

from controller.journal.entries import CLASS_BY_KIND
from controller.journal.sentence import entry_sentence, kinds_with_a_sentence


def test_every_kind_of_entry_has_its_own_sentence() -> None:
    assert set(CLASS_BY_KIND) - kinds_with_a_sentence() == set()


@pytest.mark.parametrize(
    ("kind", "payload", "hidden", "expected"),
    [
        ("card_dealt", {}, True, "A card dealt face down (shown once the round is revealed)"),
        ("card_dealt", {"position": 3, "index": 0, "card": "Qd"}, False, "Qd dealt to seat 3"),
        ("card_dealt", {"position": 0, "index": 1, "card": "As"}, False, "As dealt to the dealer"),
        (
            "past_posting",
            {"seat": 2, "wager": "ante", "locked_cents": 500, "seen_cents": 5000},
            False,
            "Past posting at seat 2 ante: 5.00 locked, 50.00 seen after the lock",
        ),
        (
            "bets_locked",
            {"wagers": {"10": {"ante": 100}, "3": {"ante": 2500, "straight_flush": 500}}},
            False,
            "Bets locked — seat 3: ante 25.00, straight flush bonus 5.00; seat 10: ante 1.00",
        ),
        (
            "decision",
            {"seat": 1, "action": "raise", "amount_cents": 123456, "street": None, "cause": "chips"},
            False,
            "Seat 1: raise 1,234.56",
        ),
        (
            "round_voided",
            {"round": {}, "settlement": {}, "reason": "cards exposed", "by": "sam"},
            False,
            "Round voided by sam — every wager returned in full: cards exposed",
        ),
        (
            "operator_action",  # an earlier release's row, as written
            {"action": "set_limits", "by": "max", "detail": {"min_ante_cents": 500}, "outcome": "done"},
            False,
            "max asked to set limits: min ante cents 5.00",
        ),
        (
            "panel_request",
            {"action": "set_limits", "by": "max", "request": {"min_ante_cents": 500}, "outcome": "done"},
            False,
            "max asked to set limits: min ante cents 5.00",
        ),
        (
            "seat_killed",
            {"seat": 3, "by": "sue", "reason": "hand exposed", "excluded": False, "requested_by": "dealer"},
            False,
            "sue killed seat 3's hand at the dealer's request: hand exposed",
        ),
        (
            "difference_accepted",
            {
                "fault_id": "FT1-000001",
                "by": "sue",
                "reason": "stays out",
                "spot": "seat 3 flush reads 10.00",
            },
            False,
            "sue accepted the difference (FT1-000001): seat 3 flush reads 10.00: stays out",
        ),
        (
            "device_reset",
            {"device": "shuffler", "by": "sue", "reason": "in fault"},
            False,
            "sue reset shuffler: in fault",
        ),
    ],
)
def test_sentences_read_as_a_supervisor_says_them(
    kind: str, payload: dict[str, object], hidden: bool, expected: str
) -> None:
    assert entry_sentence({"kind": kind, "payload": payload, "hidden": hidden}) == expected


def test_an_unknown_kind_or_an_odd_payload_still_reads() -> None:
    assert entry_sentence({"kind": "new_kind", "payload": {"seat": 2}}) == "New kind: seat 2"
    assert entry_sentence({"kind": "bets_locked", "payload": {"wagers": "garbled"}}).startswith("Bets locked")
