"""The leak test's own rules (matching.py, rounds.py), on small folds: what counts as a card in a text,
what does not, and which round a mention is blamed on."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from tests.privacy.matching import Mention, html_mentions, json_mentions, leaks_in, text_mentions
from tests.privacy.rounds import TableCards, table_cards


@dataclass(frozen=True, slots=True)
class Entry:
    seq: int
    round_id: str | None
    kind: str
    payload: dict[str, Any] = field(default_factory=dict)
    time_utc: str = "2026-01-01T00:00:00Z"


def two_rounds() -> TableCards:
    """R1 settled at seq 10 (seat 2's hand dead); R2 in play: Qd and 9s at seat 1, 5h community."""
    return table_cards(
        [
            Entry(1, "R1", "round_started"),
            Entry(2, "R1", "card_dealt", {"card": "Qd", "index": 0, "position": 1}),
            Entry(3, "R1", "card_dealt", {"card": "Ks", "index": 0, "position": 2}),
            Entry(4, "R1", "dead_hand", {"seat": 2, "reason": "wrong card count"}),
            Entry(10, "R1", "round_settled"),
            Entry(11, "R2", "round_started"),
            Entry(12, "R2", "card_dealt", {"card": "Ah", "index": 0, "position": 1}),
            Entry(13, "R2", "card_dealt", {"card": "9s", "index": 4, "position": 1}),
            Entry(14, "R2", "card_dealt", {"card": "5h", "index": 0, "position": 15}),
            Entry(15, "R2", "state_changed", {"machine": "round", "to": "flop"}),
        ]
    )


def found(text: str) -> list[tuple[str, Any]]:
    return [(mention.encoding, mention.value) for mention in text_mentions(text, None)]


@pytest.mark.parametrize(
    "text",
    [
        "hash=8f2c3d9a1e4b7c6d",  # hex: the code touches letters and digits
        "round RHCF1-20261201-000002, fault FHCF1-2c",  # ids: "-" and "_" are part of a word
        "csrf_token=Ab_Qd-x9",
        "the shoe counted 6 cards, 7 due; dealt 6 cards, 7 requested",  # counts, not cards
        "red_light at position 1: at card 4",  # the shoe's count of cards into its deal
        "card_count 7, cards dealt: 21",
        "a 6-card flush",
    ],
)
def test_what_is_not_a_card(text: str) -> None:
    assert found(text) == []


def test_each_encoding_of_a_card_in_text() -> None:
    assert found("index 0 reported as card 15 and then as card 16") == [("number", 15), ("number", 16)]
    assert found("card 23 dealt twice (first at position 1 index 4)") == [("number", 23), ("slot", (1, 4))]
    assert found("misread at position 1: index 0") == [("slot", (1, 0))]
    assert found("index 3 at position 2") == [("slot", (2, 3))]
    assert found('seat 1 holds Qd, "Ks"; 10♦') == [("code", "Qd"), ("code", "Ks"), ("symbol", "Td")]
    assert found('{"card": 23, "index": 4, "position": 1}') == [
        ("number", 23),
        ("slot", (1, 4)),
        ("number", 23),
    ]


def test_a_page_as_rendered_and_its_markup() -> None:
    page = '<span class="pcard" data-card="Qd">Q<span class="suit">♦</span></span><script>var Ks;</script>'
    assert [(m.encoding, m.value) for m in html_mentions(page)] == [("code", "Qd"), ("symbol", "Qd")]


def test_json_is_attributed_by_its_round_id() -> None:
    value = [{"round_id": "R1", "payload": {"card": 40}}, {"round_id": None, "detail": "card 9"}]
    mentions = [(m.value, m.round_id) for m in json_mentions(value, None, ["R1"])]
    assert mentions == [(40, "R1"), (9, None)]


def leaks(mention: Mention, watermark: int) -> list[str]:
    return [card.code for leak in leaks_in(iter([mention]), two_rounds(), watermark) for card in leak.cards]


def test_a_card_is_a_leak_until_its_reveal() -> None:
    assert leaks(Mention("code", "Qd", "R1", ""), 9) == ["Qd"]
    assert leaks(Mention("code", "Qd", "R1", ""), 10) == []
    assert leaks(Mention("number", 23, "R1", ""), 9) == ["Qd"]  # Qd is card 23


def test_a_dead_hand_is_never_shown() -> None:
    assert leaks(Mention("code", "Ks", "R1", ""), 100) == ["Ks"]
    assert leaks(Mention("slot", (2, 0), "R1", ""), 100) == ["Ks"]


def test_a_community_card_is_shown_once_turned() -> None:
    assert leaks(Mention("code", "5h", "R2", ""), 14) == ["5h"]
    assert leaks(Mention("code", "5h", "R2", ""), 15) == []


def test_text_about_one_round_is_held_to_that_rounds_cards() -> None:
    # A text about R1 (revealed) naming slot (1, 0) is R1's Qd, shown: not R2's hidden Ah.
    assert leaks(Mention("slot", (1, 0), "R1", ""), 20) == []
    # The same slot in a text about R2 is R2's Ah.
    assert leaks(Mention("slot", (1, 0), "R2", ""), 20) == ["Ah"]


def test_text_about_no_round_is_blamed_only_for_a_card_no_round_has_shown() -> None:
    assert leaks(Mention("slot", (1, 0), None, ""), 20) == []  # R1's (1, 0) was shown at seq 10
    assert leaks(Mention("code", "9s", None, ""), 20) == ["9s"]
    assert leaks(Mention("code", "9s", None, ""), 10) == []  # R2 had not started
