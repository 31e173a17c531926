"""The round machines: one `transitions` definition per game over a shared base.

The definition here is the one that runs (``TableEngine`` builds its ``Machine`` from
:func:`definition`) and the one that is drawn (``flushtable diagram`` renders the same definition as
mermaid or SVG), so the picture cannot drift from the code.

States (docs/rules.md): ``idle`` -> ``betting`` -> ``bets_locked`` -> ``dealing`` -> decisions ->
``reveal`` -> ``settling`` -> ``paying`` -> ``complete`` -> ``idle``. High Card Flush and Top Flush have
one decision phase, ``decisions``. Chase the Flush deals 3 hole cards, then ``preflop`` decisions,
``dealing_flop`` (2 community cards), ``flop`` decisions, ``dealing_turn_river`` (2 more), ``river``
decisions. ``held`` and ``dead`` are reachable from every state. ``held`` is a nested state (transitions'
``HierarchicalMachine``) with one child per state a round can be held in: ``hold`` from ``betting``
goes to ``held/betting``, and ``resume`` from ``held/betting`` back to ``betting``, so the machine itself
remembers where the round was (held from ``complete`` or ``dead``, the round is over: ``held/idle``).
``kill`` and ``void`` leave ``held`` from any of its children; ``void`` closes a round from any state of
a round.

The machine is built ``queued=True`` (a trigger fired inside a callback runs after the current
transition) with ``on_exception`` moving the model to ``held``, and ``auto_transitions=False`` so that
only the transitions listed here exist.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from controller.errors import UserError
from controller.names import CHASE_THE_FLUSH as CHASE_THE_FLUSH  # noqa: PLC0414  (re-exported)
from controller.names import GAME_NAMES as GAME_NAMES  # noqa: PLC0414  (re-exported)
from controller.names import HIGH_CARD_FLUSH as HIGH_CARD_FLUSH  # noqa: PLC0414  (re-exported)
from controller.names import TOP_FLUSH as TOP_FLUSH  # noqa: PLC0414  (re-exported)

if TYPE_CHECKING:  # the library loads when a machine is built: the state names alone need none of it
    from transitions.extensions.nesting import HierarchicalMachine

IDLE = "idle"
BETTING = "betting"
BETS_LOCKED = "bets_locked"
DEALING = "dealing"
DECISIONS = "decisions"
PREFLOP = "preflop"
DEALING_FLOP = "dealing_flop"
FLOP = "flop"
DEALING_TURN_RIVER = "dealing_turn_river"
RIVER = "river"
REVEAL = "reveal"
SETTLING = "settling"
PAYING = "paying"
COMPLETE = "complete"
HELD = "held"
DEAD = "dead"

# Between a nested state's parent and its child: "held/betting" is held while betting. (The library's
# default, "_", is inside our state names.)
SEPARATOR = "/"


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


@dataclass(frozen=True, slots=True)
class TransitionSpec:
    trigger: str
    source: str
    dest: str
    condition: str | None = None  # the name of a model method that must return True


@dataclass(frozen=True, slots=True)
class RoundDefinition:
    """One game's round machine: its states in order, the decision states, the dealing states, the
    states after the round's last card is dealt, and every transition (``held``/``dead``/``void`` ones
    included; a child of ``held`` is named by :func:`held_in`)."""

    game: str
    states: tuple[str, ...]
    decision_states: tuple[str, ...]
    dealing_states: tuple[str, ...]
    dealt_states: tuple[str, ...]
    transitions: tuple[TransitionSpec, ...]

    @property
    def round_states(self) -> tuple[str, ...]:
        """States in which a round is open (a round exists and is not closed)."""
        return tuple(s for s in self.states if s not in (IDLE, COMPLETE, HELD, DEAD))

    @property
    def resumable_states(self) -> tuple[str, ...]:
        """States ``held`` can resume to (its children): idle and every open-round state."""
        return (IDLE, *self.round_states)

    def hold_target(self, state: str) -> str:
        """Where ``hold`` goes from ``state``: held in it, or held between rounds (from complete or dead)."""
        return held_in(state if state in self.resumable_states else IDLE)

    def triggers(self) -> tuple[str, ...]:
        seen: dict[str, None] = {}
        for spec in self.transitions:
            seen.setdefault(spec.trigger, None)
        return tuple(seen)


def _main_line(game: str) -> tuple[list[str], list[str], list[str], list[str], list[TransitionSpec]]:
    head = [IDLE, BETTING, BETS_LOCKED, DEALING]
    tail = [REVEAL, SETTLING, PAYING, COMPLETE]
    t = TransitionSpec
    specs = [
        t("open_betting", IDLE, BETTING, "table_may_start"),
        t("lock_bets", BETTING, BETS_LOCKED),
        t("start_deal", BETS_LOCKED, DEALING),
    ]
    if game == CHASE_THE_FLUSH:
        middle = [PREFLOP, DEALING_FLOP, FLOP, DEALING_TURN_RIVER, RIVER]
        decisions = [PREFLOP, FLOP, RIVER]
        dealing = [DEALING, DEALING_FLOP, DEALING_TURN_RIVER]
        specs += [
            t("deal_complete", DEALING, PREFLOP),
            t("close_decisions", PREFLOP, DEALING_FLOP),
            t("deal_complete", DEALING_FLOP, FLOP),
            t("close_decisions", FLOP, DEALING_TURN_RIVER),
            t("deal_complete", DEALING_TURN_RIVER, RIVER),
            t("close_decisions", RIVER, REVEAL),
        ]
    else:
        middle = [DECISIONS]
        decisions = [DECISIONS]
        dealing = [DEALING]
        specs += [
            t("deal_complete", DEALING, DECISIONS),
            t("close_decisions", DECISIONS, REVEAL),
        ]
    specs += [
        t("settle", REVEAL, SETTLING),
        t("pay", SETTLING, PAYING),
        t("finish", PAYING, COMPLETE),
        t("next_round", COMPLETE, IDLE),
        t("next_round", DEAD, IDLE),
    ]
    line = [*head, *middle, *tail]
    # Every card of the round is dealt once the last deal step completes, until the round is paid.
    dealt = line[line.index(dealing[-1]) + 1 : line.index(COMPLETE)]
    return line, decisions, dealing, dealt, specs


def definition(game: str) -> RoundDefinition:
    """The round machine of ``game``; an unknown game is refused naming the field ``game``."""
    if game not in GAME_NAMES:
        raise UserError(f"game: unknown game {game!r} (known: {', '.join(GAME_NAMES)})")
    states, decisions, dealing, dealt, specs = _main_line(game)
    states = [*states, HELD, DEAD]
    round_states = [s for s in states if s not in (IDLE, COMPLETE, HELD, DEAD)]
    t = TransitionSpec
    # held (into the child that remembers where) and dead from anywhere; resume back to where it was.
    resumable = (IDLE, *round_states)
    specs += [
        t("hold", source, held_in(source if source in resumable else IDLE))
        for source in states
        if source != HELD
    ]
    specs += [t("kill", source, DEAD) for source in [*round_states, HELD]]
    specs += [t("resume", held_in(target), target) for target in resumable]
    specs += [t("void", source, COMPLETE) for source in [*round_states, HELD]]
    return RoundDefinition(
        game=game,
        states=tuple(states),
        decision_states=tuple(decisions),
        dealing_states=tuple(dealing),
        dealt_states=tuple(dealt),
        transitions=tuple(specs),
    )


def build_machine(
    model: object,
    game: str,
    *,
    on_exception: Callable[..., Any] | str,
    after_state_change: Callable[..., Any] | str | None = None,
    machine_class: type[HierarchicalMachine] | None = None,
    **extra: Any,
) -> HierarchicalMachine:
    """A ``HierarchicalMachine`` for ``game`` driving ``model`` (kept separate: the model is ours, the
    machine the library's). ``model`` must provide the condition methods the definition names.
    ``machine_class``: the library's ``HierarchicalMachine`` or a subclass (its graph machine)."""
    from transitions.extensions.nesting import HierarchicalMachine  # noqa: PLC0415 - see the imports

    machine_class = machine_class or HierarchicalMachine
    spec = definition(game)

    class State(machine_class.state_cls):  # type: ignore[name-defined,misc]
        separator = SEPARATOR

    built_class = type(machine_class.__name__, (machine_class,), {"state_cls": State})
    states: list[Any] = [
        {"name": HELD, "children": list(spec.resumable_states)} if state == HELD else state
        for state in spec.states
    ]
    machine: HierarchicalMachine = built_class(
        model=model,
        states=states,
        initial=IDLE,
        auto_transitions=False,
        queued=True,
        on_exception=on_exception,
        after_state_change=after_state_change,
        send_event=True,
        **extra,
    )
    for item in spec.transitions:
        machine.add_transition(
            item.trigger,
            item.source,
            item.dest,
            conditions=[item.condition] if item.condition else None,
        )
    return machine


# --- drawing ----------------------------------------------------------------------------------
def mermaid(game: str) -> str:
    """The round machine of ``game`` as a mermaid ``stateDiagram-v2``, from :func:`definition`.

    Written here rather than by transitions' mermaid engine so that the output is stable text
    (sorted, no styling) that tests and docs can pin. ``held`` is drawn as a composite state whose
    children (``held_betting``: held while betting) are where ``hold`` goes and ``resume`` leaves from.
    """
    spec = definition(game)
    lines = ["---", f"title: {game} round", "---", "stateDiagram-v2", f"    [*] --> {IDLE}"]
    lines.append(f"    state {HELD} {{")
    for child in spec.resumable_states:
        lines.append(f'        state "{child}" as {mermaid_id(held_in(child))}')
    lines.append("    }")
    for item in spec.transitions:
        label = item.trigger if item.condition is None else f"{item.trigger} [{item.condition}]"
        lines.append(f"    {mermaid_id(item.source)} --> {mermaid_id(item.dest)}: {label}")
    return "\n".join(lines) + "\n"


def mermaid_id(machine_state: str) -> str:
    """A state's id in the mermaid text (mermaid ids take no ``/``): ``held/betting`` -> ``held_betting``."""
    return machine_state.replace(SEPARATOR, "_")


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def svg(game: str) -> str:
    """The round machine of ``game`` as a self-contained SVG, from :func:`definition`.

    Graphviz is not a dependency (it needs a system install), so this is a plain layout: the main line
    of states as a column of boxes top to bottom with its transitions drawn as labelled arrows; ``held``
    and ``dead`` in a column to the right, with the number of states that reach each written beside it
    (drawing every ``hold``/``kill``/``resume``/``void`` edge would hide the main line); ``held``'s
    children are listed under it as the states it resumes to.
    """
    spec = definition(game)
    main = [s for s in spec.states if s not in (HELD, DEAD)]
    box_w, box_h, gap = 180, 34, 26
    left = 40
    right_x = left + box_w + 230
    y_of: dict[str, int] = {}
    for row, state in enumerate(main):
        y_of[state] = 30 + row * (box_h + gap)
    height = 30 + len(main) * (box_h + gap) + 20
    width = right_x + box_w + 40
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">',
        f"<title>{_escape(game)} round machine</title>",
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" '
        'markerHeight="7" orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z"/></marker></defs>',
    ]

    def box(state: str, x: int, y: int, fill: str) -> None:
        out.append(
            f'<g class="state" id="state-{state}"><rect x="{x}" y="{y}" width="{box_w}" height="{box_h}" '
            f'rx="8" fill="{fill}" stroke="#333"/><text x="{x + box_w // 2}" y="{y + box_h // 2 + 4}" '
            f'text-anchor="middle">{_escape(state)}</text></g>'
        )

    for state in main:
        fill = "#e8f0fe" if state in spec.decision_states else "#fff"
        box(state, left, y_of[state], fill)
    drawn_back = 0
    for item in spec.transitions:
        if item.source not in y_of or item.dest not in y_of:
            continue
        label = _escape(item.trigger)
        y1, y2 = y_of[item.source], y_of[item.dest]
        cx = left + box_w // 2
        if y2 > y1:  # forward along the column
            out.append(
                f'<line class="edge" x1="{cx}" y1="{y1 + box_h}" x2="{cx}" y2="{y2}" stroke="#333" '
                f'marker-end="url(#arrow)"/>'
                f'<text x="{cx + 6}" y="{(y1 + box_h + y2) // 2 + 4}">{label}</text>'
            )
        else:  # back edge (complete -> idle): a loop on the left
            drawn_back += 1
            lx = left - 14 * drawn_back
            out.append(
                f'<path class="edge" d="M {left} {y1 + box_h // 2} L {lx} {y1 + box_h // 2} '
                f'L {lx} {y2 + box_h // 2} L {left} {y2 + box_h // 2}" fill="none" stroke="#333" '
                f'marker-end="url(#arrow)"/><text x="{lx + 2}" y="{y1 - 4}">{label}</text>'
            )
    side = {HELD: ("#fff4e5", 30), DEAD: ("#fde8e8", 30 + 3 * (box_h + gap))}
    for state, (fill, y) in side.items():
        box(state, right_x, y, fill)
        incoming = sorted({i.trigger for i in spec.transitions if top(i.dest) == state})
        sources = sorted({i.source for i in spec.transitions if top(i.dest) == state})
        out.append(
            f'<text x="{right_x}" y="{y + box_h + 16}">{_escape(", ".join(incoming))} from '
            f"{len(sources)} states</text>"
        )
    resumes = [i.dest for i in spec.transitions if i.trigger == "resume"]
    out.append(
        f'<text x="{right_x}" y="{30 + box_h + 32}">resume to: {_escape(", ".join(resumes[:4]))} …</text>'
    )
    out.append(f'<text x="{right_x}" y="{30 + 3 * (box_h + gap) + box_h + 32}">next_round to {IDLE}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"
