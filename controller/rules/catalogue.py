"""The catalogue: games -> wagers -> paytables (presets) -> the par sheet's figures, written once.

Every other reader asks here: the games' specs (controller/rules/games.py), settlement
(controller/rules/settle.py: each wager's ``rule`` names its settle rule), the configuration's checks
(which wagers take a paytable at which table), the par sheet (controller/gamemath/parsheet.py: what each
bonus is paid on), the panels' wager labels and the theoretical win of the table panel's shift meters
and the floor (:func:`theoretical_win_exact`, the one computation both call).

Adding a wager is a rule function and a line here (docs/engine.md "Adding a wager"): a :class:`Wager`
with its spot in each game that offers it, who banks it, its paytable preset per game and banking
mode, and the name of its settle rule (controller/rules/settle.py ``WAGER_RULES``).

Pure data and arithmetic: nothing of ours but controller.names, no I/O, so the fastest command
(``flushtable settle``) may load it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Final

from controller.names import (
    CHASE_THE_FLUSH,
    DESIGNATED_PLAYER,
    HIGH_CARD_FLUSH,
    HOUSE,
    MAX_PLAYERS,
    TOP_FLUSH,
)
from table_names.records import FrozenRecord

if TYPE_CHECKING:
    from fractions import Fraction  # loaded by the theoretical win only: settle does not need it

# --- who banks a wager ------------------------------------------------------------------------------------
BANKER: Final = "banker"
"""Whoever banks the round: the house, or the designated player at a designated-player table."""
THE_HOUSE: Final = "house"
"""The house in every banking mode (the Progressive: its meter is the house's)."""

# --- a wager's role in its game ----------------------------------------------------------------------------
ANTE: Final = "ante"  # the wager every seat must place
DECISION: Final = "decision"  # made after seeing cards: raise, play, all-in
BONUS: Final = "bonus"  # paid by a paytable
PROGRESSIVE_ROLE: Final = "progressive"  # its own rules (controller/rules/progressive.py): not in GameSpec

SENSOR_SPOTS: Final = 7  # the bet sensors' wager spots per seat, 0 to 6 (firmware_protocol: 7 is the bank)
AFTER_THE_GAMES_WAGERS: Final = -1
"""The Progressive's spot: the one after the game's own wagers, at a table that offers it
(controller/engine/context.py ``spot_wagers``), wherever a wager added to the game puts that."""

# --- settle rules (controller/rules/settle.py WAGER_RULES) ------------------------------------------------
BASE_RULE: Final = "base"  # settled by the game's base rule with the ante (the decision, the X-tra Bonus)
FLUSH_BONUS: Final = "flush_bonus"  # on the player's flush length; contested against a DP
STRAIGHT_FLUSH_BONUS: Final = "straight_flush_bonus"  # on the straight-flush run length; contested vs a DP


class Paytable(FrozenRecord):
    """Odds "N to 1" by line length. ``name`` is the preset's name, or "custom". Only the highest line a
    hand reaches pays (docs/rules.md "Paytables"): a hand of length L is paid by the line with the largest
    length <= L, and loses when it reaches none."""

    name: str
    odds_by_length: tuple[tuple[int, int], ...]  # (length, odds), longest line first
    # The table's configuration said this table may pay a better hand less than a worse one
    # (``allow_inverted = true``); the par sheet then says so. Never set for a preset.
    allow_inverted: bool

    __slots__ = tuple(__annotations__)  # the fields declared above, in order

    def __init__(
        self, name: str, odds_by_length: tuple[tuple[int, int], ...], allow_inverted: bool = False
    ) -> None:
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "odds_by_length", odds_by_length)
        object.__setattr__(self, "allow_inverted", allow_inverted)

    def odds_for(self, length: int) -> int | None:
        """The odds the highest line reached by ``length`` pays, or None when no line is reached."""
        for line_length, odds in self.odds_by_length:
            if length >= line_length:
                return odds
        return None

    @property
    def min_length(self) -> int:
        """The shortest length that wins anything."""
        return self.odds_by_length[-1][0]

    def to_json(self) -> dict[str, int]:
        return {str(length): odds for length, odds in self.odds_by_length}

    def inversions(self) -> list[tuple[int, int, int, int]]:
        """Every pair of lines where the longer (better) line pays less than a shorter one:
        ``(longer, its odds, shorter, its odds)``, longest first. Empty for a table in order."""
        found: list[tuple[int, int, int, int]] = []
        for index, (longer, longer_odds) in enumerate(self.odds_by_length):
            for shorter, shorter_odds in self.odds_by_length[index + 1 :]:
                if longer_odds < shorter_odds:
                    found.append((longer, longer_odds, shorter, shorter_odds))
        return found

    def allowing_inversion(self) -> Paytable:
        return Paytable(self.name, self.odds_by_length, allow_inverted=True)

    @classmethod
    def from_lines(cls, name: str, lines: Mapping[int, int]) -> Paytable:
        return cls(name, tuple(sorted(lines.items(), reverse=True)))


class Wager(FrozenRecord):
    """One wager: its name on the layout and in the journal, the words a person reads, its spot in each
    game that offers it (drivers/events.py: a betting spot is the wager's index in the game's wagers),
    who banks it, its role, whether a seat must place it, the preset it is paid by per (game, banking
    mode) (a bonus), and the settle rule that judges it (controller/rules/settle.py ``WAGER_RULES``)."""

    name: str
    label: str
    spots: Mapping[str, int]  # game -> spot: the games that offer it
    banked_by: str
    role: str
    rule: str
    required: bool
    presets: Mapping[tuple[str, str], str]  # (game, banking) -> preset

    __slots__ = tuple(__annotations__)  # the fields declared above, in order

    def __init__(  # noqa: PLR0913, PLR0917 - a wager's eight facts, as the catalogue's lines give them
        self,
        name: str,
        label: str,
        spots: Mapping[str, int],
        banked_by: str,
        role: str,
        rule: str,
        required: bool = False,
        presets: Mapping[tuple[str, str], str] | None = None,
    ) -> None:
        presets = {} if presets is None else presets
        self._set_fields(locals())


class GameSpec(FrozenRecord):
    """Everything about a game that does not depend on the cards, read off the catalogue's wagers.

    ``wagers`` is in spot order. ``decision_wager`` is the wager a player makes after seeing cards
    (``raise``, ``play``, ``all_in``); ``bonus_wagers`` are the side bets paid by a paytable.
    ``max_players`` counts the seats that play against the banker (in designated-player mode the DP's
    own seat is not among them: its cards are the banker's hand).
    """

    name: str
    wagers: tuple[str, ...]
    required_wagers: tuple[str, ...]
    optional_wagers: tuple[str, ...]
    decision_wager: str
    bonus_wagers: tuple[str, ...]
    max_players: int
    hole_cards: int  # cards each seat and the banker are dealt
    community_cards: int  # shared cards completing every hand (Chase the Flush: 4)
    banking_modes: tuple[str, ...]

    __slots__ = tuple(__annotations__)  # the fields declared above, in order

    def __init__(  # noqa: PLR0913, PLR0917 - a game's ten facts, read off the catalogue by _game_spec
        self,
        name: str,
        wagers: tuple[str, ...],
        required_wagers: tuple[str, ...],
        optional_wagers: tuple[str, ...],
        decision_wager: str,
        bonus_wagers: tuple[str, ...],
        max_players: int,
        hole_cards: int,
        community_cards: int,
        banking_modes: tuple[str, ...],
    ) -> None:
        self._set_fields(locals())

    @property
    def hand_cards(self) -> int:
        """Cards in every evaluated hand: hole plus community (7 in each game)."""
        return self.hole_cards + self.community_cards

    def cards_needed(self, players: int) -> int:
        """Cards one round with ``players`` seats (plus the banker) takes from the deck."""
        return (players + 1) * self.hole_cards + self.community_cards


# --- paytables: the presets docs/rules.md posts ----------------------------------------------------------
_FLUSH_LINES: Final = {7: 300, 6: 100, 5: 10, 4: 1}
_RUN_LINES: Final = {7: 8000, 6: 1000, 5: 100, 4: 60, 3: 7}
PRESETS: dict[str, Paytable] = {
    table.name: table
    for table in (
        # High Card Flush, house-banked: on the player's own hand (docs/rules.md).
        Paytable.from_lines("hcf-flush-house", _FLUSH_LINES),
        Paytable.from_lines("hcf-straight-flush-house", _RUN_LINES),
        # High Card Flush, designated player: contests against the DP (seed appendices A and B).
        Paytable.from_lines("hcf-flush-dp", {7: 200, 6: 50, 5: 10, 4: 2}),
        Paytable.from_lines("hcf-straight-flush-dp", {7: 1000, 6: 500, 5: 100, 4: 60, 3: 8}),
        # Top Flush.
        Paytable.from_lines("top-flush-bonus", _FLUSH_LINES),
        Paytable.from_lines("straight-flush-jackpot", _RUN_LINES),
        # Chase the Flush.
        Paytable.from_lines("xtra-bonus", {7: 250, 6: 20, 5: 5, 4: 1}),
        Paytable.from_lines("same-suit-bonus", _FLUSH_LINES),
    )
}

# --- wagers: one line each, in the order the layouts list them -------------------------------------------
_HCF, _TF, _CTF = HIGH_CARD_FLUSH, TOP_FLUSH, CHASE_THE_FLUSH
_HCF_HOUSE, _HCF_DP = (_HCF, HOUSE), (_HCF, DESIGNATED_PLAYER)
WAGERS: dict[str, Wager] = {
    wager.name: wager
    for wager in (
        Wager("ante", "ante", {_HCF: 0, _TF: 0, _CTF: 0}, BANKER, ANTE, BASE_RULE, required=True),
        Wager("raise", "raise", {_HCF: 1}, BANKER, DECISION, BASE_RULE),
        Wager("play", "play", {_TF: 1}, BANKER, DECISION, BASE_RULE),
        Wager("all_in", "all in", {_CTF: 3}, BANKER, DECISION, BASE_RULE),
        Wager(
            "flush",
            "flush bonus",
            {_HCF: 2},
            BANKER,
            BONUS,
            FLUSH_BONUS,
            presets={_HCF_HOUSE: "hcf-flush-house", _HCF_DP: "hcf-flush-dp"},
        ),
        Wager(
            "straight_flush",
            "straight flush bonus",
            {_HCF: 3},
            BANKER,
            BONUS,
            STRAIGHT_FLUSH_BONUS,
            presets={_HCF_HOUSE: "hcf-straight-flush-house", _HCF_DP: "hcf-straight-flush-dp"},
        ),
        Wager(
            "top_flush_bonus",
            "top flush bonus",
            {_TF: 2},
            BANKER,
            BONUS,
            FLUSH_BONUS,
            presets={(_TF, HOUSE): "top-flush-bonus"},
        ),
        Wager(
            "straight_flush_jackpot",
            "straight flush jackpot",
            {_TF: 3},
            BANKER,
            BONUS,
            STRAIGHT_FLUSH_BONUS,
            presets={(_TF, HOUSE): "straight-flush-jackpot"},
        ),
        # The X-tra Bonus is paid by a paytable but judged with the ante (it pushes or loses with the
        # hand's result), so the game's base rule settles it and the base game's edge counts it.
        Wager(
            "xtra_bonus",
            "X-tra bonus",
            {_CTF: 1},
            BANKER,
            BONUS,
            BASE_RULE,
            required=True,
            presets={(_CTF, HOUSE): "xtra-bonus"},
        ),
        Wager(
            "same_suit_bonus",
            "same suit bonus",
            {_CTF: 2},
            BANKER,
            BONUS,
            FLUSH_BONUS,
            presets={(_CTF, HOUSE): "same-suit-bonus"},
        ),
        # docs/rules.md: "Top Flush; High Card Flush where offered ... Chase the Flush has none".
        Wager(
            "progressive",
            "progressive",
            {_HCF: AFTER_THE_GAMES_WAGERS, _TF: AFTER_THE_GAMES_WAGERS},
            THE_HOUSE,
            PROGRESSIVE_ROLE,
            PROGRESSIVE_ROLE,
        ),
    )
}


# --- games -----------------------------------------------------------------------------------------------
# What a game is beyond its wagers (docs/rules.md, each game's section): (most players, hole cards,
# community cards, banking modes). A plain tuple: one class fewer for the settle command to build.
_LAYOUTS: Final[dict[str, tuple[int, int, int, tuple[str, ...]]]] = {
    # "High Card Flush Poker": at most 6 players (7 cards each, plus the banker's 7).
    _HCF: (MAX_PLAYERS[_HCF], 7, 0, (HOUSE, DESIGNATED_PLAYER)),
    # "Top Flush (house-banked)": at most 6 players.
    _TF: (MAX_PLAYERS[_TF], 7, 0, (HOUSE,)),
    # "Chase the Flush (house-banked)": up to 7 players, 3 hole cards, 4 community cards.
    _CTF: (MAX_PLAYERS[_CTF], 3, 4, (HOUSE,)),
}


def _game_spec(game: str) -> GameSpec:
    offered = sorted(
        (wager for wager in WAGERS.values() if game in wager.spots and wager.role != PROGRESSIVE_ROLE),
        key=lambda wager: wager.spots[game],
    )
    # A spot is the wager's index in GameSpec.wagers (the bet sensors report spots 0 to 6; 7 is a seat's
    # bank): the lines must number a game's spots 0, 1, 2, ... with room left for the Progressive's.
    spots = [wager.spots[game] for wager in offered]
    if spots != list(range(len(spots))) or len(spots) > SENSOR_SPOTS - 1:
        raise ValueError(f"{game}: the wagers' spots are {spots}, not 0 to {len(spots) - 1} within 0 to 5")
    max_players, hole_cards, community_cards, banking_modes = _LAYOUTS[game]
    return GameSpec(
        name=game,
        wagers=tuple(wager.name for wager in offered),
        required_wagers=tuple(wager.name for wager in offered if wager.required),
        optional_wagers=tuple(wager.name for wager in offered if wager.role == BONUS and not wager.required),
        decision_wager=next(wager.name for wager in offered if wager.role == DECISION),
        bonus_wagers=tuple(wager.name for wager in offered if wager.role == BONUS),
        max_players=max_players,
        hole_cards=hole_cards,
        community_cards=community_cards,
        banking_modes=banking_modes,
    )


GAMES: dict[str, GameSpec] = {game: _game_spec(game) for game in _LAYOUTS}

DEFAULT_PRESET: dict[tuple[str, str, str], str] = {}
"""The preset each (game, banking mode, wager) uses unless the round or the table names another."""


def _index_presets() -> None:
    """DEFAULT_PRESET from the wagers' lines, by game, banking mode and spot (the order refusals list)."""
    DEFAULT_PRESET.clear()
    for game, spec in GAMES.items():
        for banking in spec.banking_modes:
            for name in spec.wagers:
                preset = WAGERS[name].presets.get((game, banking))
                if preset is not None:
                    DEFAULT_PRESET[(game, banking, name)] = preset


_index_presets()


def paytable_wagers(game: str, banking: str) -> tuple[str, ...]:
    """The wagers a table of ``game`` banked ``banking`` pays by a paytable, in spot order."""
    spec = GAMES[game]
    return tuple(wager for wager in spec.wagers if (game, banking, wager) in DEFAULT_PRESET)


def wager_label(name: str) -> str:
    """The words a person reads for wager ``name`` (an unknown name with its underscores as spaces)."""
    wager = WAGERS.get(name)
    return wager.label if wager is not None else name.replace("_", " ")


def wager_short_label(name: str) -> str:
    """The words for wager ``name`` in a seat's narrow card on the table panel, where every line is a
    wager: the label less its "bonus" ("straight flush", not "straight flush bonus"), so the amount
    stays beside it at 1280 px."""
    label = wager_label(name)
    return label.removesuffix(" bonus") if label.endswith(" bonus") else label


def progressive_games() -> tuple[str, ...]:
    return tuple(WAGERS["progressive"].spots)


def add_wager(wager: Wager, presets: Mapping[str, Paytable] | None = None) -> None:
    """Add ``wager`` (and any new ``presets`` it is paid by) to the catalogue: the games that offer it
    list it from now on. The catalogue's lines are the way in production; this is for a test's fixture,
    which adds a wager whose rule it registers (controller/rules/settle.py ``register_wager_rule``)."""
    WAGERS[wager.name] = wager
    try:
        specs = {game: _game_spec(game) for game in wager.spots}
    except ValueError:
        del WAGERS[wager.name]  # refused whole: the catalogue stays as it was
        raise
    PRESETS.update(presets or {})
    GAMES.update(specs)
    _index_presets()


def remove_wager(name: str, presets: tuple[str, ...] = ()) -> None:
    """Undo :func:`add_wager` (a fixture's teardown)."""
    wager = WAGERS.pop(name)
    for preset in presets:
        PRESETS.pop(preset, None)
    for game in wager.spots:
        GAMES[game] = _game_spec(game)
    _index_presets()


# --- the par sheet's figures at the presets ---------------------------------------------------------------
# The exact house edges controller/gamemath's par sheet computes at the preset paytables (docs/math.md;
# tests/rules/test_catalogue.py recomputes the High Card Flush and Top Flush ones, tests/test_chase_math.py
# covers Chase the Flush): ``flushtable math`` is their source, and these are what it printed.
BASE_EDGE_PER_ANTE: Final[dict[str, tuple[int, int]]] = {
    # The base game's edge per ante: it counts the raise, play or all-in the ante leads to, and in Chase
    # the Flush the X-tra Bonus (250/20/5/1) too.
    _HCF: (1348050875653, 50592437455560),  # 2.6645%
    _TF: (6335327053619, 252962187277800),  # 2.5045%
    _CTF: (12033802351, 503364407000),  # 2.3907%
}
_FLUSH_EDGE: Final = (200861, 2572780)  # 300/100/10/1 on the flush length: 7.8072%
_RUN_EDGE: Final = (4376891, 33446140)  # 8000/1000/100/60/7 on the run length: 13.0864%
PRESET_EDGE: Final[dict[str, tuple[int, int]]] = {
    "hcf-flush-house": _FLUSH_EDGE,
    "hcf-straight-flush-house": _RUN_EDGE,
    "top-flush-bonus": _FLUSH_EDGE,
    "straight-flush-jackpot": _RUN_EDGE,
    "same-suit-bonus": _FLUSH_EDGE,
}
"""A bonus's edge when the house banks it by its preset (the X-tra Bonus is in the base game's)."""


def theoretical_win_by_wager(game: str, stakes_cents: Mapping[str, int]) -> dict[str, Fraction] | None:
    """The par sheet's expected house win on a house-banked round's (or many rounds') stakes in action,
    by wager, exact: the ante's stakes times the base game's edge per ante, each bonus's stakes times its
    preset's edge; the decision wager and the X-tra Bonus are inside the base edge, the Progressive has
    none here. None for a game the catalogue does not know. The one computation of theoretical win: the
    table panel's shift meters and the floor both call it, and round only the sum they show."""
    from fractions import Fraction  # noqa: PLC0415  (the settle path never needs it)

    base = BASE_EDGE_PER_ANTE.get(game)
    if base is None:
        return None
    by_wager: dict[str, Fraction] = {}
    for name, stake in stakes_cents.items():
        wager = WAGERS.get(name)
        if wager is None or game not in wager.spots:
            continue
        if wager.role == ANTE:
            edge = base
        elif wager.role == BONUS and (preset := DEFAULT_PRESET.get((game, HOUSE, name))) in PRESET_EDGE:
            edge = PRESET_EDGE[preset]
        else:
            continue  # counted in the base game's edge per ante, or none (the Progressive)
        by_wager[name] = by_wager.get(name, Fraction(0)) + Fraction(stake * edge[0], edge[1])
    return by_wager


def stakes_in_action(settlement: Mapping[str, object]) -> dict[str, int]:
    """A settlement's (its JSON form's) stakes by wager that were in action: a returned wager's are not."""
    stakes: dict[str, int] = {}
    seats = settlement.get("seats")
    for seat in seats if isinstance(seats, list) else ():
        wagers = seat.get("wagers") if isinstance(seat, Mapping) else None
        for name, wager in (wagers or {}).items():
            if isinstance(wager, Mapping) and wager.get("result") != "returned":
                stakes[name] = stakes.get(name, 0) + int(wager.get("stake", 0))
    return stakes


__all__ = [
    "ANTE",
    "BANKER",
    "BASE_EDGE_PER_ANTE",
    "BASE_RULE",
    "BONUS",
    "DECISION",
    "DEFAULT_PRESET",
    "FLUSH_BONUS",
    "GAMES",
    "PRESETS",
    "PRESET_EDGE",
    "STRAIGHT_FLUSH_BONUS",
    "THE_HOUSE",
    "WAGERS",
    "GameSpec",
    "Paytable",
    "Wager",
    "add_wager",
    "paytable_wagers",
    "progressive_games",
    "remove_wager",
    "stakes_in_action",
    "theoretical_win_by_wager",
    "wager_label",
]
