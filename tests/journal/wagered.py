"""What an interrupted round holds, read straight from its journal entries: the oracle the recovery
tests check ``round_voided`` against (written independently of controller/journal/recovery.py).

A round holds its locked wagers (``bets_locked``) and every decision that put chips on the decision
spot (``decision`` with action raise / play / all_in and a positive amount). A void returns all of it,
a folded seat's ante and bonuses included: a void means no game was played."""

from __future__ import annotations

from controller.journal import Journal

DECISION_WAGER = {"high-card-flush": "raise", "top-flush": "play", "chase-the-flush": "all_in"}


def wagered_in_round(journal: Journal, round_id: str | None) -> dict[int, dict[str, int]]:
    started = next(journal.entries(round_id=round_id, kinds=["round_started"]), None)
    locked = next(journal.entries(round_id=round_id, kinds=["bets_locked"]), None)
    if started is None or locked is None:
        return {}
    banking = started.payload.get("banking") or {}
    dp_seat = banking.get("seat") if banking.get("mode") == "designated-player" else None
    wagers = {int(seat): dict(w) for seat, w in locked.payload["wagers"].items() if int(seat) != dp_seat}
    decision_wager = DECISION_WAGER[str(started.payload["game"])]
    for decision in journal.entries(round_id=round_id, kinds=["decision"]):
        payload = decision.payload
        if payload["action"] in ("raise", "play", "all_in") and payload["amount_cents"] > 0:
            wagers[int(payload["seat"])][decision_wager] = int(payload["amount_cents"])
    return {seat: w for seat, w in wagers.items() if any(w.values())}


def returned_stakes(settlement: dict[str, object]) -> dict[int, dict[str, int]]:
    """A closing entry's settlement as {seat: {wager: stake}}; asserts every wager was returned."""
    out: dict[int, dict[str, int]] = {}
    for seat in settlement["seats"]:  # type: ignore[attr-defined]
        for name, wager in seat["wagers"].items():
            assert wager["result"] == "returned", (seat["seat"], name, wager)
            assert wager["net"] == 0, (seat["seat"], name, wager)
            out.setdefault(int(seat["seat"]), {})[name] = int(wager["stake"])
    return out
