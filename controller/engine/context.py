"""What every part of the engine shares: the table's configuration, the round in play, where the round
stands, the outputs of the call in progress and the time it was made at, and the ways to record an
output (the journal's door).

No part is reached through it: each part is given the few others it asks as doors
(controller/engine/doors.py; docs/engine.md "The parts and their doors").
"""

from __future__ import annotations

from controller.engine import machine as m
from controller.engine.doors import RoundPosition
from controller.engine.outputs import Alert, AlertSeverity, JournalRecord, Output, Refused
from controller.engine.round import LiveRound
from controller.engine.state import TableConfig
from controller.journal import entries
from controller.rules.games import GameSpec, game_spec
from controller.rules.progressive import PROGRESSIVE
from drivers.events import COMMUNITY_POSITION, DEALER_POSITION

ENGINE = "engine"
# The machine's states once a round is over: idle, or held between rounds (asked for every entry).
_BETWEEN_ROUNDS = (m.IDLE, m.held_in(m.IDLE))
_KIND_OF: dict[type[entries.Entry], str] = {}


def operator(by: str) -> str:
    """The journal source of an operator's action."""
    return f"operator:{by}"


class TableContext:
    """The shared state of one table's engine and the ways to record an output.

    The parts read its fields and never assign them: each changes through a method named for what
    happens, called by the one part it belongs to (the settings replace the configuration, the round
    flow opens and locks the round, the engine starts a call and takes its outputs).
    tests/engine/test_parts.py refuses a ``ctx.<field> = ...`` outside this file."""

    # Where the round stands: the round flow's machine, given once it is built (``follow``).
    position: RoundPosition

    def __init__(self, config: TableConfig, rounds_started: int) -> None:
        self.config = config  # replaced (never mutated) when a manager changes limits or paytables
        self.spec: GameSpec = game_spec(config.game)
        self.definition = m.definition(config.game)
        self.round: LiveRound | None = None
        self.rounds_started = rounds_started  # round ids are numbered from it
        self.now_s = 0.0
        self.out: list[Output] = []

    # ------------------------------------------------------------------ how the record changes
    def follow(self, position: RoundPosition) -> None:
        """Where the round stands is read from ``position`` (the round flow, once built)."""
        self.position = position

    def begin_call(self, now_s: float) -> None:
        """A call of ``TableEngine.handle`` at ``now_s`` (its outputs start empty: the last were taken)."""
        self.now_s = now_s

    def take_outputs(self) -> list[Output]:
        """The outputs of the call, handed over (the next call's start empty)."""
        out, self.out = self.out, []
        return out

    def replace_config(self, config: TableConfig) -> None:
        """A manager's change of limits or paytables (the same game, seats and devices)."""
        self.config = config

    def forget_round(self) -> None:
        """Betting opens: the last round is over and forgotten."""
        self.round = None

    def number_next_round(self) -> int:
        """The next round's number (its id's sequence)."""
        self.rounds_started += 1
        return self.rounds_started

    def lock_round(self, live: LiveRound) -> None:
        """The bets are locked: ``live`` is the round in play."""
        self.round = live

    @property
    def spot_wagers(self) -> tuple[str, ...]:
        """The wager of each betting spot, in spot order: the game's, then the Progressive wager's spot
        when the table offers it (docs/devices.md: a spot is its wager's index)."""
        if self.config.progressive is None:
            return self.spec.wagers
        return (*self.spec.wagers, PROGRESSIVE)

    # ------------------------------------------------------------------ where the round stands
    @property
    def state(self) -> str:
        """The round machine's state as the table shows it: ``held`` while held, wherever from."""
        return self.position.shown_state

    @property
    def where(self) -> str:
        """Where the round stands: the machine's state, or the state it was held in."""
        return self.position.where

    @property
    def round_finished(self) -> bool:
        """The machine has left the round (complete or dead, then idle or held between rounds)."""
        return self.round is not None and self.position.state in _BETWEEN_ROUNDS

    # ------------------------------------------------------------------ outputs
    def journal(
        self,
        entry: entries.Entry,
        *,
        source: str = ENGINE,
        table_wide: bool = False,
        round_id: str | None = None,
    ) -> None:
        """``entry``: the typed entry, built by its producer (a field that does not fit its kind is a type
        error there, not a string key found wrong at run time). ``round_id``: the round the entry belongs
        to, when it is not the round in play (an entry of a round the machine has just left); by default
        the round in play, or none between rounds."""
        live = self.round
        if (
            round_id is None
            and live is not None
            and not table_wide
            and self.position.state not in _BETWEEN_ROUNDS  # (round_finished, inline: ~110 entries a round)
        ):
            round_id = live.round_id
        kind = _KIND_OF.get(type(entry))
        if kind is None:  # the kind is the class's tag: read once per class, not per entry
            kind = _KIND_OF[type(entry)] = entry.kind
        self.out.append(JournalRecord(kind, entry, round_id, source))

    def alert(
        self,
        severity: AlertSeverity,
        kind: str,
        message: str,
        fault_id: str | None = None,
        *,
        table_wide: bool = False,
    ) -> None:
        round_id = self.round.round_id if self.round is not None and not table_wide else None
        self.out.append(Alert(severity, kind, message, round_id, fault_id))

    def refuse(
        self, action: str, reason: str, by: str | None = None, *, private_detail: str | None = None
    ) -> None:
        """``reason`` is public (said to the operator, journaled, shown); ``private_detail``, when the
        refusal speaks of a hand, is journaled in the entry's private part only."""
        self.out.append(Refused(action, reason))
        if by is not None:
            private = None if private_detail is None else entries.ActionRefusedPrivate(private_detail)
            self.journal(
                entries.ActionRefused(action=action, by=by, reason=reason, private=private),
                source=operator(by),
            )

    @staticmethod
    def position_name(position: int) -> str:
        if position == DEALER_POSITION:
            return "the banker"
        if position == COMMUNITY_POSITION:
            return "the community"
        return f"seat {position}"
