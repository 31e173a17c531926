"""The three games' wagers, seat limits and decision limits (docs/rules.md), as pure data and functions.

Public names other modules rely on (keep them stable):

- ``GAMES``: ``{game_name: GameSpec}`` for ``"high-card-flush"``, ``"top-flush"``, ``"chase-the-flush"``.
- ``game_spec(name)``: the :class:`GameSpec`, or :class:`UserError` naming the field ``game``.
- ``decision_limits(game, hand, ante_cents, street=None) -> (min_cents, max_cents)``: the amounts a
  seat may put on its decision wager (raise / play / all-in) with the cards it actually holds.
- ``decision_multiplier_limits(game, hand, street=None) -> (min_x, max_x)``: the same in antes.
- ``check_bet_wagers(game, wagers_cents, field="wagers")``: the wagers on a seat are the game's, in
  whole cents, with the ante (Chase the Flush: ante and equal X-tra Bonus) placed; else UserError.
- ``clockwise_from(seat, seats)``: the seats after ``seat`` in the order the button moves.
- ``STREETS`` and ``ALL_IN_MULTIPLIER``: Chase the Flush's betting streets and the all-in each allows.

Wagers are listed in spot order (drivers/events.py: a spot is the wager's index in ``GameSpec.wagers``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from controller.errors import UserError, shown
from controller.names import CHASE_THE_FLUSH as CHASE_THE_FLUSH  # noqa: PLC0414  (re-exported)
from controller.names import DESIGNATED_PLAYER as DESIGNATED_PLAYER  # noqa: PLC0414  (re-exported)
from controller.names import GAME_SHORT_NAMES as GAME_SHORT_NAMES  # noqa: PLC0414  (re-exported)
from controller.names import HIGH_CARD_FLUSH as HIGH_CARD_FLUSH  # noqa: PLC0414  (re-exported)
from controller.names import HOUSE as HOUSE  # noqa: PLC0414  (re-exported)
from controller.names import MAX_SEAT
from controller.names import TOP_FLUSH as TOP_FLUSH  # noqa: PLC0414  (re-exported)
from controller.rules.amounts import check_cents
from controller.rules.catalogue import GAMES as GAMES  # noqa: PLC0414  (re-exported)
from controller.rules.catalogue import GameSpec as GameSpec  # noqa: PLC0414  (re-exported)
from controller.rules.catalogue import progressive_games

if TYPE_CHECKING:  # annotations only: the configuration's checks read the catalogue, never a hand
    from controller.rules.hands import Hand

# Which games offer the Progressive wager (its rules: controller/rules/progressive.py), read off the
# catalogue, so a round without one (settle, the configuration's checks) need not load its rules to ask.
PROGRESSIVE = "progressive"
PROGRESSIVE_GAMES: tuple[str, ...] = progressive_games()
"""docs/rules.md: "Top Flush; High Card Flush where offered ... Chase the Flush has none"."""
NOT_OFFERED = "Chase the Flush has no Progressive wager"

# Chase the Flush: the street on which the single all-in was made, and its size in antes (docs/rules.md:
# "Before the flop: ... all in for 3x the ante. After the flop: ... 2x. After the turn and river: ... 1x").
PREFLOP = "preflop"
FLOP = "flop"
RIVER = "river"
STREETS: tuple[str, ...] = (PREFLOP, FLOP, RIVER)
ALL_IN_MULTIPLIER: dict[str, int] = {PREFLOP: 3, FLOP: 2, RIVER: 1}
STREET_WORDS: dict[str, str] = {PREFLOP: "before the flop", FLOP: "after the flop", RIVER: "after the river"}

DECK_CARDS = 52


for _spec in GAMES.values():  # the deck must serve a full table: checked once, at import
    assert _spec.cards_needed(_spec.max_players) <= DECK_CARDS, _spec.name


def game_spec(name: object) -> GameSpec:
    """The game called ``name``; anything else is refused naming the field ``game``."""
    if isinstance(name, str) and name in GAMES:
        return GAMES[name]
    raise UserError(f"game: unknown game {shown(name)} (known: {', '.join(GAMES)})")


# The short forms staff type on the command line (`flushtable math --game ctf`, controller.names'
# GAME_SHORT_NAMES). Every command that takes a game name reads it through parse_game_name, so all
# accept the same forms and refuse alike.
def parse_game_name(text: str, *, field: str = "--game") -> str:
    """The game's full name for ``text``, its full name or short form, in any case; anything else is
    refused in one format: ``--game: unknown game 'x' (one of: high-card-flush (hcf), ...)``."""
    wanted = text.strip().lower()
    if wanted in GAMES:
        return wanted
    if wanted in GAME_SHORT_NAMES:
        return GAME_SHORT_NAMES[wanted]
    short_of = {full: short for short, full in GAME_SHORT_NAMES.items()}
    known = ", ".join(f"{name} ({short_of[name]})" for name in GAMES)
    raise UserError(f"{field}: unknown game {shown(text)} (one of: {known})")


def decision_multiplier_limits(game: str, hand: Hand, street: str | None = None) -> tuple[int, int]:
    """The decision wager's (minimum, maximum) in antes for a seat holding ``hand``.

    - High Card Flush raise: at least 1x; at most 1x with a flush of 4 or fewer cards, 2x with a
      5-card flush, 3x with a 6- or 7-card flush.
    - Top Flush play: at least 1x; up to 2x with a 5-card flush, up to 4x with a 6- or 7-card flush.
    - Chase the Flush all-in: exactly 3x before the flop, 2x after the flop, 1x after the turn and
      river; ``street`` (``"preflop"``, ``"flop"``, ``"river"``) is required and ``hand`` is unused.
    """
    if game == HIGH_CARD_FLUSH:
        length = hand.flush_length
        return (1, 3 if length >= 6 else 2 if length == 5 else 1)
    if game == TOP_FLUSH:
        length = hand.flush_length
        return (1, 4 if length >= 6 else 2 if length == 5 else 1)
    if game == CHASE_THE_FLUSH:
        if street not in ALL_IN_MULTIPLIER:
            raise UserError(f"street: must be one of {', '.join(STREETS)}, not {shown(street)}")
        multiplier = ALL_IN_MULTIPLIER[street]
        return (multiplier, multiplier)
    raise UserError(f"game: unknown game {shown(game)} (known: {', '.join(GAMES)})")


def decision_limits(game: str, hand: Hand, ante_cents: int, street: str | None = None) -> tuple[int, int]:
    """The (minimum, maximum) cents a seat holding ``hand`` with ``ante_cents`` may put on its decision
    wager: the High Card Flush raise, the Top Flush play, the Chase the Flush all-in (exactly
    3x / 2x / 1x the ante by ``street``). Any amount in between is allowed (Chase: only the one).
    A fold is not a decision wager: it is expressed by not placing one.
    """
    low, high = decision_multiplier_limits(game, hand, street)
    return (low * ante_cents, high * ante_cents)


def largest_decision_multiplier(game: str) -> int:
    """The largest decision wager any hand can make, in antes (what a banker must cover at bet lock)."""
    return {HIGH_CARD_FLUSH: 3, TOP_FLUSH: 4, CHASE_THE_FLUSH: 3}[game_spec(game).name]


def check_bet_wagers(game: str, wagers_cents: Mapping[str, object], *, field: str = "wagers") -> None:
    """Refuse a seat's wagers that the game does not take, naming ``field.WAGER`` and the reason.

    Every name must be one of the game's wagers and every amount whole cents (0 = not placed); the ante
    is required; in Chase the Flush the X-tra Bonus is required and equal to the ante. The decision
    wager (raise, play, all-in) is checked against the cards by :func:`decision_limits`, not here.
    """
    spec = game_spec(game)
    for name, amount in wagers_cents.items():
        if name not in spec.wagers:
            where = (
                f"{field}.{name}" if name.isidentifier() and len(name) <= 40 else f"{field}[{shown(name)}]"
            )
            raise UserError(f"{where}: unknown wager for {spec.name} (known: {', '.join(spec.wagers)})")
        check_cents(amount, f"{field}.{name}")
    ante = wagers_cents.get("ante", 0)
    if ante == 0:
        raise UserError(f"{field}.ante: missing (the ante is required)")
    if spec.name == CHASE_THE_FLUSH:
        xtra = wagers_cents.get("xtra_bonus", 0)
        if xtra != ante:
            raise UserError(f"{field}.xtra_bonus: must equal the ante ({ante}), not {xtra}")


def clockwise_from(seat: int, seats: Sequence[int], max_seat: int = MAX_SEAT) -> tuple[int, ...]:
    """``seats`` in clockwise order starting after ``seat``: the order the button looks for the next
    designated player (docs/rules.md: "The button moves hand by hand clockwise to the next eligible player
    who accepts"). Seats are numbered clockwise (docs/rules.md), so this is ascending from ``seat + 1``
    and round again from seat 1; ``seat`` itself comes last if it is among ``seats``."""
    return tuple(sorted(seats, key=lambda other: (other - seat - 1) % (max_seat + 1)))
