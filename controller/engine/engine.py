"""The table engine: a synchronous core that runs the table from its devices' events and its operators'
actions.

No asyncio, no I/O, no clock: the shell feeds it domain events (drivers/events.py), operator actions
(controller/engine/actions.py) and the time (``now_s``, UTC seconds since the epoch, as ``time.time()``
gives), and acts on the outputs it returns (see controller/engine/outputs.py), in order: journal records,
device commands, alerts and refusals. docs/engine.md describes the behaviour rule by rule.

Public API::

    engine = TableEngine(config, recovered=RecoveredState(...))
    outputs = engine.handle(item, now_s)   # any drivers.events domain event or actions.* action
    view = engine.view()                   # a frozen TableView: view.state, view.held, view.round, ...

``TableEngine`` composes the parts (docs/engine.md "The parts"): each event and action is handled by
one handler in the part that owns it, found by its type. Every call returns a list of outputs and never
raises: an invalid event is refused (journaled as a fault or returned as ``Refused``), and an unexpected
error inside the engine raises a latching ``integrity`` fault and holds the table rather than escaping
to the shell.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

from controller.engine import actions as a
from controller.engine import machine as m
from controller.engine.bank import Bank
from controller.engine.bets import Bets
from controller.engine.context import TableContext
from controller.engine.deal import DealPart
from controller.engine.decisions import Decisions
from controller.engine.faults import ALERT_KINDS, Faults
from controller.engine.flow import MachineHalted, RoundFlow
from controller.engine.kills import SeatKills
from controller.engine.outputs import Output
from controller.engine.progressive import TableProgressive, progressive_parameters_of
from controller.engine.round import DEAD, FOLDED, LIVE, LiveRound
from controller.engine.settings import TableSettings, recovered_config
from controller.engine.settling import RoundToSettle
from controller.engine.shoe_faults import ShoeFaults
from controller.engine.state import LatchedFault, RecoveredState, TableConfig
from controller.journal import entries as e
from controller.progressive.controller import TableSideProgressive
from controller.progressive.model import Hit, ProgressiveParameters
from controller.rules.games import GameSpec
from drivers.events import DealerKey

__all__ = ["ALERT_KINDS", "DEAD", "FOLDED", "LIVE", "TableEngine", "TableView"]


class TableView(NamedTuple):
    """One reading of the table, as ``TableEngine.view()`` gives it: the outside's only way to read the
    engine (the parts read each other through their doors, never through this). The mappings are copies:
    a view never changes after it is taken. A named tuple, not a frozen dataclass: a simulated table's
    daemon takes one for every item it handles, and a tuple is built in a fraction of the time.
    ``round`` is the round in play itself, read-only by convention (its fields change only through its
    own methods, in the engine)."""

    state: str  # the round machine's state as the table shows it (``held`` while held, wherever from)
    held: bool  # a latched fault stands: no round starts
    table_open: bool
    closed_reason: str | None
    latched: Mapping[str, LatchedFault]
    round: LiveRound | None
    config: TableConfig
    spec: GameSpec
    definition: m.RoundDefinition
    spots: Mapping[tuple[int, int], int]  # (seat, spot) -> cents on the spot as the sensors read it
    # Each past-posted spot not yet cleared: (seat, spot, wager, the cents the round holds).
    past_posted_spots: tuple[tuple[int, int, str, int], ...]
    spot_wagers: tuple[str, ...]  # each betting spot's wager, in spot order (the Progressive's last)
    dp_seat: int | None
    dp_offer_seat: int | None
    house_banks: bool
    progressive_controller: TableSideProgressive | None  # None: the game offers no Progressive
    progressive_parameters: ProgressiveParameters | None  # the ones in force (a change applied)


class TableEngine:
    """The synchronous table core (see the module docstring for the API)."""

    def __init__(self, config: TableConfig, recovered: RecoveredState | None = None) -> None:
        """Builds the parts, each with the doors it asks (docs/engine.md "The parts and their doors"): a
        part is given the parts built before it, and the ones built after it by its ``connect``."""
        recovered = recovered or RecoveredState()
        ctx = TableContext(recovered_config(config, recovered), recovered.rounds_started)
        self._ctx = ctx
        # First: its machine calls no part when it is built, and every part asks where the round stands.
        self._flow = flow = RoundFlow(ctx)
        ctx.follow(flow)
        self._faults = faults = Faults(ctx, recovered, flow=flow)
        self._bank = bank = Bank(ctx, recovered)
        self._settings = settings = TableSettings(ctx, recovered, bank=bank)
        self._progressive = progressive = TableProgressive(
            ctx, progressive_parameters_of(config.progressive), recovered.progressive
        )
        self._bets = bets = Bets(ctx, faults=faults, flow=flow, bank=bank, progressive=progressive)
        decisions = Decisions(ctx, spots=bets.spots, faults=faults, flow=flow)
        deal = DealPart(ctx, faults=faults, flow=flow, decisions=decisions)
        shoe_faults = ShoeFaults(ctx, faults=faults, flow=flow, deal=deal)
        deal.connect(shoe_faults=shoe_faults)
        kills = SeatKills(ctx, bets=bets)
        settling = RoundToSettle(ctx, progressive=progressive)
        faults.connect(past_posting=bets, shoe=deal)
        bets.connect(decisions=decisions)
        flow.connect(
            faults=faults,
            settings=settings,
            bank=bank,
            bets=bets,
            deal=deal,
            decisions=decisions,
            progressive=progressive,
            kills=kills,
            settling=settling,
        )
        self._handlers: dict[type, Callable[[Any], None]] = {DealerKey: self._on_dealer_key}
        for part in (settings, faults, bank, bets, kills, decisions, deal, shoe_faults, flow, progressive):
            for kind, handler in part.handlers().items():
                assert kind not in self._handlers, f"{kind.__name__} has two handlers"
                self._handlers[kind] = handler
        if faults.latched:
            flow.fire("hold")
            ctx.take_outputs()  # the hold on start restates the journal; nothing new to record

    # ================================================================== the one entry point
    def handle(self, event: object, now_s: float) -> list[Output]:
        """Feed one domain event from a driver, or an operator action (controller/engine/actions.py);
        returns what to journal, send and show."""
        ctx = self._ctx
        ctx.begin_call(now_s)
        try:
            # (_dispatch, inline: one call fewer for each of the ~100 events of a round)
            handler = self._handlers.get(type(event))
            if handler is None:
                self._dispatch(event)  # refused there
            else:
                handler(event)
        except MachineHalted:
            pass  # already held and journaled by RoundFlow.on_machine_exception
        except Exception as error:  # never out of the engine: hold the table for a supervisor
            self._flow.internal_error(error)
        return ctx.take_outputs()

    def _dispatch(self, event: object) -> None:
        handler = self._handlers.get(type(event))
        if handler is None:
            self._faults.raise_fault(
                "integrity", f"unknown event refused: {type(event).__name__}", latching=False
            )
            return
        handler(event)

    def _on_dealer_key(self, event: DealerKey) -> None:  # noqa: PLR0912 - one branch per dealer key, the keys' table in docs/engine.md
        """The display's keys are the dealer's actions: each is handled as the action it stands for."""
        ctx = self._ctx
        key: str = event.key  # a driver may pass on a key this build does not know
        ctx.journal(e.DealerKey(key=key, seat=event.seat), source=event.device)
        by = "dealer"
        state = ctx.state
        decision_states = ctx.definition.decision_states
        action: object | None = None
        if key == "next":
            next_actions: dict[str, object] = {
                m.IDLE: a.StartRound(by),
                m.BETTING: a.NoMoreBets(by),
                m.PAYING: a.PayoutsDone(by),
            }
            action = a.ConfirmDecisions(by) if state in decision_states else next_actions.get(state)
            if action is None:
                ctx.refuse("next", f"nothing to advance in {state}")
        elif key == "confirm":
            confirm_actions: dict[str, object] = {m.BETTING: a.NoMoreBets(by), m.PAYING: a.PayoutsDone(by)}
            action = a.ConfirmDecisions(by) if state in decision_states else confirm_actions.get(state)
            if action is None:
                ctx.refuse("confirm", f"nothing to confirm in {state}")
        elif key == "fold_seat":
            if event.seat is None:
                ctx.refuse("fold_seat", "no seat given")
            else:
                action = a.FoldSeat(event.seat, by)
        elif key == "kill_seat":
            if event.seat is None:
                ctx.refuse("kill_seat_request", "no seat given")
            else:
                action = a.RequestKillSeat(event.seat, by)
        elif key == "dp_waives":
            action = a.DpWaives(by)
        elif key == "dp_accepts":
            action = self._bank.accept_from_bank_spot(by)
        elif key == "call_floor":
            ctx.alert("info", "call_floor", "the dealer calls a floor supervisor")
        elif key == "void_request":
            ctx.alert("alert", "void_request", "the dealer asks a supervisor to void the round")
        else:
            ctx.refuse(key, "unknown dealer key")
        if action is not None:
            self._dispatch(action)

    # ================================================================== what the table shows
    def view(self) -> TableView:
        """What the table shows now, as one frozen reading (the daemon, the panel's shell, the simulated
        players and the tests read it; no part does). Built on each call: read it again after a call to
        ``handle`` to see the change."""
        ctx = self._ctx
        faults = self._faults
        bets = self._bets
        bank = self._bank
        settings = self._settings
        progressive = self._progressive
        controller = progressive.controller
        return TableView(
            state=ctx.state,
            held=faults.held,
            table_open=settings.table_open,
            closed_reason=settings.closed_reason,
            latched=dict(faults.latched),
            round=ctx.round,
            config=ctx.config,
            spec=ctx.spec,
            definition=ctx.definition,
            spots=dict(bets.spots),
            # Almost always none: the generator is set up only when there is one (half the view's cost).
            past_posted_spots=tuple(
                spot for fault_id, spot in bets.past_posting_spots.items() if bets.spot_still_off(fault_id)
            )
            if bets.past_posting_spots
            else (),
            spot_wagers=ctx.spot_wagers,
            dp_seat=bank.dp_seat,
            dp_offer_seat=bank.dp_offer_seat,
            house_banks=bank.house_banks,
            progressive_controller=controller,
            progressive_parameters=(
                None
                if controller is None or progressive.parameters is None
                else progressive.current_parameters()
            ),
        )

    def why_not_between_rounds(self) -> str | None:
        """None between rounds (when a manager's setting may change), else why not (one line)."""
        return self._settings.why_not_between_rounds()

    def set_progressive_controller(self, controller: TableSideProgressive) -> None:
        """A linked table's hook: the progressive the engine asks (the link client, implementing the
        same table-side API as the stand-alone controller); its ``link_state`` becomes the link's."""
        part = self._progressive
        part.controller = controller
        part.link = controller.link_state

    def resume_progressive_claims(self, claims: Sequence[tuple[str, int, Sequence[Hit]]]) -> None:
        """A linked table's start: the claims an earlier run left unanswered, asked again (the journal's
        ``unanswered_claims``); the floor answers a replay with its first answer."""
        self._progressive.resume_claims(claims)
