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

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from controller.errors import UserError
from controller.names import CHASE_THE_FLUSH as CHASE_THE_FLUSH  # noqa: PLC0414  (re-exported)
from controller.names import GAME_NAMES as GAME_NAMES  # noqa: PLC0414  (re-exported)
from controller.names import HIGH_CARD_FLUSH as HIGH_CARD_FLUSH  # noqa: PLC0414  (re-exported)
from controller.names import TOP_FLUSH as TOP_FLUSH  # noqa: PLC0414  (re-exported)

# The phase names live below the journal (controller/phases.py); the engine reads them here as m.NAME.
from controller.phases import BETS_LOCKED as BETS_LOCKED  # noqa: PLC0414  (re-exported)
from controller.phases import BETTING as BETTING  # noqa: PLC0414  (re-exported)
from controller.phases import COMPLETE as COMPLETE  # noqa: PLC0414  (re-exported)
from controller.phases import DEAD as DEAD  # noqa: PLC0414  (re-exported)
from controller.phases import DEALING as DEALING  # noqa: PLC0414  (re-exported)
from controller.phases import DEALING_FLOP as DEALING_FLOP  # noqa: PLC0414  (re-exported)
from controller.phases import DEALING_TURN_RIVER as DEALING_TURN_RIVER  # noqa: PLC0414  (re-exported)
from controller.phases import DECISIONS as DECISIONS  # noqa: PLC0414  (re-exported)
from controller.phases import FLOP as FLOP  # noqa: PLC0414  (re-exported)
from controller.phases import HELD as HELD  # noqa: PLC0414  (re-exported)
from controller.phases import IDLE as IDLE  # noqa: PLC0414  (re-exported)
from controller.phases import PAYING as PAYING  # noqa: PLC0414  (re-exported)
from controller.phases import PREFLOP as PREFLOP  # noqa: PLC0414  (re-exported)
from controller.phases import REVEAL as REVEAL  # noqa: PLC0414  (re-exported)
from controller.phases import RIVER as RIVER  # noqa: PLC0414  (re-exported)
from controller.phases import SEPARATOR as SEPARATOR  # noqa: PLC0414  (re-exported)
from controller.phases import SETTLING as SETTLING  # noqa: PLC0414  (re-exported)
from controller.phases import held_from as held_from  # noqa: PLC0414  (re-exported)
from controller.phases import held_in as held_in  # noqa: PLC0414  (re-exported)
from controller.phases import top as top  # noqa: PLC0414  (re-exported)

if TYPE_CHECKING:  # the library loads when a machine is built: the state names alone need none of it
    from transitions.extensions.nesting import HierarchicalMachine


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
        dealing = [DEALING, DEALING_FLOP, DEALING_TURN_RIVER]
        decisions = [PREFLOP, FLOP, RIVER]
    else:
        dealing = [DEALING]
        decisions = [DECISIONS]
    # Deal steps and decision phases alternate: each deal step completes into its decisions, and each
    # closing of the decisions leads to the next deal step, the last one to the reveal.
    middle: list[str] = []
    for deal_step, decided, after in zip(dealing, decisions, [*dealing[1:], REVEAL], strict=True):
        middle += [decided] if after == REVEAL else [decided, after]
        specs += [t("deal_complete", deal_step, decided), t("close_decisions", decided, after)]
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


# --- dispatching -------------------------------------------------------------------------------
class FiredEvent:
    """What a callback receives for one trigger (``send_event=True``): the fields of transitions'
    ``EventData`` the round's callbacks read: ``event`` (its ``name``), ``transition`` (its ``source`` and
    ``dest``), ``error`` for ``on_exception``, and the ``model`` and ``machine``."""

    __slots__ = ("error", "event", "machine", "model", "result", "transition")

    def __init__(self, machine: HierarchicalMachine, model: object, event: Any) -> None:
        self.machine = machine
        self.model = model
        self.event = event
        self.transition: Any = None
        self.error: BaseException | None = None
        self.result = False


# For one (state, trigger): the sources to try, innermost first (``held/betting``, then ``held``), each with
# the library's transitions from it, in the order transitions tries them.
Candidates = tuple[tuple[str, tuple[Any, ...]], ...]


class DirectDispatch:
    """Fires the triggers of a built ``HierarchicalMachine`` on its model without the library's per-trigger
    work (issue 28: building the model's state tree, resolving the nested order and the callbacks by name
    at every trigger cost about a third of the engine core's time), with the same outcome: the table of
    what each trigger does from each state is read once from the machine the library built from
    :func:`definition` (its own ``NestedTransition`` objects), and each trigger then does what
    transitions does for this machine's options (``queued=True``, ``send_event=True``, no state
    callbacks, ``after_state_change`` and ``on_exception`` named on the model):

    - a trigger fired while another runs (from a callback) is queued, and runs once that one is done;
    - the sources are tried innermost first (a child of ``held``, then ``held``), and a source's
      transitions in order; the first whose conditions all hold is taken (none: nothing happens);
    - the model's ``state`` becomes the transition's ``dest``, then ``after_state_change`` runs;
    - an exception in a condition or a callback, or a trigger not valid in the state it runs in, goes to
      ``on_exception`` with ``error`` set (a trigger is then done; the queue goes on);
    - an exception out of ``on_exception`` itself clears the queue and propagates.

    tests/engine/test_machine_dispatch.py drives this and the library side by side over every game's
    machine and compares the states, the callbacks' order and their arguments."""

    def __init__(
        self,
        machine: HierarchicalMachine,
        model: Any,
        *,
        after_state_change: str,
        on_exception: str,
    ) -> None:
        self._machine = machine
        self._model = model
        self._after_state_change = after_state_change
        self._on_exception = on_exception
        self._queue: deque[str] = deque()
        self._events: dict[str, Any] = dict(machine.events)
        self._table: dict[str, dict[str, Candidates]] = {}
        for state in machine.get_nested_state_names():
            path = state.split(SEPARATOR)
            innermost_first = [SEPARATOR.join(path[:depth]) for depth in range(len(path), 0, -1)]
            by_trigger: dict[str, Candidates] = {}
            for trigger, event in machine.events.items():
                candidates = tuple(
                    (source, tuple(event.transitions[source]))
                    for source in innermost_first
                    if source in event.transitions
                )
                if candidates:
                    by_trigger[trigger] = candidates
            self._table[state] = by_trigger
        self._valid = {state: frozenset(by_trigger) for state, by_trigger in self._table.items()}

    def triggers(self, state: str) -> frozenset[str]:
        """The triggers valid in ``state`` (``machine.get_triggers(state)``)."""
        return self._valid.get(state, frozenset())

    def trigger(self, name: str) -> None:
        """Fire ``name`` on the model (queued behind a running trigger, as transitions does)."""
        queue = self._queue
        queue.append(name)
        if len(queue) > 1:
            return  # a trigger is running: this one runs after it
        while queue:
            try:
                self._run(queue[0])
                queue.popleft()
            except BaseException:
                queue.clear()
                raise

    def _run(self, name: str) -> None:
        model = self._model
        fired = FiredEvent(self._machine, model, self._events.get(name))
        try:
            candidates = self._table.get(model.state, {}).get(name)
            if candidates is None:
                raise self._invalid(name, model.state)
            for _source, transitions in candidates:
                for transition in transitions:
                    fired.transition = transition
                    if all(self._holds(condition, fired) for condition in transition.conditions):
                        model.state = transition.dest
                        getattr(model, self._after_state_change)(fired)
                        fired.result = True
                        return
        except BaseException as error:
            fired.error = error
            getattr(self._model, self._on_exception)(fired)

    def _invalid(self, name: str, state: str) -> Exception:
        """The error transitions raises for a trigger its machine cannot take here, in its words."""
        if name not in self._events:
            return AttributeError(f"Do not know event named '{name}'.")
        from transitions.core import MachineError  # noqa: PLC0415 - loaded with the machine already

        return MachineError(f"{self._machine.name}Can't trigger event '{name}' from state(s) {state}!")

    def _holds(self, condition: Any, fired: FiredEvent) -> bool:
        check = getattr(self._model, condition.func) if isinstance(condition.func, str) else condition.func
        return bool(check(fired) == condition.target)


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
