"""The round's phases: the names of the round machine's states, defined once below every reader.

The engine's machine (controller/engine/machine.py) runs these states; the journal's reducer
(controller/journal/state.py) and its renderers read a round's phase from the ``state_changed`` entries
by the same names. Both import them from here, so the journal needs nothing of the engine. Pure data
and three functions on the names: no I/O, nothing of ours.
"""

from __future__ import annotations

from typing import Final

IDLE: Final = "idle"
BETTING: Final = "betting"
BETS_LOCKED: Final = "bets_locked"
DEALING: Final = "dealing"
DECISIONS: Final = "decisions"
PREFLOP: Final = "preflop"
DEALING_FLOP: Final = "dealing_flop"
FLOP: Final = "flop"
DEALING_TURN_RIVER: Final = "dealing_turn_river"
RIVER: Final = "river"
REVEAL: Final = "reveal"
SETTLING: Final = "settling"
PAYING: Final = "paying"
COMPLETE: Final = "complete"
HELD: Final = "held"
DEAD: Final = "dead"

# Between a nested state's parent and its child: "held/betting" is held while betting. (The machine
# library's default, "_", is inside our state names.)
SEPARATOR: Final = "/"


def held_in(state: str) -> str:
    """The child of ``held`` that remembers the round was held in ``state``."""
    return f"{HELD}{SEPARATOR}{state}"


def held_from(machine_state: str) -> str | None:
    """The state a held machine was held in (``held/betting`` -> ``betting``), or None when not held."""
    parent, _, child = machine_state.partition(SEPARATOR)
    return child if parent == HELD and child else None


def top(machine_state: str) -> str:
    """The state as the table shows it: ``held`` for every child of ``held``."""
    return machine_state.partition(SEPARATOR)[0]
