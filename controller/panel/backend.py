"""What the panel needs from the daemon (:class:`PanelBackend`), what it asks of the round engine
(:class:`TableActions`), and :class:`JournalPanelBackend`, the backend over the real journal.

The panel reads only through the backend and acts only through it: the web layer (controller.panel.app)
never sees a journal entry that has not passed the hidden-card gate (controller.panel.view).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import asdict
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

import structlog

from controller.changes import ChangeControl, ChangeDesk, ChangeRefusedError, Work
from controller.engine.actions import ClearFault, OperatorAction
from controller.errors import UserError
from controller.journal import Journal
from controller.journal.entries import Entry, FaultAcknowledged, PanelRequest, public_dict
from controller.journal.recall import recall_from
from controller.journal.state import TableState
from controller.money import MoneyFormat, money
from controller.panel.device_rows import alert_rows, device_rows
from controller.panel.shift_meters import range_meters, theoretical
from controller.panel.view import TableView, public_recall
from controller.waits import wait_event
from drivers.supervisor import DeviceHealth as DeviceHealth  # noqa: PLC0414  (re-exported: one definition)

RECALL_MAX_ROUNDS = 50
REPLAY_MAX_ENTRIES = 5_000  # a browser further behind than this reloads the page instead
SUBSCRIBER_QUEUE_ENTRIES = 2_000


class ActionRefused(UserError):
    """The table cannot do this now (a round is in progress, no such fault, ...): HTTP 409."""


class ActionUnavailable(UserError):
    """No round engine is connected to act on the table (a read-only panel): HTTP 503."""


class NotFound(UserError):
    """No such fault or round: HTTP 404."""


@runtime_checkable
class TableActions(Protocol):
    """The round engine's operator actions, as one call: the daemon connects TableEngine to it.

    ``perform`` carries out one controller.engine.actions dataclass (ClearFault, VoidRound, MoveButton,
    OpenTable, CloseTable, SetLimits, SetPaytable, ...) as ``engine.handle(action, now_s)`` does, and
    returns once the journal holds its effect (fault_cleared, round_voided, button_moved, table_opened,
    table_closed, seat_killed, limits_set, action_refused ..., each with the action's ``by``). A refusal
    raises ActionRefused with the engine's reason (the panel answers 409 with it).
    """

    async def perform(self, action: OperatorAction) -> None: ...


@runtime_checkable
class QueueRunner(Protocol):
    """TableActions that can also run a step of work on the table's one queue (the change control's:
    controller/changes.py ChangeDesk): the daemon's queue, or an engine called directly in tests."""

    async def run(self, work: Work) -> list[Any]: ...


def action_name(action: OperatorAction | type[OperatorAction]) -> str:
    """The journaled name of an action: its class in snake case (ClearFault -> ``clear_fault``)."""
    cls = action if isinstance(action, type) else type(action)
    return "".join(f"_{ch.lower()}" if ch.isupper() else ch for ch in cls.__name__).lstrip("_")


DeviceHealthSource = Callable[[], Sequence[Any]]


class PanelBackend(Protocol):
    """Everything the panel reads and does. Every returned object is JSON-ready and card-safe."""

    @property
    def table_id(self) -> str: ...

    def snapshot(self) -> dict[str, Any]:
        """The table at a glance (no unrevealed card)."""
        ...

    def devices(self) -> list[dict[str, Any]]: ...
    def alerts(self, *, include_cleared: bool = False) -> list[dict[str, Any]]: ...
    def acknowledge_alert(self, fault_id: str, by: str) -> None: ...
    def recall(self, *, last: int | None = None, round_id: str | None = None) -> list[dict[str, Any]]: ...
    def journal_entries(
        self,
        *,
        since_seq: int = 0,
        limit: int = 200,
        kinds: Iterable[str] | None = None,
        round_id: str | None = None,
        source: str | None = None,
        newest_first: bool = True,
    ) -> list[dict[str, Any]]: ...
    def meters(self, *, start_utc: str | None = None, end_utc: str | None = None) -> dict[str, Any]: ...
    async def perform(self, action: OperatorAction) -> None:
        """Carry out one operator action on the engine, journaled as a panel_request with its
        outcome; ActionRefused (409), NotFound (404) or ActionUnavailable (503) when it is not done."""
        ...

    def record(self, kind: str, payload: Mapping[str, Any] | Entry, *, source: str) -> None:
        """Journal a panel event (login, login_failed, panel_request)."""
        ...

    def subscribe(
        self, since_seq: int | None, *, idle_s: float = 15.0
    ) -> AsyncIterator[dict[str, Any] | None]:
        """Card-safe journal entries after ``since_seq`` (None: from now), then live, in seq order;
        None after ``idle_s`` without one (for a keep-alive)."""
        ...

    def health(self) -> dict[str, Any]: ...
    async def start(self) -> None: ...
    async def aclose(self) -> None: ...


class _Subscriber:
    __slots__ = ("overflowed", "queue")

    def __init__(self) -> None:
        self.queue: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue(SUBSCRIBER_QUEUE_ENTRIES)
        self.overflowed = False


def _sealed_state(journal: Journal) -> TableState | str | None:
    """The reducer's state at the open segment's base, from the last seal's checkpoint: None when the
    journal has no seal, or its last seal's checkpoint is of an earlier format (it lacks what the view
    shows, or its meters read a Progressive round's balance otherwise: the whole journal is folded, as
    a start does, which seals it anew); a line saying why when the seal cannot be read (the view is
    then folded from the first entry)."""
    if journal.file.base.segment <= 1:
        return None
    from controller.journal.checkpoint import refold_reason  # noqa: PLC0415
    from controller.journal.seals import read_seal  # noqa: PLC0415 (a journal without seals)

    try:
        seal = read_seal(journal.path, journal.file.base.segment - 1)
        if seal is None or seal.last_seq != journal.file.base.base_seq:
            return (
                f"journal {journal.path}: the seal of segment {journal.file.base.segment - 1} is missing or "
                "does not end where the open segment starts; the panel folded the whole journal"
            )
        if refold_reason(seal.checkpoint) is not None:
            return None
        return seal.state()
    except UserError as error:  # JournalError: a damaged seal; `flushtable journal verify` says more
        return f"{error}; the panel folded the whole journal"


class JournalPanelBackend:
    """The panel over the table's journal: the view is folded from its entries; new entries are
    picked up by a tail task (woken at once by :meth:`notify`, else every ``poll_interval_s``) and
    fanned out to every SSE subscriber, each entry passed through the card gate once."""

    def __init__(  # noqa: PLR0913 - keyword-only injection points (clock, actions, health) the tests set
        self,
        journal: Journal,
        *,
        actions: TableActions | None = None,
        device_health: DeviceHealthSource | None = None,
        poll_interval_s: float = 0.02,
        read_only: bool = False,
        wall_clock_s: Callable[[], float] = time.time,
        changes: ChangeDesk | None = None,
        lapse_after_s: float = 1800.0,
        progressive_live: Callable[[], dict[str, Any] | None] | None = None,
        money_format: MoneyFormat = money,
    ) -> None:
        """``read_only``: ``flushtable panel`` over a journal no daemon of ours controls: nothing is
        written (no login, no acknowledgement, no action) and the page says the table is not live.
        ``wall_clock_s``: the time the read-only page measures the journal's age against.
        ``progressive_live``: a linked table's Progressive card from its link (the meter the floor last
        broadcast, the link's state, this table's pending awards); its journal holds none of these.
        ``money_format``: the property's money (``PropertySettings.money``), in which every sentence the
        backend writes (the event log's rows, the stream's, recall's events) gives its amounts. The
        sentence is written once here, not per page: the stream hands every subscriber one object."""
        if read_only and actions is not None:
            raise ValueError("a read-only panel has no round engine to act on")
        self.read_only = read_only
        self._wall_clock_s = wall_clock_s
        self._journal = journal
        self._actions = actions
        self._device_health = device_health
        self._progressive_live = progressive_live
        self.poll_interval_s = poll_interval_s
        self.money_format = money_format
        self._view = TableView(journal.table_id)
        # In a segmented journal the view starts from the last seal's checkpoint and folds only the
        # open segment, as `flushtable run` does (docs/journal.md "Segments and seals"): a panel process
        # started on a journal of years opens in the time of one segment, never reading the sealed past.
        self.start_error: str | None = None
        start = _sealed_state(journal)
        if isinstance(start, str):
            self.start_error = start  # folded from the first entry instead: slower, the same view
            structlog.get_logger("flushtable.panel").warning("panel_seal_unread", reason=start)
        elif start is not None:
            self._view.state = start
        self._subscribers: set[_Subscriber] = set()
        self._wake = asyncio.Event()
        self._tail_task: asyncio.Task[None] | None = None
        self._closing = False
        self.journal_error: str | None = None
        self._fold_at_start()
        self.refresh()
        # Two-person control (controller/changes.py): the daemon's desk, or one on the actions' queue.
        run = getattr(actions, "run", None)  # a QueueRunner's: the daemon's queue, or an engine
        if changes is None and run is not None:
            control = ChangeControl(journal.table_id, self._view.state.changes, lapse_after_s=lapse_after_s)
            changes = ChangeDesk(control, run)
        self.changes = changes

    @property
    def table_id(self) -> str:
        return self._journal.table_id

    @property
    def last_seq(self) -> int:
        return self._view.state.last_seq

    # --- following the journal ------------------------------------------------------------------
    def _fold_at_start(self) -> None:
        """The view's first fold, with no subscriber to fan out to: the entries typed straight from
        their stored texts (``Journal.replay``, the reducer's way at a start) where ``refresh`` reads
        each as JSON values and then types them again, which was twice the decoding of a start's open
        segment (cProfile of `flushtable panel`'s start on an open segment of 49,052 entries)."""
        try:
            self._view.state.apply_all(self._journal.replay(since_seq=self._view.state.last_seq))
        except UserError as error:  # as refresh: said on /healthz and the panel, never a 500
            self.journal_error = str(error)

    def refresh(self) -> int:
        """Fold in and fan out every entry appended since the last call; how many there were."""
        count = 0
        try:
            for entry in self._journal.entries(since_seq=self._view.state.last_seq):
                self._view.apply(entry)
                count += 1
                if self._subscribers:
                    public = self._view.public_entry(entry, self.money_format)
                    for subscriber in list(self._subscribers):
                        self._offer(subscriber, public)
            self.journal_error = None
        except UserError as error:  # JournalError: shown on /healthz and the panel, never a 500
            self.journal_error = str(error)
        return count

    def _offer(self, subscriber: _Subscriber, item: dict[str, Any] | None) -> None:
        try:
            subscriber.queue.put_nowait(item)
        except asyncio.QueueFull:
            # Too slow a reader: end its stream; its browser reconnects with Last-Event-ID and replays.
            subscriber.overflowed = True
            self._subscribers.discard(subscriber)

    def notify(self) -> None:
        """Tell the panel the journal has new entries (the daemon calls it after an append)."""
        self._wake.set()

    async def _tail(self) -> None:
        while not self._closing:
            await wait_event(self._wake, self.poll_interval_s)
            self._wake.clear()
            self.refresh()

    async def start(self) -> None:
        if self._tail_task is None:
            self._closing = False
            self._tail_task = asyncio.get_running_loop().create_task(self._tail(), name="panel-journal-tail")

    def end_streams(self) -> int:
        """End every open event stream (their browsers reconnect and resume by Last-Event-ID); how many."""
        subscribers = list(self._subscribers)
        for subscriber in subscribers:
            self._offer(subscriber, None)
        self._subscribers.clear()
        return len(subscribers)

    async def aclose(self) -> None:
        self._closing = True
        for subscriber in list(self._subscribers):
            self._offer(subscriber, None)
        self._subscribers.clear()
        if self._tail_task is not None:
            self._tail_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._tail_task
            self._tail_task = None

    async def subscribe(
        self, since_seq: int | None, *, idle_s: float = 15.0
    ) -> AsyncIterator[dict[str, Any] | None]:
        if self._closing:
            return
        subscriber = _Subscriber()
        self._subscribers.add(subscriber)
        try:
            self.refresh()
            replay_upto = self._view.state.last_seq
            last = replay_upto if since_seq is None else max(0, since_seq)
            if replay_upto - last > REPLAY_MAX_ENTRIES or last > replay_upto:
                # Too far behind to replay, or ahead of this journal (another file): start afresh.
                yield {"seq": replay_upto, "kind": "reload", "reason": "cannot resume from that seq"}
                return
            for entry in self._journal.entries(since_seq=last):
                if entry.seq > replay_upto:
                    break
                yield self._view.public_entry(entry, self.money_format)
                last = entry.seq
            while True:
                if subscriber.overflowed and subscriber.queue.empty():
                    return  # dropped for lagging: the browser reconnects with Last-Event-ID
                try:
                    item = await asyncio.wait_for(subscriber.queue.get(), idle_s)
                except TimeoutError:
                    yield None
                    continue
                if item is None:
                    return
                if item["seq"] <= last:
                    continue
                last = item["seq"]
                yield item
        finally:
            self._subscribers.discard(subscriber)

    @property
    def subscriber_count(self) -> int:
        return len(self._subscribers)

    # --- reading --------------------------------------------------------------------------------
    def snapshot(self) -> dict[str, Any]:
        snapshot = self._view.snapshot()
        snapshot["journal_error"] = self.journal_error
        snapshot["actions_connected"] = self._actions is not None
        snapshot["read_only"] = self.read_only
        snapshot["journal_age_s"] = None
        state = self._view.state
        snapshot["changes_pending"] = [p.to_json() for p in state.changes.values() if p.status == "pending"]
        snapshot["clock"] = None if state.clock is None else public_dict(state.clock)
        if self._progressive_live is not None and not self.read_only:
            live = self._progressive_live()
            if live is not None:  # a linked table: the link's meter, not the table journal's
                snapshot["progressive"] = live
        if self.read_only:
            snapshot["held"] = False  # nothing is held by a table that is not running: it is stopped
            last = snapshot.get("last_entry_utc")
            if isinstance(last, str) and last:
                with contextlib.suppress(ValueError):
                    written = datetime.fromisoformat(last.replace("Z", "+00:00")).timestamp()
                    snapshot["journal_age_s"] = max(0.0, self._wall_clock_s() - written)
        return snapshot

    def devices(self) -> list[dict[str, Any]]:
        """Each device's health: the device supervisors' report when connected, else the journal's."""
        health = None if self._device_health is None else self._device_health()
        return device_rows(self._view, health, read_only=self.read_only)

    def alerts(self, *, include_cleared: bool = False) -> list[dict[str, Any]]:
        return alert_rows(self._view, include_cleared=include_cleared)

    def recall(self, *, last: int | None = None, round_id: str | None = None) -> list[dict[str, Any]]:
        """Recall records (controller.journal.recall), newest first, through the card gate."""
        if round_id is not None:
            try:
                records = recall_from(self._journal, round_id=round_id)
            except UserError as error:
                raise NotFound(str(error)) from None
        else:
            count = min(RECALL_MAX_ROUNDS, 10 if last is None else max(1, last))
            records = recall_from(self._journal, last=count)
        return [public_recall(record, self.money_format) for record in reversed(records)]

    def journal_entries(
        self,
        *,
        since_seq: int = 0,
        limit: int = 200,
        kinds: Iterable[str] | None = None,
        round_id: str | None = None,
        source: str | None = None,
        newest_first: bool = True,
    ) -> list[dict[str, Any]]:
        limit = max(1, min(limit, 1000))
        since_seq = max(0, min(since_seq, self._view.state.last_seq))
        kind_list = list(kinds) if kinds else None
        if newest_first and since_seq <= 0:
            # Walk back from the end in windows, so the newest page costs the same on any journal.
            rows: list[dict[str, Any]] = []
            upper = self._view.state.last_seq
            window = max(limit * 4, 500)
            while upper > 0 and len(rows) < limit:
                lower = max(0, upper - window)
                page = [
                    e
                    for e in self._journal.entries(since_seq=lower, round_id=round_id, kinds=kind_list)
                    if e.seq <= upper and (source is None or e.source == source)
                ]
                rows.extend(self._view.public_entry(e, self.money_format) for e in reversed(page))
                upper = lower
            return rows[:limit]
        out = []
        for entry in self._journal.entries(since_seq=since_seq, round_id=round_id, kinds=kind_list):
            if source is not None and entry.source != source:
                continue
            out.append(self._view.public_entry(entry, self.money_format))
            if len(out) >= limit:
                break
        return out

    def meters(self, *, start_utc: str | None = None, end_utc: str | None = None) -> dict[str, Any]:
        """The meters over the whole journal (the reducer's, kept as entries come) plus the chart's
        history; with ``start_utc``/``end_utc``, the same meters over the rounds closed in that range
        (controller.panel.shift_meters), with the theoretical win (the catalogue's, as the floor's)."""
        if start_utc is None or end_utc is None:
            meters = self._view.state.meters
            return {**meters.to_json(), "history": list(meters.history), "range": None}
        folded = range_meters(self._journal, start_utc, end_utc)
        return {
            **folded.meters.to_json(),
            "history": list(folded.meters.history),
            "range": {"start_utc": start_utc, "end_utc": end_utc},
            "theoretical": theoretical(folded),
        }

    def health(self) -> dict[str, Any]:
        return {
            "status": "ok" if self.journal_error is None else "degraded",
            "table_id": self.table_id,
            "last_seq": self._view.state.last_seq,
            "journal_error": self.journal_error,
            "phase": self._view.state.phase,
        }

    # --- acting ---------------------------------------------------------------------------------
    def record(self, kind: str, payload: Mapping[str, Any] | Entry, *, source: str) -> None:
        if self.read_only:
            return  # a read-only panel writes nothing: not even logins (docs/panel.md "Read-only panel")
        self._journal.append(kind, payload, round_id=None, source=source)
        self.refresh()

    def _engine(self) -> TableActions:
        if self.read_only:
            raise ActionUnavailable(
                "this panel is read-only (flushtable panel over a journal): act on the table from the "
                "daemon's own panel (flushtable run --panel)"
            )
        if self._actions is None:
            raise ActionUnavailable("no round engine is connected to this panel (read-only)")
        return self._actions

    def _journal_action(self, action: OperatorAction, outcome: str) -> None:
        detail = {name: value for name, value in asdict(action).items() if name != "by"}
        by = str(getattr(action, "by", "?"))  # every action but Tick (never the panel's) names its operator
        request = PanelRequest(action=action_name(action), by=by, request=detail, outcome=outcome)
        self._journal.append(request.kind, request, round_id=None, source=f"operator:{by}")
        self.refresh()

    async def perform(self, action: OperatorAction) -> None:
        """Run an engine action and journal the request with its user and outcome. A fault that does
        not exist (404) or is cleared already (409) is answered before the engine is asked, unjournaled;
        so is any action on a read-only panel (503), which writes nothing."""
        if self.read_only:
            self._engine()
        if isinstance(action, ClearFault):
            alert = self._alert(action.fault_id)
            if alert.state == "cleared":
                raise ActionRefused(f"fault_id: {action.fault_id!r} is already cleared")
        try:
            await self._engine().perform(action)
        except UserError as error:
            self._journal_action(action, f"refused: {error}")
            if isinstance(error, ActionUnavailable | NotFound | ActionRefused):
                raise
            raise ActionRefused(str(error)) from None
        self._journal_action(action, "done")

    # --- two-person control (controller/changes.py; docs/operations.md "Two-person control") ----------
    def change_list(self) -> list[dict[str, Any]]:
        """Every proposal the journal holds (pending first, then the most recent), newest first."""
        self.refresh()
        proposals = [p.to_json() for p in reversed(self._view.state.changes.values())]
        return sorted(proposals, key=lambda p: p["status"] != "pending")

    def _desk(self) -> ChangeDesk:
        self._engine()  # read-only, or no engine: 503 in its words
        if self.changes is None:
            raise ActionUnavailable("no change control is connected to this panel")
        return self.changes

    async def _change(self, step: Awaitable[Any]) -> Any:
        try:
            return await step
        except ChangeRefusedError as error:
            raise ActionRefused(str(error)) from None
        finally:
            self.refresh()

    async def propose_change(self, change_kind: str, params: Mapping[str, Any], by: str, reason: str) -> str:
        """A manager's proposal: its change_id (journaled change_proposed; nothing applies yet)."""
        change_id: str = await self._change(self._desk().propose(change_kind, params, by, reason))
        return change_id

    async def propose_action(self, action: OperatorAction, change_kind: str) -> str:
        """A declared money-setting action (Set limits, ...) as the proposal it now is: the request
        journaled as a panel_request like every other ("proposed C…", or "refused: …")."""
        params = {name: value for name, value in asdict(action).items() if name != "by"}
        by = str(getattr(action, "by", "?"))
        try:
            change_id = await self.propose_change(change_kind, params, by, "")
        except UserError as error:
            self._journal_action(action, f"refused: {error}")
            raise
        self._journal_action(action, f"proposed {change_id}: applies when a second manager approves it")
        return change_id

    async def approve_change(self, change_id: str, by: str) -> None:
        """A second manager's approval: the change applied (or refused, journaled, 409)."""
        await self._change(self._desk().approve(change_id, by))

    async def reject_change(self, change_id: str, by: str, reason: str) -> None:
        await self._change(self._desk().reject(change_id, by, reason))

    def _alert(self, fault_id: str) -> Any:
        self.refresh()
        alert = self._view.state.alerts.get(fault_id)
        if alert is None:
            raise NotFound(f"fault_id: no fault {fault_id!r}")
        return alert

    def acknowledge_alert(self, fault_id: str, by: str) -> None:
        if self.read_only:
            self._engine()  # refused: a read-only panel journals nothing
        alert = self._alert(fault_id)
        if alert.state == "cleared":
            raise ActionRefused(f"fault_id: {fault_id!r} is already cleared")
        if alert.state in ("acknowledged", "resolved"):
            return  # idempotent: a second tap on a tablet changes nothing
        acknowledged = FaultAcknowledged(fault_id=fault_id, by=by)
        source = f"operator:{by}"
        self._journal.append(acknowledged.kind, acknowledged, round_id=alert.round_id, source=source)
        self.refresh()
