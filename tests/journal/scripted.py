"""Rounds journaled the way the round machine journals them (CONTRACTS.md kinds and payloads), so the
journal's readers (recall, recovery, meters) are tested on realistic journals without the daemon.

Cards come from a seeded shuffle and are settled by the real rules engine."""

from __future__ import annotations

import random
from typing import Any, Literal

from controller.journal.store import Journal, PendingEntry
from controller.rules.cards import card_text
from controller.rules.games import GAMES
from controller.rules.settle import settle_round_json

Outcome = Literal["settled", "dead", "open_after_lock", "open_before_lock", "open_mid_deal"]

_BONUS = {
    "high-card-flush": ("flush", "straight_flush"),
    "top-flush": ("top_flush_bonus", "straight_flush_jackpot"),
    "chase-the-flush": ("same_suit_bonus",),
}
_DECISION = {"high-card-flush": "raise", "top-flush": "play", "chase-the-flush": "all_in"}


def _wagers(game: str, rng: random.Random) -> dict[str, int]:
    ante = rng.choice((500, 1000, 2500))
    wagers = {"ante": ante}
    if game == "chase-the-flush":
        wagers["xtra_bonus"] = ante
    for bonus in _BONUS[game]:
        if rng.random() < 0.5:
            wagers[bonus] = rng.choice((100, 500))
    return wagers


def play_round(
    journal: Journal,
    rng: random.Random,
    *,
    game: str = "high-card-flush",
    banking_mode: str = "house",
    outcome: Outcome = "settled",
    players: int | None = None,
    batch: bool = True,
) -> str:
    """Journal one round of ``game``; returns its id. ``outcome`` says how far it gets."""
    spec = GAMES[game]
    round_id = journal.next_round_id()
    seat_count = players if players is not None else rng.randint(1, spec.max_players)
    table_seats = list(
        range(1, spec.max_players + 2 if banking_mode == "designated-player" else spec.max_players + 1)
    )
    banking: dict[str, Any] = {"mode": "house"}
    if banking_mode == "designated-player":
        dp_seat = rng.choice(table_seats)
        table_seats.remove(dp_seat)
        banking = {"mode": "designated-player", "seat": dp_seat, "funds": 1_000_000}
    seats = sorted(rng.sample(table_seats, seat_count))
    deck = list(range(52))
    rng.shuffle(deck)

    entries: list[PendingEntry] = []

    def add(kind: str, payload: dict[str, Any], source: str = "engine") -> None:
        entries.append(PendingEntry(kind, payload, round_id, source))

    def flush() -> None:
        if batch:
            journal.append_many(entries)
        else:
            for entry in entries:
                journal.append(entry.kind, entry.payload, round_id=entry.round_id, source=entry.source)
        entries.clear()

    add(
        "round_started",
        {
            "round_id": round_id,
            "game": game,
            "banking": banking,
            "button_seat": banking.get("seat"),
            "seats": seats,
        },
    )
    add("state_changed", {"machine": "round", "from": "idle", "to": "betting", "trigger": "start"})
    wagers = {seat: _wagers(game, rng) for seat in seats}
    for seat in seats:
        for spot, (name, cents) in enumerate(wagers[seat].items()):
            add(
                "bet_changed",
                {
                    "seat": seat,
                    "wager": name,
                    "spot": spot,
                    "amount_cents": cents,
                    "chip_count": 1,
                    "locked": False,
                },
                "sensors",
            )
    if outcome == "open_before_lock":
        flush()
        return round_id
    add("bets_locked", {"wagers": {str(seat): wagers[seat] for seat in seats}})
    if outcome == "open_after_lock":
        flush()
        return round_id

    cards: dict[int, list[str]] = {}
    positions = [0, *seats]
    if spec.community_cards:
        positions.append(15)
    for position in positions:
        count = spec.community_cards if position == 15 else spec.hole_cards
        cards[position] = [card_text(deck.pop()) for _ in range(count)]
        for index, card in enumerate(cards[position]):
            add("card_dealt", {"position": position, "index": index, "card": card}, "shuffler")
            if outcome == "open_mid_deal" and position == positions[len(positions) // 2] and index == 2:
                flush()
                return round_id
        add("hand_complete", {"position": position, "card_count": count}, "shuffler")

    round_seats = []
    for seat in seats:
        seat_wagers = dict(wagers[seat])
        folded = rng.random() < 0.25
        street = None
        if not folded:
            seat_wagers[_DECISION[game]] = seat_wagers["ante"]  # 1x: always within the limit
            if game == "chase-the-flush":
                street = "river"
        add(
            "decision",
            {
                "seat": seat,
                "action": "fold"
                if folded
                else {"raise": "raise", "play": "play", "all_in": "all_in"}[_DECISION[game]],
                "amount_cents": 0 if folded else seat_wagers["ante"],
                "street": street,
            },
            "display" if folded else "sensors",
        )
        round_seat: dict[str, Any] = {
            "seat": seat,
            "cards": cards[seat],
            "wagers": seat_wagers,
            "folded": folded,
        }
        if street is not None:
            round_seat["street"] = street
        round_seats.append(round_seat)
    round_json: dict[str, Any] = {"game": game, "banking": banking, "dealer": cards[0], "seats": round_seats}
    if spec.community_cards:
        round_json["community"] = cards[15]
    if outcome == "dead":
        round_json["dead"] = True
        fault_id = f"F{round_id}-red"
        add(
            "fault_raised",
            {
                "fault_id": fault_id,
                "kind": "red_light",
                "severity": "latching",
                "detail": "red light",
                "device": "shuffler",
            },
        )
        add(
            "round_dead",
            {
                "round": round_json,
                "settlement": settle_round_json(round_json),
                "reason": "red light during the deal",
            },
        )
    else:
        add("round_settled", {"round": round_json, "settlement": settle_round_json(round_json)})
    add("state_changed", {"machine": "round", "from": "settling", "to": "complete", "trigger": "settled"})
    flush()
    return round_id
