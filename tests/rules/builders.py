"""Small builders for rounds in their JSON form, so each test reads like the table it describes."""

from __future__ import annotations

from typing import Any

from controller.rules.settle import settle_round_json

Json = dict[str, Any]

# The worked example's Progressive wager (docs/settle.md): its settings as [progressive] gives them, and
# a round's input with the meter and the reserve it starts from. Copy before changing (``dict(...)``).
PROGRESSIVE_SETTINGS: Json = {
    "unit_cents": 100,
    "base_cents": 1_000_000,
    "reset_cents": 1_000_000,
    "increment_percent": 15,
    "hidden_percent": 2,
    "limit_cents": 5_000_000,
}
PROGRESSIVE_ROUND: Json = {**PROGRESSIVE_SETTINGS, "meter_cents": 1_234_567, "reserve_cents": 200_000}


def seat(number: int, cards: str, *, folded: bool = False, street: str | None = None, **wagers: int) -> Json:
    """A seat: ``cards`` space-separated, wagers as keywords (``ante=500, raise_=500``)."""
    out: Json = {
        "seat": number,
        "cards": cards.split(),
        "wagers": {name.rstrip("_"): amount for name, amount in wagers.items()},
    }
    if folded:
        out["folded"] = True
    if street is not None:
        out["street"] = street
    return out


def round_json(game: str, dealer: str, *seats: Json, community: str | None = None, **extra: Any) -> Json:
    out: Json = {"game": game, "dealer": dealer.split(), "seats": list(seats)}
    if community is not None:
        out["community"] = community.split()
    out.update(extra)
    return out


def dp(seat_number: int, funds: int, **extra: Any) -> Json:
    return {"mode": "designated-player", "seat": seat_number, "funds": funds, **extra}


def settled(obj: Json) -> Json:
    return settle_round_json(obj)


def wagers_of(result: Json, seat_number: int) -> dict[str, tuple[str, int]]:
    """``{wager: (result, net)}`` of one seat, the shape most assertions want."""
    for entry in result["seats"]:
        if entry["seat"] == seat_number:
            return {name: (wager["result"], wager["net"]) for name, wager in entry["wagers"].items()}
    raise KeyError(seat_number)


def seat_of(result: Json, seat_number: int) -> Json:
    for entry in result["seats"]:
        if entry["seat"] == seat_number:
            return dict(entry)
    raise KeyError(seat_number)


def conserves(result: Json) -> bool:
    total: int = sum(entry["net"] for entry in result["seats"]) + result["banker_net"] + result["rake"]
    return total == 0
