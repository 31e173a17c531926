"""The hidden-card gate and the table view, with no server: pure functions fed journal-shaped entries."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from controller.panel.diagram import state_diagram, state_path
from controller.panel.view import TableView, public_recall, scrub_cards

RANKS = "23456789TJQKA"
SUITS = "cdhs"
DECK = [r + s for s in SUITS for r in RANKS]


@dataclass(frozen=True)
class Entry:
    seq: int
    kind: str
    payload: dict[str, Any]
    round_id: str | None = "RT1-20261129-000001"
    time_utc: str = "2026-11-29T12:00:00.000000Z"
    table_id: str = "T1"
    source: str = "engine"


@dataclass
class Feed:
    view: TableView = field(default_factory=TableView)
    entries: list[Entry] = field(default_factory=list)

    def add(
        self, kind: str, payload: dict[str, Any], round_id: str | None = "RT1-20261129-000001"
    ) -> dict[str, Any]:
        entry = Entry(len(self.entries) + 1, kind, payload, round_id)
        self.entries.append(entry)
        self.view.apply(entry)
        return self.view.public_entry(entry)


def _start(feed: Feed, game: str = "high-card-flush") -> None:
    feed.add(
        "round_started",
        {"round_id": "RT1-20261129-000001", "game": game, "banking": {"mode": "house"}, "seats": [1, 2]},
    )


def _visible_cards(obj: Any) -> set[str]:
    text = json.dumps(obj)
    return {card for card in DECK if f'"{card}"' in text}


@settings(max_examples=150, deadline=None)
@given(
    deal=st.lists(
        st.tuples(st.sampled_from([0, 1, 2, 15]), st.sampled_from(DECK)),
        min_size=1,
        max_size=20,
        unique_by=lambda t: t[1],
    ),
    states=st.lists(
        st.sampled_from(["betting", "bets_locked", "dealing", "decisions", "preflop", "held"]), max_size=4
    ),
)
def test_no_card_leaves_before_the_reveal_whatever_happens(
    deal: list[tuple[int, str]], states: list[str]
) -> None:
    feed = Feed()
    _start(feed)
    shown: list[dict[str, Any]] = []
    counts: dict[int, int] = {}
    for position, card in deal:
        index = counts.get(position, 0)
        counts[position] = index + 1
        shown.append(feed.add("card_dealt", {"position": position, "index": index, "card": card}))
        if states:
            shown.append(feed.add("state_changed", {"machine": "round", "from": "x", "to": states.pop()}))
    shown.append(
        feed.add(
            "fault_raised",
            {
                "fault_id": "F1",
                "kind": "integrity",
                "severity": "alert",
                "detail": f"{deal[0][1]} seen twice",
            },
        )
    )
    shown.extend(feed.view.public_entry(entry) for entry in feed.entries)  # a replay, as after a reconnect
    assert _visible_cards(shown) == set()
    assert _visible_cards(feed.view.snapshot()) == set()
    assert deal[0][1] not in json.dumps(shown)
    # At the reveal they show.
    feed.add("state_changed", {"machine": "round", "from": "decisions", "to": "reveal"})
    dealt = {card for _p, card in deal}
    assert _visible_cards([feed.view.public_entry(entry) for entry in feed.entries]) == dealt
    assert _visible_cards(feed.view.snapshot()) == dealt


def test_community_cards_show_as_they_are_turned_in_chase_the_flush() -> None:
    feed = Feed()
    _start(feed, "chase-the-flush")
    feed.add("card_dealt", {"position": 1, "index": 0, "card": "As"})
    for index, card in enumerate(["2c", "3c", "4c", "5c"]):
        feed.add("card_dealt", {"position": 15, "index": index, "card": card})
    assert feed.view.snapshot()["round"]["community"] == [None, None, None, None]
    feed.add("state_changed", {"machine": "round", "from": "preflop", "to": "dealing_flop"})
    assert feed.view.snapshot()["round"]["community"] == ["2c", "3c", None, None]
    feed.add("state_changed", {"machine": "round", "from": "flop", "to": "dealing_turn_river"})
    assert feed.view.snapshot()["round"]["community"] == ["2c", "3c", "4c", "5c"]
    assert feed.view.snapshot()["round"]["seats"][0]["cards"] == [None]


def test_a_dead_seat_and_a_dead_round_never_show_their_cards() -> None:
    feed = Feed()
    _start(feed)
    feed.add("card_dealt", {"position": 1, "index": 0, "card": "As"})
    feed.add("card_dealt", {"position": 2, "index": 0, "card": "Kd"})
    feed.add("dead_hand", {"seat": 2, "reason": "wrong_count"})
    feed.add("state_changed", {"machine": "round", "from": "decisions", "to": "reveal"})
    snapshot = feed.view.snapshot()
    assert _visible_cards(snapshot) == {"As"}
    settled = feed.add(
        "round_settled",
        {"round": {"seats": [{"seat": 1, "cards": ["As"]}, {"seat": 2, "cards": ["Kd"]}]}, "settlement": {}},
    )
    assert _visible_cards(settled) == {"As"}
    dead = Feed()
    _start(dead)
    dead.add("card_dealt", {"position": 1, "index": 0, "card": "As"})
    closing = dead.add(
        "round_dead",
        {"round": {"seats": [{"seat": 1, "cards": ["As"]}]}, "settlement": {}, "reason": "red_light"},
    )
    assert _visible_cards(closing) == set()
    assert _visible_cards([dead.view.public_entry(e) for e in dead.entries]) == set()


def test_recall_record_goes_through_the_same_gate() -> None:
    events = [
        {
            "seq": 1,
            "kind": "round_started",
            "payload": {
                "round_id": "R1",
                "game": "high-card-flush",
                "banking": {"mode": "house"},
                "seats": [1],
            },
        },
        {"seq": 2, "kind": "card_dealt", "payload": {"position": 1, "index": 0, "card": "As"}},
        {
            "seq": 3,
            "kind": "state_changed",
            "payload": {"machine": "round", "from": "decisions", "to": "reveal"},
        },
    ]
    record = {
        "round_id": "R1",
        "status": "settled",
        "round": {"seats": [{"seat": 1, "cards": ["As"]}]},
        "settlement": {},
        "faults": [],
        "events": events,
    }
    assert _visible_cards(public_recall(record)) == {"As"}
    void_early = {**record, "status": "void", "events": events[:2]}
    assert _visible_cards(public_recall(void_early)) == set()
    dead = {
        **record,
        "status": "dead",
        "events": [
            *events,
            {"seq": 4, "kind": "round_dead", "payload": {"round": {}, "settlement": {}, "reason": "x"}},
        ],
    }
    assert _visible_cards(public_recall(dead)) == set()


def test_a_refused_raise_does_not_tell_the_hand_before_the_reveal() -> None:
    feed = Feed()
    _start(feed)
    shown = feed.add(
        "decision_refused",
        {
            "seat": 1,
            "action": "raise",
            "amount_cents": 3000,
            "reason": "over the limit: 1000 to 2000 with a 5-card flush",
        },
    )
    assert shown["payload"]["reason"] == "over the limit"
    feed.add("state_changed", {"machine": "round", "from": "decisions", "to": "reveal"})
    assert "5-card flush" in feed.view.public_entry(feed.entries[-2])["payload"]["reason"]


def test_scrub_cards_reaches_free_text_and_hands() -> None:
    scrubbed = scrub_cards(
        {"detail": "card Qh read twice; 10h? As a rule", "hand": {"flush_length": 5}, "cards": ["2c"]}
    )
    assert scrubbed == {"detail": "card ?? read twice; 10h? ?? a rule", "hand": None, "cards": None}


def test_diagram_is_drawn_from_the_engines_definition_with_the_phase_lit() -> None:
    assert state_path("high-card-flush")[:3] == ("idle", "betting", "bets_locked")
    assert "dealing_flop" in state_path("chase_the_flush")
    diagram = state_diagram("high-card-flush", "decisions")
    assert [box.state for box in diagram.boxes if box.lit] == ["decisions"]
    assert diagram.known
    held = state_diagram("top-flush", "held")
    assert [box.state for box in held.boxes if box.lit] == ["held"]
    assert not state_diagram("high-card-flush", "warming_up").known


def test_alerts_follow_raise_acknowledge_clear() -> None:
    feed = Feed()
    feed.add(
        "fault_raised",
        {"fault_id": "F1", "kind": "device_lost", "severity": "alert", "detail": "sensors"},
        None,
    )
    assert feed.view.alerts["F1"].state == "active"
    feed.add("fault_acknowledged", {"fault_id": "F1", "by": "sam"}, None)
    assert feed.view.alerts["F1"].state == "acknowledged"
    feed.add("fault_cleared", {"fault_id": "F1", "by": "sam", "reason": "cable"}, None)
    assert feed.view.alerts["F1"].state == "cleared"
    assert feed.view.snapshot()["active_alerts"] == 0
