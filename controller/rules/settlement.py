"""A settlement as controller/rules/settle.py returns it: every seat's and wager's result, the rake, the
designated player's and the bonus cap's reports, and its JSON form (:meth:`Settlement.to_json`, the
output contract in docs/settle.md), and which seats a designated player covers (``Coverage``, what
settle.py's ``cover_seats`` returns). Pure data; settle.py names these again in its public API."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from controller.names import MAX_SEAT as MAX_SEAT  # noqa: PLC0414  (re-exported)
from controller.rules.games import (
    DESIGNATED_PLAYER,
    PROGRESSIVE,
)
from controller.rules.hands import Hand
from table_names.records import FrozenRecord

if TYPE_CHECKING:
    from controller.rules.progressive import ProgressiveResult


# Wager results.
WIN = "win"
LOSE = "lose"
PUSH = "push"
RETURNED = "returned"  # a dead hand's or dead seat's wager: given back, whatever the cards

# Seat statuses.
LIVE = "live"
FOLDED = "folded"
DEAD = "dead"

# Why a seat is dead (the seat's "reason" in the settlement).
WRONG_CARD_COUNT = "wrong card count"
NOT_COVERED = "not covered by the designated player's funds"
ROUND_DEAD = "round dead"


# --- the settlement -------------------------------------------------------------------------------
def _named_without_unit(report: FrozenRecord) -> dict[str, object]:
    """A report's fields in order, each amount named without its ``_cents``: the settlement's JSON is in
    cents throughout and names an amount by what it is ("funds", "paid": docs/settle.md "Output")."""
    return {name.removesuffix("_cents"): value for name, value in report.as_dict().items()}


class WagerResult(FrozenRecord):
    """One wager's outcome. ``net`` is the player's profit. ``odds`` is the paytable line a bonus won
    on; ``shortfall_cents`` what a designated player owed but could not pay; ``capped_from_cents`` the
    win before the aggregate bonus cap reduced it."""

    wager: str
    stake_cents: int
    result: str
    net_cents: int
    odds: int | None
    shortfall_cents: int
    capped_from_cents: int | None
    # The Progressive wager: the paytable line reached and the award paid *for* the wager (the stake is
    # collected, so ``net`` is the award less the stake).
    line: int | None
    award_cents: int | None

    __slots__ = tuple(__annotations__)  # the fields declared above, in order

    def __init__(  # noqa: PLR0913, PLR0917 - a wager's every result
        self,
        wager: str,
        stake_cents: int,
        result: str,
        net_cents: int,
        odds: int | None = None,
        shortfall_cents: int = 0,
        capped_from_cents: int | None = None,
        line: int | None = None,
        award_cents: int | None = None,
    ) -> None:
        object.__setattr__(self, "wager", wager)
        object.__setattr__(self, "stake_cents", stake_cents)
        object.__setattr__(self, "result", result)
        object.__setattr__(self, "net_cents", net_cents)
        object.__setattr__(self, "odds", odds)
        object.__setattr__(self, "shortfall_cents", shortfall_cents)
        object.__setattr__(self, "capped_from_cents", capped_from_cents)
        object.__setattr__(self, "line", line)
        object.__setattr__(self, "award_cents", award_cents)

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {"stake": self.stake_cents, "result": self.result, "net": self.net_cents}
        if self.odds is not None:
            out["odds"] = self.odds
        if self.line is not None:
            out["line"] = self.line
        if self.award_cents is not None:
            out["award"] = self.award_cents
        if self.capped_from_cents is not None:
            out["capped_from"] = self.capped_from_cents
        if self.shortfall_cents:
            out["shortfall"] = self.shortfall_cents
        return out


class SeatResult(FrozenRecord):
    """One seat's settlement. ``hand`` is None for a dead seat: a dead hand's cards are never shown."""

    __slots__ = ("dead_reason", "hand", "rake_cents", "seat", "status", "wagers")
    seat: int
    status: str
    hand: Hand | None
    wagers: tuple[WagerResult, ...]
    rake_cents: int
    dead_reason: str | None

    def __init__(  # noqa: PLR0917 - a seat's every result
        self,
        seat: int,
        status: str,
        hand: Hand | None,
        wagers: tuple[WagerResult, ...],
        rake_cents: int = 0,
        dead_reason: str | None = None,
    ) -> None:
        object.__setattr__(self, "seat", seat)
        object.__setattr__(self, "status", status)
        object.__setattr__(self, "hand", hand)
        object.__setattr__(self, "wagers", wagers)
        object.__setattr__(self, "rake_cents", rake_cents)
        object.__setattr__(self, "dead_reason", dead_reason)

    @property
    def net_cents(self) -> int:
        """The player's profit on the round: every wager's net, less the rake the seat paid."""
        return sum(wager.net_cents for wager in self.wagers) - self.rake_cents

    @classmethod
    def returned(cls, seat: int, stakes: Iterable[tuple[str, int]], reason: str) -> SeatResult:
        """A dead seat, for ``reason``: each wager of ``stakes`` (name, cents) returned, no hand shown."""
        wagers = tuple(WagerResult(name, cents, RETURNED, 0) for name, cents in stakes)
        return cls(seat=seat, status=DEAD, hand=None, wagers=wagers, dead_reason=reason)

    def wager(self, name: str) -> WagerResult | None:
        for wager in self.wagers:
            if wager.wager == name:
                return wager
        return None

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {"seat": self.seat, "status": self.status}
        if self.dead_reason is not None:
            out["reason"] = self.dead_reason
        out["hand"] = None if self.hand is None else self.hand.to_json()
        out["wagers"] = {wager.wager: wager.to_json() for wager in self.wagers}
        out["rake"] = self.rake_cents
        out["net"] = self.net_cents
        return out


class RakeLine(FrozenRecord):
    """One rake charge: ``seat`` is the payer's seat; ``designated_player`` says it is the DP."""

    __slots__ = ("amount_cents", "designated_player", "seat")
    seat: int
    amount_cents: int
    designated_player: bool

    def __init__(self, seat: int, amount_cents: int, designated_player: bool = False) -> None:
        object.__setattr__(self, "seat", seat)
        object.__setattr__(self, "amount_cents", amount_cents)
        object.__setattr__(self, "designated_player", designated_player)

    def to_json(self) -> dict[str, object]:
        payer = "designated player" if self.designated_player else "player"
        return {"seat": self.seat, "payer": payer, "amount": self.amount_cents}


class DesignatedPlayerReport(FrozenRecord):
    """How the DP's funds went: seats taken into action in ``action_order``, what was committed at bet
    lock, collected from losing wagers, paid to winners, and the shortfall owed but not paid."""

    seat: int
    funds_cents: int
    action_order: tuple[int, ...]
    committed_cents: int
    collected_cents: int
    paid_cents: int
    shortfall_cents: int

    __slots__ = tuple(__annotations__)  # the fields declared above, in order

    def __init__(  # noqa: PLR0913, PLR0917 - the report's every part
        self,
        seat: int,
        funds_cents: int,
        action_order: tuple[int, ...],
        committed_cents: int,
        collected_cents: int,
        paid_cents: int,
        shortfall_cents: int,
    ) -> None:
        object.__setattr__(self, "seat", seat)
        object.__setattr__(self, "funds_cents", funds_cents)
        object.__setattr__(self, "action_order", action_order)
        object.__setattr__(self, "committed_cents", committed_cents)
        object.__setattr__(self, "collected_cents", collected_cents)
        object.__setattr__(self, "paid_cents", paid_cents)
        object.__setattr__(self, "shortfall_cents", shortfall_cents)

    def to_json(self) -> dict[str, object]:
        return {**_named_without_unit(self), "action_order": list(self.action_order)}


class BonusCapReport(FrozenRecord):
    """The aggregate bonus cap: the round's bonus wins before it, what was paid after the proportional
    reduction, and the rounding (cap minus paid) that the rounding down left unpaid."""

    __slots__ = ("applied", "bonus_wins_cents", "cap_cents", "paid_cents", "rounding_cents")
    cap_cents: int
    bonus_wins_cents: int
    applied: bool
    paid_cents: int
    rounding_cents: int

    def __init__(
        self, cap_cents: int, bonus_wins_cents: int, applied: bool, paid_cents: int, rounding_cents: int
    ) -> None:
        object.__setattr__(self, "cap_cents", cap_cents)
        object.__setattr__(self, "bonus_wins_cents", bonus_wins_cents)
        object.__setattr__(self, "applied", applied)
        object.__setattr__(self, "paid_cents", paid_cents)
        object.__setattr__(self, "rounding_cents", rounding_cents)

    def to_json(self) -> dict[str, object]:
        return _named_without_unit(self)


class Settlement(FrozenRecord):
    """The result of :func:`settle`. ``dealer_hand`` is None when the round is dead."""

    game: str
    banking_mode: str
    dead: bool
    dealer_hand: Hand | None
    dealer_qualifies: bool | None
    seats: tuple[SeatResult, ...]
    rake_lines: tuple[RakeLine, ...]
    designated_player: DesignatedPlayerReport | None
    bonus_cap: BonusCapReport | None
    progressive: ProgressiveResult | None

    __slots__ = tuple(__annotations__)  # the fields declared above, in order

    def __init__(  # noqa: PLR0913, PLR0917 - a settlement's every part
        self,
        game: str,
        banking_mode: str,
        dead: bool,
        dealer_hand: Hand | None,
        dealer_qualifies: bool | None,
        seats: tuple[SeatResult, ...],
        rake_lines: tuple[RakeLine, ...] = (),
        designated_player: DesignatedPlayerReport | None = None,
        bonus_cap: BonusCapReport | None = None,
        progressive: ProgressiveResult | None = None,
    ) -> None:
        object.__setattr__(self, "game", game)
        object.__setattr__(self, "banking_mode", banking_mode)
        object.__setattr__(self, "dead", dead)
        object.__setattr__(self, "dealer_hand", dealer_hand)
        object.__setattr__(self, "dealer_qualifies", dealer_qualifies)
        object.__setattr__(self, "seats", seats)
        object.__setattr__(self, "rake_lines", rake_lines)
        object.__setattr__(self, "designated_player", designated_player)
        object.__setattr__(self, "bonus_cap", bonus_cap)
        object.__setattr__(self, "progressive", progressive)

    @classmethod
    def of_dead_round(
        cls,
        game: str,
        banking_mode: str,
        seats: tuple[SeatResult, ...],
        progressive: ProgressiveResult | None = None,
    ) -> Settlement:
        """A round dead as a whole: no dealer hand, no hand judged, every seat as given (dead)."""
        return cls(
            game=game,
            banking_mode=banking_mode,
            dead=True,
            dealer_hand=None,
            dealer_qualifies=None,
            seats=seats,
            progressive=progressive,
        )

    @property
    def rake_cents(self) -> int:
        return sum(line.amount_cents for line in self.rake_lines)

    @property
    def banker_rake_cents(self) -> int:
        return sum(line.amount_cents for line in self.rake_lines if line.designated_player)

    @property
    def banker_net_cents(self) -> int:
        """The banker's profit: what the players lost less what they won, less the DP's own rake. The
        Progressive wager is not the banker's: the house's progressive banks it (``progressive.net``)."""
        return (
            -sum(
                wager.net_cents for seat in self.seats for wager in seat.wagers if wager.wager != PROGRESSIVE
            )
            - self.banker_rake_cents
        )

    @property
    def progressive_net_cents(self) -> int:
        """The progressive's take from the round: its wagers collected less its awards (0 without one)."""
        return 0 if self.progressive is None else self.progressive.net_cents

    def seat(self, number: int) -> SeatResult:
        for seat in self.seats:
            if seat.seat == number:
                return seat
        raise KeyError(number)

    def to_json(self) -> dict[str, object]:
        dealer: dict[str, object] | None = None
        if self.dealer_hand is not None:
            dealer = {"qualifies": self.dealer_qualifies, "hand": self.dealer_hand.to_json()}
        out: dict[str, object] = {
            "game": self.game,
            "banking": self.banking_mode,
            "dead": self.dead,
            "dealer": dealer,
            "seats": [seat.to_json() for seat in self.seats],
            "banker_net": self.banker_net_cents,
            "rake": self.rake_cents,
        }
        if self.banking_mode == DESIGNATED_PLAYER:
            out["rake_lines"] = [line.to_json() for line in self.rake_lines]
        if self.designated_player is not None:
            out["designated_player"] = self.designated_player.to_json()
        if self.bonus_cap is not None:
            out["bonus_cap"] = self.bonus_cap.to_json()
        if self.progressive is not None:
            out["progressive"] = self.progressive.to_json()
        return out


class Coverage(FrozenRecord):
    """Which seats a designated player covers at bet lock (see :func:`cover_seats`)."""

    __slots__ = ("action_order", "committed_cents", "covered", "uncovered")
    action_order: tuple[int, ...]
    covered: tuple[int, ...]
    uncovered: tuple[int, ...]
    committed_cents: int

    def __init__(
        self,
        action_order: tuple[int, ...],
        covered: tuple[int, ...],
        uncovered: tuple[int, ...],
        committed_cents: int,
    ) -> None:
        self._set_fields(locals())
