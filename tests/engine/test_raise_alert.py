"""`RaiseAlert`: an outside watcher (the daemon's integrity watch) raises an alert through
the engine's own fault machinery: a `fault_raised` of severity "alert" with the engine's next fault id,
the table's (no round id), never latching; unknown kinds and empty details are refused."""

from __future__ import annotations

from controller.engine import Alert, JournalRecord, Refused, TableConfig, actions
from drivers.events import ShufflerFault
from tests.engine.table import Table, recovered_state, stack
from tests.engine.test_rounds import HCF_DEALER, HCF_SEAT1, HCF_SEAT3
from tests.engine.test_table_behaviour import bet_and_lock, closing


def hcf_table() -> Table:
    return Table(TableConfig(), stack(HCF_SEAT1, HCF_SEAT3, HCF_DEALER))


def test_raise_alert_between_rounds_journals_an_alert_fault_and_does_not_hold() -> None:
    table = hcf_table()
    out = table.call(
        table.engine.handle, actions.RaiseAlert("integrity", "card frequencies (p = 1.0e-09)"), table.now_s
    )
    records = [o for o in out if isinstance(o, JournalRecord)]
    assert [r.kind for r in records] == ["fault_raised"]
    assert records[0].round_id is None
    assert records[0].source == "engine"
    assert dict(records[0].payload) == {
        "fault_id": "FT1-000001",
        "kind": "integrity",
        "severity": "alert",
        "reason": {"code": "integrity_check", "message": "card frequencies (p = 1.0e-09)"},
        "device": None,
        "by": "integrity",
    }
    assert [o for o in out if isinstance(o, Alert)] == [
        Alert("alert", "integrity", "card frequencies (p = 1.0e-09)", None, "FT1-000001")
    ]
    assert not table.engine.view().held
    assert table.engine.view().state == "idle"
    assert recovered_state(table.engine).latched_faults == ()
    # The table plays on: a round starts as before.
    bet_and_lock(table)
    assert table.journal("round_started")


def test_raise_alert_during_a_round_is_the_tables_and_the_round_settles() -> None:
    table = hcf_table()
    bet_and_lock(table)
    round_id = table.payload("round_started")["round_id"]
    assert table.engine.view().state == "decisions"
    out = table.call(
        table.engine.handle, actions.RaiseAlert("integrity", "flush lengths (p = 2.0e-06)"), table.now_s
    )
    (record,) = [o for o in out if isinstance(o, JournalRecord)]
    assert record.round_id is None  # about the table's cards over many rounds, not this round
    (alert,) = [o for o in out if isinstance(o, Alert)]
    assert alert.round_id is None
    assert table.engine.view().state == "decisions"
    table.bet(1, "raise", 500)
    table.key("fold_seat", 3)
    table.key("confirm")
    closing(table, "round_settled")
    assert [r.round_id for r in table.journal("round_settled")] == [round_id]
    assert not table.engine.view().held


def test_raise_alert_ids_continue_the_engines_fault_numbering() -> None:
    table = hcf_table()
    table.event(ShufflerFault("shuffler", "jam"))  # FT1-000001, latching
    table.call(table.engine.handle, actions.RaiseAlert("integrity", "first", "integrity"), table.now_s)
    table.call(
        table.engine.handle, actions.RaiseAlert("shuffler_fault", "second", "surveillance"), table.now_s
    )
    raised = [r.payload for r in table.journal("fault_raised")]
    assert [p["fault_id"] for p in raised] == ["FT1-000001", "FT1-000002", "FT1-000003"]
    assert [p.get("by") for p in raised] == [None, "integrity", "surveillance"]
    assert [p["severity"] for p in raised] == ["latching", "alert", "alert"]
    # Only the jam latches: clearing it frees the table; the alerts have nothing to clear.
    assert [f.fault_id for f in recovered_state(table.engine).latched_faults] == ["FT1-000001"]
    assert recovered_state(table.engine).faults_raised == 3


def test_raise_alert_refuses_an_unknown_kind_or_an_empty_detail_and_journals_nothing() -> None:
    table = hcf_table()
    for kind, detail, field in [
        ("cheating", "looks odd", "kind"),
        ("", "looks odd", "kind"),
        ("integrity", "   ", "detail"),
    ]:
        out = table.call(table.engine.handle, actions.RaiseAlert(kind, detail), table.now_s)
        assert [o for o in out if isinstance(o, JournalRecord)] == []
        assert [o for o in out if isinstance(o, Alert)] == []
        (refused,) = [o for o in out if isinstance(o, Refused)]
        assert refused.action == "raise_alert"
        assert refused.reason.startswith(f"{field}: ")
    out = table.call(table.engine.handle, actions.RaiseAlert("integrity", "ok", ""), table.now_s)
    (refused,) = [o for o in out if isinstance(o, Refused)]
    assert refused.reason.startswith("by: ")
    assert recovered_state(table.engine).faults_raised == 0
    assert not table.engine.view().held
