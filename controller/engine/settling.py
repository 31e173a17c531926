"""The round to settle: the round in play as the settle input (journaled with its settlement) and as the
typed ``Round`` that settles (docs/settle.md), both built from the same live round. The round flow asks
it at the reveal, and for a dead or voided round (no cards)."""

from __future__ import annotations

from controller.engine.context import TableContext
from controller.engine.doors import SettlesProgressive
from controller.engine.round import DEAD, FOLDED
from controller.engine.state import DESIGNATED_PLAYER
from controller.rules.cards import cards_text
from controller.rules.paytables import Paytable, parse_paytable
from controller.rules.settle import Banking, Rake, Round, Seat


class RoundToSettle:
    """The settle input and the typed round of the round in play."""

    def __init__(self, ctx: TableContext, *, progressive: SettlesProgressive) -> None:
        """``progressive``: the settle input's ``progressive`` (the meter and the rules' parameters)."""
        self.ctx = ctx
        self._progressive = progressive
        self._paytables_of: tuple[object, dict[str, Paytable]] | None = None

    def settle_input(self, *, dead: bool = False) -> dict[str, object]:
        """The round in the settle input shape (docs/settle.md). A dead (or voided) round carries no
        cards: a dead hand's cards are never shown, and its wagers all go back whatever they are."""
        ctx = self.ctx
        config = ctx.config
        live = ctx.round
        assert live is not None
        obj: dict[str, object] = {"game": config.game, "banking": dict(live.banking)}
        # A designated-player table's paytables are its contest tables (the seed's appendices). When
        # nobody takes the bank and the house banks the round, the bonuses pay on the player's own hand
        # by the house presets (docs/rules.md "House-banked"), as controller.config.settle_base does.
        if config.paytables and live.banking["mode"] == config.banking_mode:
            obj["paytables"] = dict(config.paytables)
        if config.rake is not None and live.banking["mode"] == DESIGNATED_PLAYER:
            obj["rake"] = dict(config.rake)
        obj["dealer"] = [] if dead else cards_text(live.dealer_cards)
        if ctx.spec.community_cards:
            obj["community"] = [] if dead else cards_text(live.community)
        seats: list[dict[str, object]] = []
        for number in sorted(live.seats):
            play = live.seats[number]
            # A dead seat goes in without cards (never shown): settle finds it not covered (coverage is
            # decided on the antes, as at the lock) or dead for its card count, and returns its wagers.
            seat_obj: dict[str, object] = {
                "seat": number,
                "cards": [] if dead or play.status == DEAD else cards_text(play.cards),
                "wagers": dict(play.wagers),
                "folded": play.status == FOLDED,
            }
            if play.street is not None:
                seat_obj["street"] = play.street
            seats.append(seat_obj)
        obj["seats"] = seats
        progressive = self._progressive.settle_object()
        if progressive is not None:
            obj["progressive"] = progressive
        if dead:
            obj["dead"] = True
        return obj

    def settle_round(self, *, dead: bool = False) -> tuple[dict[str, object], Round]:
        """The round to settle: its settle input (journaled with the settlement) and the typed round
        built from the same live round. The typed round is what settles, so the engine never reads back
        the JSON it has just written (issue 28: parse_round was a tenth of the engine core's time).
        ``parse_round(obj) == round_`` for every round the engine plays
        (tests/engine/test_settle_round_typed.py); ``settle`` still checks the round."""
        obj = self.settle_input(dead=dead)
        ctx = self.ctx
        config = ctx.config
        live = ctx.round
        assert live is not None
        banking = live.banking
        if banking["mode"] == DESIGNATED_PLAYER:
            bonus_cap = banking.get("bonus_cap")
            typed_banking = Banking(
                DESIGNATED_PLAYER,
                _int(banking["seat"]),
                _int(banking["funds"]),
                None if bonus_cap is None else _int(bonus_cap),
            )
        else:
            typed_banking = Banking()
        rake: Rake | None = None
        if "rake" in obj and config.rake is not None:
            rake = Rake(str(config.rake["method"]), _int(config.rake["amount"]))
        progressive = None
        progressive_obj = obj.get("progressive")
        if progressive_obj is not None:
            from controller.rules.progressive import parse_progressive_round  # noqa: PLC0415 (a table with a Progressive only, as settle does)

            progressive = parse_progressive_round(progressive_obj)
        seats: list[Seat] = []
        for number in sorted(live.seats):
            play = live.seats[number]
            cards = () if dead or play.status == DEAD else tuple(play.cards)
            seats.append(Seat(number, cards, dict(play.wagers), play.status == FOLDED, play.street))
        round_ = Round(
            game=ctx.spec.name,
            dealer=() if dead else tuple(live.dealer_cards),
            seats=tuple(seats),
            banking=typed_banking,
            community=() if dead or not ctx.spec.community_cards else tuple(live.community),
            paytables=self._paytables() if "paytables" in obj else {},
            rake=rake,
            dead=dead,
            progressive=progressive,
        )
        return obj, round_

    def _paytables(self) -> dict[str, Paytable]:
        """The configuration's paytables, parsed once for each configuration (a manager's change
        replaces the configuration, so its paytables are parsed again at the next settlement)."""
        config = self.ctx.config
        cached = self._paytables_of
        if cached is None or cached[0] is not config:
            parsed = {
                wager: parse_paytable(table, field=f"paytables.{wager}")
                for wager, table in config.paytables.items()
            }
            cached = self._paytables_of = (config, parsed)
        return cached[1]


def _int(value: object) -> int:
    """A number the engine itself put in the round (a seat, cents): an int by construction."""
    assert isinstance(value, int), value
    return value
