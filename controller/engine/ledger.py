"""The deal's ledger: what the shoe reported for the deal last asked of it, each place bound once
(docs/engine.md "Who checks the deal"). The deal part (controller/engine/deal.py) acts on its verdicts."""

from __future__ import annotations

from collections.abc import Mapping

from drivers.events import CardDealt, HandComplete, ShufflerFault, ShufflerFaultKind


class DealLedger:
    """What the shoe reported for the deal last asked of it: which place (position, index) got which
    card, which cards were seen, which positions said they were complete. A pure function of the reports
    (no engine, no round), so it is tested on its own (tests/engine/test_deal_ledger.py).

    For each report it gives the verdict the deal part acts on: the report stands (``None``), or the
    shoe fault it amounts to (a ``ShufflerFault`` with the card, the index and, for a card seen before,
    where it was first), and the report is withheld from the round. A place is bound once: a card for a
    position not in the deal or beyond its count, a gap in a position's indexes, an index reported again
    (the same card: read twice; another card: the shoe changed its mind), a card already dealt in this
    deal, a HandComplete twice or with a count other than the one asked for. It starts afresh with every
    Deal, Shuffle and reset sent to the shoe (a new deal; the shoe's memory of the old one is gone)."""

    def __init__(self) -> None:
        self.start({})

    def start(self, requested: Mapping[int, int]) -> None:
        self._requested: dict[int, int] = dict(requested)  # position -> cards asked for
        self._hands: dict[int, list[int | None]] = {}  # position -> cards by index (None: refused)
        self._cards_seen: dict[int, tuple[int, int]] = {}  # card -> (position, index) in this deal
        self._hands_completed: set[int] = set()
        self._refused: dict[tuple[int, int], int] = {}  # (position, index) -> a card refused there

    def card(self, event: CardDealt) -> ShufflerFault | None:
        """The card stands (``None``: it is bound to its place), or the fault it is."""
        position, index, card = event.position, event.index, event.card
        hand = self._hands.get(position)
        if hand is None:  # (setdefault would make a list for every card)
            hand = self._hands[position] = []
        if 0 <= index < len(hand):  # (a negative index is no place: the protocol never sends one)
            repeated = hand[index] == card or self._refused.get((position, index)) == card
            detail = (
                f"index {index} reported twice"
                if repeated
                else f"index {index} reported as card {hand[index]} and then as card {card}"
            )
            return _shoe_fault(event, "misread", detail, card=card, index=index)
        requested = self._requested.get(position)
        if requested is None or index >= requested:
            detail = f"extra card {card} at index {index} ({requested or 0} requested)"
            return _shoe_fault(event, "card_count", detail, card=card, index=index)
        if index != len(hand):
            return _shoe_fault(event, "card_count", f"index {index} after {len(hand)} cards", index=index)
        first = self._cards_seen.get(card)
        if first is not None:
            hand.append(None)  # the place is taken (by a card refused): the next index follows on
            self._refused[(position, index)] = card
            detail = f"card {card} dealt twice (first at position {first[0]} index {first[1]})"
            return _shoe_fault(event, "misread", detail, card=card, index=index, first=first)
        hand.append(card)
        self._cards_seen[card] = (position, index)
        return None

    def hand_complete(self, event: HandComplete) -> tuple[bool, ShufflerFault | None]:
        """Whether the report stands (a position completes once), and the count fault it carries (the
        shoe's count differs from the one asked for) — judged after the report itself."""
        position = event.position
        if position in self._hands_completed:
            return False, _shoe_fault(
                event, "card_count", f"hand_complete reported twice ({event.card_count} cards)"
            )
        self._hands_completed.add(position)
        requested = self._requested.get(position)
        if requested is not None and event.card_count != requested:
            return True, _shoe_fault(
                event, "card_count", f"dealt {event.card_count} cards, {requested} requested"
            )
        return True, None


def _shoe_fault(
    report: CardDealt | HandComplete,
    fault: ShufflerFaultKind,
    detail: str,
    *,
    card: int | None = None,
    index: int | None = None,
    first: tuple[int, int] | None = None,
) -> ShufflerFault:
    """The shoe fault a report amounts to, at the report's device and position: ``card`` and ``index``
    the place it is about, ``first`` (position, index) where a card seen twice was dealt first."""
    return ShufflerFault(
        device=report.device,
        fault=fault,
        position=report.position,
        detail=detail,
        card=card,
        index=index,
        first_position=None if first is None else first[0],
        first_index=None if first is None else first[1],
    )
