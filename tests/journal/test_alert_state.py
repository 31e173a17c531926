"""A raised fault's `AlertState` keeps its severity and who raised it (``raised_by``), on each path that
sets them: the reducer's fold of the journal's ``fault_raised`` (severity and ``by``), and a start from a
seal, whose checkpoint carries them. The daemon finds a waiting seal's own alerts by ``raised_by``
(controller/daemon_seals.py) and the panel latches by severity: a dropped or mixed-up field would hide a
latched fault or leave a seal's alert open."""

from __future__ import annotations

import json
from pathlib import Path

from controller.daemon_seals import SEAL_WAIT_BY, SealWaitAlerts
from controller.engine import JournalRecord, TableConfig, actions
from controller.journal import Journal
from controller.journal.anchor import Anchor, write_anchor
from controller.journal.chain import canonical_json
from controller.journal.checkpoint import state_from_checkpoint, state_to_checkpoint
from controller.journal.proof import prepare_for_run
from controller.journal.recovery import rebuild_state
from controller.journal.segments import seal_open_segment
from controller.journal.state import TableState
from controller.journal.state_parts import AlertState
from drivers.events import ShufflerFault
from tests.engine.table import Table, stack

TABLE = "T1"  # TableConfig()'s table
KEY = b"0123456789abcdef0123456789abcdef-alert-state-test"

# fault id -> (severity, raised_by): the engine's own latching jam (no one named), then two alerts
# raised by outside watchers, each naming itself.
RAISED = {
    "FT1-000001": ("latching", None),
    "FT1-000002": ("alert", "integrity"),
    "FT1-000003": ("alert", SEAL_WAIT_BY),
}


def faulted_records() -> list[JournalRecord]:
    """The engine's records of a jammed shuffler, an integrity alert and a waiting seal's alert."""
    table = Table(TableConfig(), stack())
    table.event(ShufflerFault("shuffler", "jam"))
    table.call(
        table.engine.handle, actions.RaiseAlert("integrity", "card frequencies", "integrity"), table.now_s
    )
    table.call(
        table.engine.handle,
        actions.RaiseAlert("journal_error", "segment not sealed: waited 30 s", by=SEAL_WAIT_BY),
        table.now_s,
    )
    return table.journal()


def severity_and_raiser(alerts: dict[str, AlertState]) -> dict[str, tuple[str, str | None]]:
    return {fault_id: (alert.severity, alert.raised_by) for fault_id, alert in alerts.items()}


def seal_wait_alerts_resumed(state: TableState) -> list[str]:
    """The fault ids a restarted daemon takes as its waiting seal's, to clear at the next seal."""
    alerts = SealWaitAlerts(submit=lambda _work: None, still_waiting=lambda: False)
    alerts.resume(state.open_alerts)
    return alerts.open


def test_the_fold_of_fault_raised_keeps_its_severity_and_who_raised_it(tmp_path: Path) -> None:
    with Journal.open(tmp_path / "journal.sqlite", TABLE, synchronous="OFF") as journal:
        journal.append_many(faulted_records())
        state = TableState(TABLE).apply_all(journal.replay())

    assert severity_and_raiser(state.alerts) == RAISED
    assert severity_and_raiser(state.open_alerts) == RAISED
    assert list(state.latched_faults) == ["FT1-000001"]
    assert seal_wait_alerts_resumed(state) == ["FT1-000003"]


def test_the_checkpoint_carries_severity_and_who_raised_it(tmp_path: Path) -> None:
    with Journal.open(tmp_path / "journal.sqlite", TABLE, synchronous="OFF") as journal:
        journal.append_many(faulted_records())
        folded = TableState(TABLE).apply_all(journal.replay())

    checkpoint = json.loads(canonical_json(state_to_checkpoint(folded)))
    carried = checkpoint["state"]["alert_states"]
    assert {fault_id: (a["severity"], a["raised_by"]) for fault_id, a in carried.items()} == RAISED
    restored = state_from_checkpoint(checkpoint)
    assert severity_and_raiser(restored.alerts) == RAISED
    assert severity_and_raiser(restored.open_alerts) == RAISED
    assert severity_and_raiser(restored.latched_faults) == {"FT1-000001": RAISED["FT1-000001"]}


def test_a_start_from_the_seal_keeps_severity_and_who_raised_it(tmp_path: Path) -> None:
    """The faults sealed into segment 1: the start reads them from the seal's checkpoint only."""
    path = tmp_path / "journal.sqlite"
    prepare_for_run(path, TABLE, key=KEY)
    with Journal.open(path, TABLE, synchronous="OFF") as journal:
        journal.append_many(faulted_records())
        last = journal.last_entry()
        assert last is not None
        write_anchor(path, Anchor.of(TABLE, last.seq, last.hash), key=KEY)
        folded = TableState(TABLE).apply_all(journal.replay())
    sealed = seal_open_segment(
        path,
        folded,
        key=KEY,
        write_anchor_at_end=lambda seq, hash_hex: write_anchor(
            path, Anchor.of(TABLE, seq, hash_hex), key=KEY
        ),
    )
    assert sealed is not None

    with Journal.open(path, TABLE) as journal:
        assert journal.file.base.segment == 2  # the faults are in the sealed past
        started = rebuild_state(journal)
    assert severity_and_raiser(started.alerts) == RAISED
    assert list(started.latched_faults) == ["FT1-000001"]
    assert seal_wait_alerts_resumed(started) == ["FT1-000003"]
