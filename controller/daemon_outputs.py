"""What the daemon does with a call's outputs once DaemonJournal has committed their records
(controller/daemon_journal.py hands them back, journal first): the devices' commands sent, alerts and
refusals logged, and each round that closes counted in the run's summary, printed when asked, and
checked against the run's bounds (an integrity check every N rounds, a stop after N rounds).

``CommittedOutputs`` is given the few things it acts on: the run (``RunsTheTable``: its summary,
options, output stream, configuration, journal and stop), the devices' send and the integrity check's
start. It holds no engine: the outputs say everything it needs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol, TextIO

import structlog

from controller.config import TableConfig
from controller.daemon_start import RunOptions, RunSummary
from controller.engine import Alert, JournalRecord, Refused
from controller.engine.outputs import Output
from controller.journal import entries
from controller.journal.closing_entries import CLOSING_ENTRIES
from controller.journal.recall import recall_from
from controller.journal.render import render_record
from controller.journal.state_parts import Meters
from controller.journal.store import Journal
from controller.logs import bind_round
from drivers.events import DomainCommand

log = structlog.get_logger("flushtable.daemon")


class RunsTheTable(Protocol):
    """What the committed outputs read and ask of the daemon's run (``TableDaemon`` is one)."""

    summary: RunSummary
    options: RunOptions
    out: TextIO
    config: TableConfig

    @property
    def journal(self) -> Journal: ...

    def request_stop(self) -> None: ...


class CommittedOutputs:
    """The outputs of one commit, acted on in order (``act``), once their records are in the journal."""

    def __init__(
        self,
        run: RunsTheTable,
        *,
        send: Callable[[DomainCommand], None],
        start_integrity_check: Callable[[], None],
    ) -> None:
        self._run = run
        self._send = send
        self._start_integrity_check = start_integrity_check

    def act(self, outputs: Sequence[Output]) -> None:
        records = [item for item in outputs if isinstance(item, JournalRecord)]
        for item in outputs:
            if isinstance(item, JournalRecord):
                continue
            if isinstance(item, Alert):
                log.warning(
                    "alert",
                    kind=item.kind,
                    severity=item.severity,
                    message=item.message,
                    round_id=item.round_id,
                )
            elif isinstance(item, Refused):
                log.info("refused", action=item.action, reason=item.reason)
            else:
                self._send(item)
        for record in records:
            self._after_record(record)

    def _after_record(self, record: JournalRecord) -> None:
        # Read as the typed entry the engine built (not its payload merged back into a dict).
        entry = record.entry
        if isinstance(entry, entries.RoundStarted):
            bind_round(record.round_id)
        if not isinstance(entry, CLOSING_ENTRIES):
            return
        bind_round(None)
        run = self._run
        summary = run.summary
        # Counted by how it closed through the one meters fold (Meters.count, the reducer's).
        closed = Meters()
        closed.count(entry, str(record.round_id))
        summary.rounds_settled += closed.rounds_settled
        summary.rounds_dead += closed.rounds_dead
        summary.rounds_voided += closed.rounds_voided
        settlement = entry.settlement  # the public settlement: banker_net and rake are in it
        log.info(
            record.kind,
            round_id=record.round_id,
            banker_net=settlement.get("banker_net"),
            rake=settlement.get("rake"),
            rounds=summary.rounds_closed,
        )
        options = run.options
        if options.print_rounds:
            for recalled in recall_from(run.journal, round_id=record.round_id):
                prop = run.config.property_settings
                print(render_record(recalled, prop.money, prop), file=run.out, flush=True)
        every = options.integrity_every_rounds
        if every > 0 and summary.rounds_closed % every == 0:
            self._start_integrity_check()
        if options.rounds is not None and summary.rounds_closed >= options.rounds:
            run.request_stop()
