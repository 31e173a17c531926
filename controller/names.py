"""The names the parts of the controller share, defined once: games, banking modes, wagers, seats, device
kinds, the rake's methods, fault kinds and the round id.

Every other module imports these rather than spelling them again, so nothing has to check that two
copies agree. Pure data: no I/O, and nothing of ours but ``table_names``.

Seat positions and device kinds are facts of the table's hardware that the wire carries too: they live
in ``table_names``, below both the firmware protocol and the controller, so the rules engine names a
seat without importing the protocol (issue 28: ``flushtable settle`` starts without loading the wire).
"""

from __future__ import annotations

import re
from enum import StrEnum
from typing import TYPE_CHECKING, Final, Literal

from table_names import DEVICE_KINDS, MAX_SEAT, DeviceKind

if TYPE_CHECKING:
    from datetime import date  # an annotation only: the rules' start need not load datetime

# --- games and banking ---------------------------------------------------------------------------------
HIGH_CARD_FLUSH: Final = "high-card-flush"
TOP_FLUSH: Final = "top-flush"
CHASE_THE_FLUSH: Final = "chase-the-flush"
GameName = Literal["high-card-flush", "top-flush", "chase-the-flush"]
GAME_NAMES: tuple[GameName, ...] = (HIGH_CARD_FLUSH, TOP_FLUSH, CHASE_THE_FLUSH)
GAME_SHORT_NAMES: dict[str, str] = {"hcf": HIGH_CARD_FLUSH, "tf": TOP_FLUSH, "ctf": CHASE_THE_FLUSH}
"""The short forms staff type on the command line (``flushtable math --game ctf``)."""
GAME_TITLES: dict[str, str] = {
    HIGH_CARD_FLUSH: "High Card Flush",
    TOP_FLUSH: "Top Flush",
    CHASE_THE_FLUSH: "Chase the Flush",
}
"""The name a person reads (recall, reports)."""

HOUSE: Final = "house"
DESIGNATED_PLAYER: Final = "designated-player"
BankingMode = Literal["house", "designated-player"]
BANKING_MODES: tuple[BankingMode, ...] = (HOUSE, DESIGNATED_PLAYER)

# Each game's wagers, their spots, paytables and par-sheet figures: controller/rules/catalogue.py.

# --- seats ------------------------------------------------------------------------------------------------
MIN_SEAT: Final = 1
MAX_PLAYERS: dict[str, int] = {HIGH_CARD_FLUSH: 6, TOP_FLUSH: 6, CHASE_THE_FLUSH: 7}
"""The most players one deck serves with the banker's hand (docs/rules.md: 7 cards each plus the banker's 7;
Chase the Flush: 3 each plus the dealer's 3 and 4 community cards)."""


def max_seats(game: str, banking_mode: str, *, house_may_bank: bool = False) -> int:
    """The most seats a table of ``game`` may have. The deck serves ``MAX_PLAYERS`` hands plus the banker's;
    at a designated-player table the banker sits at one of the seats, so it may have one seat more, unless
    the house may bank a round itself (then the house needs its own hand and every seat may play)."""
    extra = 1 if banking_mode == DESIGNATED_PLAYER and not house_may_bank else 0
    return MAX_PLAYERS[game] + extra


# --- devices ----------------------------------------------------------------------------------------------
# The table's device kinds (table_names, which the wire shares): shuffler, bet_sensors, dealer_display.


# --- the rake ----------------------------------------------------------------------------------------------
class RakeMethod(StrEnum):
    """docs/rules.md's house rake methods. The value is docs/rules.md's numbering, which the settle input uses
    (``"i"``); the member's name, lower case, is the configuration file's word (``all_players``)."""

    ALL_PLAYERS = "i"  # (i) every player uniformly, the designated player included
    PLAYERS_NOT_DP = "ii"  # (ii) every player but the designated player
    DP_ONLY = "iii"  # (iii) the designated player only

    @property
    def word(self) -> str:
        return self.name.lower()


# --- faults -------------------------------------------------------------------------------------------
FAULT_KINDS: tuple[str, ...] = (
    "dead_hand",
    "red_light",
    "past_posting",
    "over_limit_raise",
    "device_lost",
    "journal_error",
    "security_event",
    "shuffler_fault",
    "deck_verification",
    "integrity",
    "clock",  # the table's clock past its bound from the floor's time source, or the source unreachable
    "config_changed",  # the configuration changed on disk with no approved change behind it
    "supervisor_hold",
)
"""The kinds of ``fault_raised`` (docs/journal.md), in the order the panel lists them. An outside
watcher (integrity, the journal watch) may raise any of them as an alert."""
FAULT_SEVERITIES: tuple[str, ...] = ("alert", "latching")


# --- round ids ----------------------------------------------------------------------------------------------
# \Z, not $: `$` also matches before a final line break, and "R...-000005\n" is no round id.
ROUND_ID_PATTERN = re.compile(r"^R(?P<table>.+)-(?P<day>\d{8})-(?P<n>\d{6,})\Z")


def format_round_id(table_id: str, day: date, number: int) -> str:
    """``R{table_id}-{YYYYMMDD}-{n:06d}``: n counts the rounds in the journal, so ids are unique. A table
    id has no '-' (the configuration refuses one), so the parts can be read back."""
    return f"R{table_id}-{day:%Y%m%d}-{number:06d}"


def round_number(round_id: str) -> int | None:
    """The n of a round id, or None when it is not one."""
    match = ROUND_ID_PATTERN.match(round_id)
    return int(match["n"]) if match else None


__all__ = [
    "BANKING_MODES",
    "CHASE_THE_FLUSH",
    "DESIGNATED_PLAYER",
    "DEVICE_KINDS",
    "FAULT_KINDS",
    "FAULT_SEVERITIES",
    "GAME_NAMES",
    "GAME_SHORT_NAMES",
    "GAME_TITLES",
    "HIGH_CARD_FLUSH",
    "HOUSE",
    "MAX_PLAYERS",
    "MAX_SEAT",
    "MIN_SEAT",
    "ROUND_ID_PATTERN",
    "TOP_FLUSH",
    "BankingMode",
    "DeviceKind",
    "GameName",
    "RakeMethod",
    "format_round_id",
    "max_seats",
    "round_number",
]
