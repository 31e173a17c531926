"""The panel's view (TableView over the one reducer, every entry through the one gate), with no server,
fed journals written by the real round engine (tests/journal/scripted.py, tests/panel/table_script.py):
no card before its round's reveal, every live card after it, a dead hand's never, and Chase the Flush's
community cards as the streets turn."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller.journal import Journal
from controller.journal.state_parts import COMMUNITY_POSITION, REVEAL_STATES
from controller.journal.store import JournalEntry
from controller.panel.diagram import state_diagram, state_path
from controller.panel.view import TableView
from tests.journal.scripted import play_round
from tests.panel.table_script import HOLE_CARDS, JournalTableActions, ScriptedRound, raise_red_light

RANKS = "23456789TJQKA"
SUITS = "cdhs"
DECK = [r + s for s in SUITS for r in RANKS]


@pytest.fixture
def journal(tmp_path: Path) -> Iterator[Journal]:
    with Journal.open(tmp_path / "journal.sqlite", "T1") as opened:
        yield opened


def _visible_cards(obj: Any) -> set[str]:
    text = json.dumps(obj)
    return {card for card in DECK if f'"{card}"' in text}


def _dealt(entries: list[JournalEntry], round_id: str) -> dict[int, list[str]]:
    """The cards the engine dealt in the round, by position (the trusted readers' view)."""
    dealt: dict[int, list[str]] = {}
    for entry in entries:
        if entry.round_id == round_id and entry.kind == "card_dealt" and entry.private is not None:
            card = entry.private["card"]
            if card is not None:
                dealt.setdefault(entry.private["position"], []).append(card)
    return dealt


def _reveal_seq(entries: list[JournalEntry], round_id: str) -> int | None:
    for entry in entries:
        if entry.round_id != round_id:
            continue
        if entry.kind == "state_changed" and entry.payload["to"] in REVEAL_STATES:
            return entry.seq
        if entry.kind == "round_settled":
            return entry.seq
    return None


def _watch(entries: list[JournalEntry]) -> Iterator[tuple[JournalEntry, TableView, list[dict[str, Any]]]]:
    """The view fed entry by entry, with everything it would send a viewer now (a replay of every
    entry so far, as after a reconnect, and the table)."""
    view = TableView("T1")
    for n, entry in enumerate(entries):
        view.apply(entry)
        shown = [view.public_entry(e) for e in entries[: n + 1]]
        yield entry, view, [*shown, view.snapshot()]


GAMES = [("high-card-flush", "house"), ("high-card-flush", "designated-player"), ("top-flush", "house")]


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    seed=st.integers(0, 2**32 - 1),
    game=st.sampled_from(GAMES),
    outcome=st.sampled_from(["settled", "dead", "open_mid_deal"]),
)
def test_no_card_leaves_before_the_reveal_whatever_the_engine_wrote(
    tmp_path_factory: pytest.TempPathFactory, seed: int, game: tuple[str, str], outcome: str
) -> None:
    with Journal.open(tmp_path_factory.mktemp("view") / "journal.sqlite", "T1") as journal:
        rng = random.Random(seed)
        round_id = play_round(journal, rng, game=game[0], banking_mode=game[1], outcome=outcome)  # type: ignore[arg-type]
        entries = list(journal.entries())
    dealt = _dealt(entries, round_id)
    hole = {card for cards in dealt.values() for card in cards}
    assert hole, "the engine dealt no card"
    reveal = _reveal_seq(entries, round_id) if outcome == "settled" else None
    view = TableView("T1")
    for entry, view, shown in _watch(entries):  # noqa: B007 (the last view is read below)
        if reveal is None or entry.seq < reveal:
            assert _visible_cards(shown) == set(), (entry.seq, entry.kind)
            for out in shown[:-1]:
                if out["hidden"]:
                    assert set(out["payload"]) <= set(entries[out["seq"] - 1].public), out
    if reveal is not None:
        # Revealed: every card dealt in the round shows, in the table and in the entries.
        assert _visible_cards(shown) == hole
        snapshot = view.snapshot()["round"]
        assert snapshot["revealed"]
        for seat in snapshot["seats"]:
            assert seat["cards"] == dealt.get(seat["seat"], [])
        assert snapshot["dealer_cards"] == dealt.get(0, [])
        hidden = [out for out in shown[:-1] if out["hidden"]]
        assert not any(out["round_id"] == round_id for out in hidden)


def test_a_dead_round_never_shows_its_cards(journal: Journal) -> None:
    """docs/rules.md: a dead hand's cards are never shown, even after the round closed."""
    script = ScriptedRound(journal, red_light_at=4)
    assert list(script.steps()) == ["betting", "bets_locked", "dead"]
    entries = list(journal.entries())
    assert [card for cards in _dealt(entries, script.round_id).values() for card in cards] == HOLE_CARDS[1][
        :4
    ]
    for entry, _view, shown in _watch(entries):
        assert _visible_cards(shown) == set(), (entry.seq, entry.kind)
    round_ = shown[-1]["round"]
    assert round_["status"] == "dead"
    assert not round_["revealed"]
    assert round_["seats"][0]["cards"] == [None] * 4  # face down, counted
    dead = next(out for out in shown[:-1] if out["kind"] == "round_dead")
    assert dead["hidden"]  # the shoe's words about where the deal stood: withheld for good
    assert [seat["cards"] for seat in dead["payload"]["round"]["seats"]] == [[], [], []]


def test_a_dead_seat_never_shows_its_cards_while_the_others_are_revealed(journal: Journal) -> None:
    script = ScriptedRound(journal, wrong_count={2: 6})  # the shoe miscounts seat 2's hand: dead
    steps = script.steps()
    for step in steps:
        view = TableView("T1")
        for entry in journal.entries():
            view.apply(entry)
        cards = _visible_cards([view.public_entry(e) for e in journal.entries()]) | _visible_cards(
            view.snapshot()
        )
        if step in ("betting", "bets_locked", "dealt", "decisions"):
            assert cards == set(), step
        else:
            assert cards == set(HOLE_CARDS[0] + HOLE_CARDS[1] + HOLE_CARDS[3]), step
    seats = {seat["seat"]: seat for seat in view.snapshot()["round"]["seats"]}
    assert seats[2]["dead"]
    assert seats[2]["cards"] == [None] * 7
    assert seats[2]["result"]["status"] == "dead"
    assert seats[1]["cards"] == HOLE_CARDS[1]
    assert not set(HOLE_CARDS[2]) & _visible_cards(view.snapshot())


def _chase_round(journal: Journal) -> tuple[list[JournalEntry], list[str], set[str], str]:
    round_id = play_round(journal, random.Random(7), game="chase-the-flush", players=2)
    entries = list(journal.entries())
    dealt = _dealt(entries, round_id)
    community = dealt[COMMUNITY_POSITION]
    hole = {card for position, cards in dealt.items() if position != COMMUNITY_POSITION for card in cards}
    assert len(community) == 4
    return entries, community, hole, round_id


def test_community_cards_show_as_the_streets_turn_in_chase_the_flush(journal: Journal) -> None:
    entries, community, hole, round_id = _chase_round(journal)
    seen_phases: list[str] = []
    view = TableView("T1")
    for entry, view, shown in _watch(entries):
        round_ = view.snapshot()["round"]
        if round_ is None or entry.round_id != round_id:
            continue
        phase = round_["phase"]
        if phase in ("preflop", "flop", "river"):
            seen_phases.append(phase)
            assert not hole & _visible_cards(shown), phase  # no hole card before the reveal
        if phase == "preflop":
            assert round_["community"] == []
            assert _visible_cards(shown) == set()
        elif phase == "flop":  # the flop turned face up, nothing else
            assert round_["community"] == community[:2]
            assert _visible_cards(shown) == set(community[:2])
        elif phase == "river":
            assert set(community[2:]) <= _visible_cards(shown)
    assert {"preflop", "flop", "river"} <= set(seen_phases)
    assert hole <= _visible_cards(view.snapshot())


def test_all_four_community_cards_show_at_the_river(journal: Journal) -> None:
    entries, community, _hole, round_id = _chase_round(journal)
    view = TableView("T1")
    for entry in entries:
        view.apply(entry)
        round_ = view.snapshot()["round"]
        if entry.round_id == round_id and round_ is not None and round_["phase"] == "river":
            assert round_["community"] == community
            return
    raise AssertionError("the round never reached the river")


def test_a_refused_raise_does_not_tell_the_hand_before_the_reveal(journal: Journal) -> None:
    """An over-limit raise: the public reason names the seat and the amount; the limit, which speaks
    of the hand, is private until the reveal."""
    # Seat 2 holds a 3-card flush: a raise of exactly the ante. Three antes is over its limit.
    ScriptedRound(journal, first_raise={2: 3000}).play_all()
    entries = list(journal.entries())
    refused = next(e for e in entries if e.kind == "decision_refused")
    view = TableView("T1")
    for entry in entries:
        view.apply(entry)
        if entry.kind == "state_changed" and entry.payload["to"] == "reveal":
            assert not view.public_entry(refused)["hidden"]  # the reveal: the limit may be told
            break
        if entry.seq >= refused.seq:
            shown = view.public_entry(refused)
            assert shown["hidden"], entry.kind
    assert "flush" not in json.dumps(shown)
    assert shown["payload"]["reason"]["message"] == "seat 2: raise of 30.00 refused (over the limit)"
    assert refused.private is not None
    assert "3-card flush" in refused.private["limit_detail"]


def test_diagram_is_drawn_from_the_engines_definition_with_the_phase_lit() -> None:
    assert state_path("high-card-flush")[:3] == ("idle", "betting", "bets_locked")
    assert "dealing_flop" in state_path("chase_the_flush")
    diagram = state_diagram("high-card-flush", "decisions")
    assert [box.state for box in diagram.boxes if box.lit] == ["decisions"]
    assert diagram.known
    held = state_diagram("top-flush", "held")
    assert [box.state for box in held.boxes if box.lit] == ["held"]
    assert not state_diagram("high-card-flush", "warming_up").known


def test_alerts_follow_raise_acknowledge_clear(journal: Journal) -> None:
    fault_id = raise_red_light(journal)  # the shoe's red light between rounds, through the engine
    view = TableView("T1")

    def catch_up() -> None:
        for entry in journal.entries(since_seq=view.state.last_seq):
            view.apply(entry)

    catch_up()
    assert view.state.alerts[fault_id].state == "active"
    assert view.state.alerts[fault_id].detail == "a red light"  # the public message
    assert view.snapshot()["held"]
    journal.append(
        "fault_acknowledged", {"fault_id": fault_id, "by": "sam"}, round_id=None, source="operator:sam"
    )
    catch_up()
    assert view.state.alerts[fault_id].state == "acknowledged"
    JournalTableActions(journal).clear_fault(fault_id, "sam", "lamp checked")
    catch_up()
    assert view.state.alerts[fault_id].state == "cleared"
    assert view.snapshot()["active_alerts"] == 0
    assert not view.snapshot()["held"]
