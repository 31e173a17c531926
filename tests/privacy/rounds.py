"""What the journal says about each round's cards: which were dealt, and from which journal seq each
may be shown (never, for a dead hand's, a dead round's or a voided round's cards).

Read through the trusted API only, ``Journal.open_existing(path).entries()``, using ``entry.payload``
of ``card_dealt`` entries (card, index, position): for a trusted reader the payload is the whole entry,
public and private parts together.

When a card becomes public (its ``public_seq``):

- a round's cards at its reveal: the round's ``state_changed`` into ``reveal`` (or its ``round_settled``
  entry, if the journal has no such state change), unless the round is closed ``round_dead``; a
  round voided *after* its reveal keeps them shown (they were turned in front of everyone), a round
  voided before it never shows them (its end is no reveal: issue 22);
- Chase the Flush's community cards (position 15) are dealt face up: the flop's two at the round's
  ``state_changed`` into ``flop``, the turn and river at the one into ``river`` (the table sees them
  turned; docs/panel.md, "Hidden cards"), even if the round dies later;
- never: the cards of a seat with a ``dead_hand`` entry, and every hole card of a round closed
  ``round_dead``, or voided before its reveal, or not revealed when the run ended.

A round's cards are also the cards its shoe *reported* without their being dealt: a fault's private
part (``ReasonDetail``: "index 6 reported as card 13 and then as card 5", its ``card``) names the card
the shoe said, which is the round's information, shown with the fault's private words (the round's
reveal, unless the round died or the fault's seat is dead). Without them a misread's card shown after
its own round's reveal was blamed on a later round that dealt the same card hidden (the simulated shoe
with one ``deck_seed`` deals the same order every round, so such pairs are common).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from controller.engine.machine import FLOP, REVEAL, RIVER
from controller.journal import entries as e
from controller.journal.store import Journal
from controller.rules.cards import DECK_SIZE, card_text, parse_card
from drivers.events import COMMUNITY_POSITION

# "card 5" in free text (not "at card 4": the shoe's count into its deal): a fault's words here, and
# every text a viewer is shown in matching.py (NUMBER_TEXT_RES), one pattern for both.
CARD_IN_TEXT_RE = re.compile(r"(?<![A-Za-z0-9_])(?<!at )card\s+(\d{1,2})(?![\d.])")

# Community cards turned face up by the round's state (Chase the Flush): state -> cards shown.
COMMUNITY_TURNED = {FLOP: 2, RIVER: 4}


@dataclass(frozen=True, slots=True)
class DealtCard:
    round_id: str
    code: str  # "Qd"
    number: int  # 0..51 (controller/rules/cards.py; the firmware protocol's byte)
    position: int
    index: int
    dealt_seq: int
    public_seq: int | None  # None: never shown

    def public_at(self, watermark: int) -> bool:
        return self.public_seq is not None and self.public_seq <= watermark

    @property
    def name(self) -> str:
        return f"{self.code} (card {self.number}, position {self.position} index {self.index})"


@dataclass(slots=True)
class RoundCards:
    round_id: str
    started_seq: int
    cards: list[DealtCard] = field(default_factory=list)
    closing: str | None = None  # round_settled | round_dead | round_voided | None (left open)
    reveal_seq: int | None = None  # the entry that revealed it (state_changed into reveal, or round_settled)
    reveal_utc: str | None = None
    dead_positions: frozenset[int] = frozenset()

    def hidden_at(self, watermark: int) -> list[DealtCard]:
        """The round's cards that may not be shown yet at ``watermark`` (the journal's last seq)."""
        return [card for card in self.cards if not card.public_at(watermark)]


@dataclass(frozen=True, slots=True)
class TableCards:
    """Every round of a journal, by id, in the order they started."""

    rounds: Mapping[str, RoundCards]
    last_seq: int

    def started_by(self, watermark: int) -> list[RoundCards]:
        return [round_ for round_ in self.rounds.values() if round_.started_seq <= watermark]


def read_table_cards(journal_path: Path) -> TableCards:
    with Journal.open_existing(journal_path) as journal:
        return table_cards(journal.entries())


def table_cards(entries: Iterable[Any]) -> TableCards:
    """Fold journal entries (seq, time_utc, round_id, kind, payload) into each round's cards."""
    rounds: dict[str, RoundCards] = {}
    raw: dict[str, list[tuple[int, Mapping[str, Any]]]] = {}
    dead: dict[str, set[int]] = {}
    turned: dict[str, list[tuple[int, int]]] = {}  # round -> (seq, community cards shown from then)
    reported: dict[str, list[tuple[int, e.ReasonDetail]]] = {}  # round -> faults' private parts
    last_seq = 0
    for entry in entries:
        last_seq = entry.seq
        round_id = entry.round_id
        if round_id is None:
            continue
        payload = entry.payload
        if entry.kind == "round_started":
            rounds[round_id] = RoundCards(round_id, entry.seq)
        round_ = rounds.get(round_id)
        if round_ is None:
            continue
        part = _private_detail(entry)
        if part is not None:
            reported.setdefault(round_id, []).append((entry.seq, part))
        if entry.kind == "card_dealt":
            raw.setdefault(round_id, []).append((entry.seq, payload))
        elif entry.kind == "dead_hand" and payload.get("seat") is not None:
            dead.setdefault(round_id, set()).add(int(payload["seat"]))
        elif entry.kind == "state_changed" and payload.get("machine", "round") == "round":
            to = str(payload.get("to"))
            shown = COMMUNITY_TURNED.get(to)
            if shown is not None:
                turned.setdefault(round_id, []).append((entry.seq, shown))
            if to == REVEAL and round_.reveal_seq is None and round_.closing is None:
                round_.reveal_seq = entry.seq
                round_.reveal_utc = entry.time_utc
        elif entry.kind in ("round_settled", "round_dead", "round_voided"):
            round_.closing = entry.kind
            if entry.kind == "round_settled" and round_.reveal_seq is None:
                round_.reveal_seq = entry.seq
                round_.reveal_utc = entry.time_utc
    for round_id, round_ in rounds.items():
        round_.dead_positions = frozenset(dead.get(round_id, ()))
        for seq, payload in raw.get(round_id, []):
            position, index = int(payload["position"]), int(payload["index"])
            code = str(payload["card"])
            public_seq: int | None = None
            if position not in round_.dead_positions and round_.closing != "round_dead":
                public_seq = round_.reveal_seq
            if position == COMMUNITY_POSITION:
                for turned_seq, shown in turned.get(round_id, []):
                    if index < shown and (public_seq is None or turned_seq < public_seq):
                        public_seq = turned_seq
                        break
            round_.cards.append(DealtCard(round_id, code, parse_card(code), position, index, seq, public_seq))
        for seq, part in reported.get(round_id, []):
            public_seq = round_.reveal_seq
            if round_.closing == "round_dead" or part.positions() & round_.dead_positions:
                public_seq = None
            position = part.position if part.position is not None else -1
            index = part.index if part.index is not None else -1
            for number in _reported_cards(part):
                round_.cards.append(
                    DealtCard(round_id, card_text(number), number, position, index, seq, public_seq)
                )
    return TableCards(rounds, last_seq)


def _private_detail(entry: Any) -> e.ReasonDetail | None:
    typed = getattr(entry, "entry", None)
    if typed is None:
        return None
    part = typed.private_part()
    return part if isinstance(part, e.ReasonDetail) else None


def _reported_cards(part: e.ReasonDetail) -> set[int]:
    numbers = {part.card} if part.card is not None else set()
    for words in (part.message, part.device_detail):
        for match in CARD_IN_TEXT_RE.finditer(words or ""):
            numbers.add(int(match.group(1)))
    return {number for number in numbers if 0 <= number < DECK_SIZE}
