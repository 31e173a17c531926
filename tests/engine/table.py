"""A scripted table for the engine tests: a stacked deck, a shoe that deals what the engine asks for,
and helpers to place chips and press keys. No mock: the engine is fed the same domain events the
drivers publish (drivers/events.py), and the shoe here plays the shuffler's part of the contract
(one CardDealt per card, indices per Deal command, then HandComplete with the count)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

from controller.engine import Alert, JournalRecord, Output, Refused, TableConfig, TableEngine, actions
from controller.engine.round import LiveRound
from controller.engine.state import RecoveredState
from controller.journal import entries
from controller.rules.cards import DECK_SIZE, parse_card
from controller.rules.games import game_spec
from drivers.events import (
    BetChanged,
    CardDealt,
    Deal,
    DealerKey,
    DealerKeyName,
    DeckVerified,
    HandComplete,
    Shuffle,
)

NOW_S = 1_800_000_000.0  # 2027-01-15 08:00 UTC
# A card in a public text: its code ("As", "Td"), its number ("card 51") or where it was dealt ("index 4").
_CARD_CODE = re.compile(r'"([2-9TJQKA][cdhs])"')  # a card code as a JSON string
_CARD_IN_TEXT = re.compile(r"\b[2-9TJQKA][cdhs]\b|\bcards? (?:number )?\d|\bindex \d")
T = TypeVar("T")

# A shoe misbehaviour: given (position, index, card) return the events to send instead of the card.
Tamper = Callable[[int, int, int], Sequence[object] | None]


def assert_names_no_card(text: str) -> None:
    """A public text (a reason's message, an alert, a refusal): it names no card, in any encoding."""
    assert not _CARD_IN_TEXT.search(text), f"a card in a public text: {text!r}"


def the_round(engine: TableEngine) -> LiveRound:
    """The round the engine holds (asserted: there is one)."""
    live = engine.view().round
    assert live is not None
    return live


def recovered_state(engine: TableEngine) -> RecoveredState:
    """The state a restart would recover from the journal now, read from the engine's parts: what the
    reducer's fold of the journal must match (the engine has no such method; only tests ask)."""
    ctx = engine._ctx
    faults = engine._faults
    bank = engine._bank
    settings = engine._settings
    controller = engine._progressive.controller
    return RecoveredState(
        latched_faults=tuple(faults.latched.values()),
        button_seat=bank.button_seat,
        rounds_started=ctx.rounds_started,
        faults_raised=faults.faults_raised,
        table_closed=not settings.table_open,
        closed_reason=settings.closed_reason,
        min_ante_cents=ctx.config.min_ante_cents,
        max_ante_cents=ctx.config.max_ante_cents,
        max_bonus_cents=dict(ctx.config.max_bonus_cents) or None,
        paytables=dict(ctx.config.paytables),
        settings_config_digest=ctx.config.config_digest,
        progressive=controller.state if controller is not None and controller.state.opened else None,
    )


def stack(*hands: Sequence[str]) -> list[int]:
    """A deck whose top cards are ``hands`` in order, then every other card in deck order."""
    top = [parse_card(card) for hand in hands for card in hand]
    assert len(set(top)) == len(top), "a stacked card twice"
    return top + [card for card in range(DECK_SIZE) if card not in top]


class Table:
    def __init__(
        self,
        config: TableConfig,
        deck: Sequence[int],
        recovered: RecoveredState | None = None,
        *,
        auto_shuffle: bool = True,
        auto_deal: bool = True,
    ) -> None:
        self.engine = TableEngine(config, recovered)
        self.config = config
        self.deck = list(deck)
        self.next_card = 0
        self.now_s = NOW_S
        self.outputs: list[Output] = []
        self.auto_shuffle = auto_shuffle
        self.auto_deal = auto_deal
        self.pending: list[object] = []
        self.tamper: Tamper | None = None
        self.hand_complete_count: dict[int, int] = {}  # override the count the shoe reports
        self.wagers = game_spec(config.game).wagers

    # --- feeding ---------------------------------------------------------------------------------
    def _take(self, outs: list[Output]) -> list[Output]:
        self.outputs.extend(outs)
        for out in outs:
            if isinstance(out, Shuffle) and self.auto_shuffle:
                self.pending.append(DeckVerified("shuffler", 52, (), ()))
            elif isinstance(out, Deal) and self.auto_deal:
                self.pending.extend(self.shoe_events(out))
        while self.pending:
            event = self.pending.pop(0)
            more = self.engine.handle(event, self.now_s)
            self.outputs.extend(more)
            for out in more:
                if isinstance(out, Shuffle) and self.auto_shuffle:
                    self.pending.append(DeckVerified("shuffler", 52, (), ()))
                elif isinstance(out, Deal) and self.auto_deal:
                    self.pending.extend(self.shoe_events(out))
        return outs

    def shoe_events(self, deal: Deal) -> list[object]:
        events: list[object] = []
        for position, count in deal.positions:
            for index in range(count):
                card = self.deck[self.next_card]
                self.next_card += 1
                replaced = self.tamper(position, index, card) if self.tamper else None
                if replaced is None:
                    events.append(CardDealt("shuffler", position, index, card))
                else:
                    events.extend(replaced)
            events.append(HandComplete("shuffler", position, self.hand_complete_count.pop(position, count)))
        return events

    def event(self, event: object) -> list[Output]:
        return self._take(self.engine.handle(event, self.now_s))

    def bet(self, seat: int, wager: str, amount_cents: int, *, locked: bool = False) -> list[Output]:
        spot = self.wagers.index(wager)
        return self.event(BetChanged("sensors", seat, spot, amount_cents, amount_cents // 100, locked))

    def key(self, key: DealerKeyName, seat: int | None = None) -> list[Output]:
        return self.event(DealerKey("display", key, seat))

    def start(self) -> list[Output]:
        return self._take(self.engine.handle(actions.StartRound(), self.now_s))

    def lock(self) -> list[Output]:
        return self._take(self.engine.handle(actions.NoMoreBets(), self.now_s))

    def confirm(self) -> list[Output]:
        return self._take(self.engine.handle(actions.ConfirmDecisions(), self.now_s))

    def tick(self, seconds: float) -> list[Output]:
        self.now_s += seconds
        return self._take(self.engine.handle(actions.Tick(), self.now_s))

    def call(self, method: Callable[..., list[Output]], *args: object, **kwargs: object) -> list[Output]:
        return self._take(method(*args, **kwargs))

    # --- reading ---------------------------------------------------------------------------------
    def journal(self, kind: str | None = None) -> list[JournalRecord]:
        return [o for o in self.outputs if isinstance(o, JournalRecord) and (kind is None or o.kind == kind)]

    def public_journal_cards(self, start: int = 0) -> set[str]:
        """Every card text (``"As"``) the journal's public parts name, from output ``start`` on: what the
        panel, the recall and the floor may show (the private parts are never shown)."""
        texts: set[str] = set()
        for out in self.outputs[start:]:
            if isinstance(out, JournalRecord):
                texts.update(_CARD_CODE.findall(json.dumps(entries.public_dict(out.entry))))
        return texts

    def kinds(self) -> list[str]:
        return [o.kind for o in self.journal()]

    def of_type(self, kind: type[T], outs: Iterable[Output] | None = None) -> list[T]:
        return [o for o in (self.outputs if outs is None else outs) if isinstance(o, kind)]

    def alerts(self) -> list[Alert]:
        return self.of_type(Alert)

    def refusals(self, outs: Iterable[Output] | None = None) -> list[Refused]:
        return self.of_type(Refused, outs)

    def payload(self, kind: str) -> dict[str, Any]:
        entries = self.journal(kind)
        assert len(entries) == 1, f"{len(entries)} {kind} entries"
        return dict(entries[0].payload)
