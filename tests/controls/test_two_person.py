"""Two-person control (controller/changes.py) on the real round engine and a real journal: a change is
proposed by one manager and applies only when a second approves, between rounds; the proposer cannot
approve their own; a proposal lapses on the table's clock (injected: the engine tests' clock, moved by
the test) and never applies; every step is journaled and the state folds back from the journal."""

from __future__ import annotations

from pathlib import Path

import pytest

from controller.changes import (
    CHANGE_KINDS,
    ChangeControl,
    ChangeDesk,
    ChangeKind,
    ChangeRefusedError,
    Params,
    check_configuration,
    register_change_kind,
    via_engine_action,
)
from controller.engine import JournalRecord, Output, TableConfig
from controller.engine import actions as a
from controller.journal import Journal
from controller.journal.state import TableState
from controller.rules.paytables import DEFAULT_PRESET
from tests.device_harness.leaks import run_async
from tests.engine.table import Table, stack
from tests.engine.test_rounds import HCF_DEALER, HCF_SEAT1, HCF_SEAT3

LAPSE_S = 600.0


class JournaledTable(Table):
    """The engine tests' table; every output's journal record appended to a real journal."""

    def __init__(self, journal: Journal) -> None:
        super().__init__(TableConfig(config_digest="d1"), stack(HCF_SEAT1, HCF_SEAT3, HCF_DEALER))
        self.journal_file = journal

    def carry_out(self, outputs: list[Output]) -> None:
        for output in outputs:
            if isinstance(output, JournalRecord):
                self.journal_file.append(
                    output.kind, output.entry, round_id=output.round_id, source=output.source
                )


@pytest.fixture
def desk(tmp_path: Path) -> tuple[JournaledTable, ChangeDesk]:
    table = JournaledTable(Journal.open(tmp_path / "journal.sqlite", "T1"))

    async def run(work: object) -> list[Output]:
        outputs: list[Output] = work(table.engine, table.now_s)  # type: ignore[operator]
        table.carry_out(outputs)
        return outputs

    return table, ChangeDesk(ChangeControl("T1", {}, lapse_after_s=LAPSE_S), run)


def flush_paytable(table: Table) -> object:
    return table.engine.view().config.paytables.get(
        "flush", DEFAULT_PRESET[("high-card-flush", "house", "flush")]
    )


def folded(journal: Journal) -> TableState:
    state = TableState("T1")
    for entry in journal.entries():
        state.apply(entry)
    return state


def test_a_paytable_change_applies_only_when_a_second_manager_approves(
    desk: tuple[JournaledTable, ChangeDesk],
) -> None:
    table, changes = desk
    change_id = run_async(
        lambda: changes.propose("paytable", {"wager": "flush", "spec": "hcf-flush-dp"}, "max", "promo")
    )
    assert flush_paytable(table) == "hcf-flush-house"  # proposed: nothing applies
    with pytest.raises(ChangeRefusedError, match="max proposed CT1-0001; a second, different manager"):
        run_async(lambda: changes.approve(change_id, "max"))
    assert flush_paytable(table) == "hcf-flush-house"  # self-still nothing
    run_async(lambda: changes.approve(change_id, "mia"))
    assert flush_paytable(table) == "hcf-flush-dp"
    kinds = [(entry.kind, entry.source) for entry in table.journal_file.entries()]
    assert kinds == [
        ("change_proposed", "changes"),
        ("change_refused", "changes"),
        ("change_approved", "changes"),
        ("paytable_set", "operator:mia"),  # the engine's own record of the setting, in one commit
    ]
    proposed, refused, approved, applied = table.journal_file.entries()
    assert proposed.payload["by"] == "max"
    assert proposed.payload["reason"] == "promo"
    assert refused.payload == {
        "change_id": "CT1-0001",
        "by": "max",
        "reason": "max proposed CT1-0001; a second, different manager must approve it",
        "closed": False,
    }
    assert (approved.payload["proposed_by"], approved.payload["by"]) == ("max", "mia")
    assert applied.payload["after"] == "hcf-flush-dp"
    assert applied.payload["before"] == "hcf-flush-house"
    # The state folds back from the journal (a restart keeps it).
    (proposal,) = folded(table.journal_file).changes.values()
    assert (proposal.status, proposal.proposed_by, proposal.closed_by) == ("approved", "max", "mia")
    with pytest.raises(ChangeRefusedError, match="CT1-0001 is approved"):  # once only
        run_async(lambda: changes.approve(change_id, "zoe"))


def test_a_lapsed_proposal_never_applies(desk: tuple[JournaledTable, ChangeDesk]) -> None:
    table, changes = desk
    late = run_async(
        lambda: changes.propose("limits", {"min_ante_cents": 1000, "max_ante_cents": 20000}, "max", "")
    )
    swept = run_async(
        lambda: changes.propose("paytable", {"wager": "flush", "spec": "hcf-flush-dp"}, "max", "")
    )
    table.now_s += LAPSE_S - 1
    assert changes.control.lapse_due(table.now_s) == []  # not yet
    table.now_s += 1  # the table's clock reaches the lapse time
    with pytest.raises(ChangeRefusedError, match=f"{late} lapsed at .*; it never applies"):
        run_async(lambda: changes.approve(late, "mia"))
    run_async(changes.lapse_due)  # the daemon's watch: the other one lapses too
    with pytest.raises(ChangeRefusedError, match=f"{swept} is lapsed"):
        run_async(lambda: changes.approve(swept, "mia"))
    assert table.engine.view().config.min_ante_cents != 1000
    assert flush_paytable(table) == "hcf-flush-house"
    lapsed = [entry.payload["change_id"] for entry in table.journal_file.entries(kinds=["change_lapsed"])]
    assert lapsed == [late, swept]
    assert list(table.journal_file.entries(kinds=["change_approved", "paytable_set"])) == []
    assert {p.status for p in folded(table.journal_file).changes.values()} == {"lapsed"}


def test_an_approval_waits_for_the_round_to_end(desk: tuple[JournaledTable, ChangeDesk]) -> None:
    table, changes = desk
    change_id = run_async(
        lambda: changes.propose("limits", {"min_ante_cents": 1000, "max_ante_cents": 20000}, "max", "")
    )
    table.start()
    table.bet(1, "ante", 500)
    with pytest.raises(ChangeRefusedError, match="only between rounds"):
        run_async(lambda: changes.approve(change_id, "mia"))
    assert changes.control.proposals[change_id].status == "pending"  # still stands
    table.call(table.engine.handle, a.VoidRound("sam", "test"), table.now_s)
    run_async(lambda: changes.approve(change_id, "mia"))
    assert (table.engine.view().config.min_ante_cents, table.engine.view().config.max_ante_cents) == (
        1000,
        20000,
    )


def test_bad_proposals_and_rejections(desk: tuple[JournaledTable, ChangeDesk]) -> None:
    table, changes = desk
    with pytest.raises(ChangeRefusedError, match="change_kind: 'rake_free' is not one of"):
        run_async(lambda: changes.propose("rake_free", {}, "max", ""))
    with pytest.raises(ChangeRefusedError, match=r"spec: .*unknown paytable preset"):
        run_async(lambda: changes.propose("paytable", {"wager": "flush", "spec": "nope"}, "max", ""))
    with pytest.raises(ChangeRefusedError, match="min_ante_cents: Input should be a valid integer"):
        run_async(
            lambda: changes.propose("limits", {"min_ante_cents": "10", "max_ante_cents": 20}, "max", "")
        )
    change_id = run_async(
        lambda: changes.propose("bonus_limit", {"wager": "flush", "max_cents": 2500}, "max", "")
    )
    run_async(lambda: changes.reject(change_id, "mia", "not this week"))
    with pytest.raises(ChangeRefusedError, match="is rejected"):
        run_async(lambda: changes.approve(change_id, "zoe"))
    refused = [entry.payload for entry in table.journal_file.entries(kinds=["change_refused"])]
    assert [r["closed"] for r in refused] == [True, True, True, True, False]  # the rejection closes it
    assert all("\n" not in str(r["reason"]) for r in refused)


def test_a_new_kind_plugs_in_through_the_registry(desk: tuple[JournaledTable, ChangeDesk]) -> None:
    """How another kind (the progressive parameters) joins: a params model, words, an apply."""
    table, changes = desk

    class CloseParams(Params):
        reason: str

    register_change_kind(
        ChangeKind(
            "close_for_test",
            "Close the table (test kind)",
            CloseParams,
            lambda p: f"close: {p.reason}",
            via_engine_action(lambda p, by: a.CloseTable(by, p.reason)),
        )
    )
    try:
        change_id = run_async(lambda: changes.propose("close_for_test", {"reason": "end of day"}, "max", ""))
        assert table.engine.view().table_open
        run_async(lambda: changes.approve(change_id, "mia"))
        assert not table.engine.view().table_open
    finally:
        del CHANGE_KINDS["close_for_test"]


def test_the_configuration_check_alerts_on_an_unapproved_change_and_not_on_an_approved_one() -> None:
    first = check_configuration(
        source="t.toml",
        file_sha256="a" * 64,
        config_digest="d1",
        settings={"limits": {"max_ante_cents": 10000}},
        previous=None,
        approved_files={},
    )
    assert first.alert is None
    assert first.entry.changed == []
    previous = first.entry
    edited = check_configuration(
        source="t.toml",
        file_sha256="b" * 64,
        config_digest="d2",
        settings={"limits": {"max_ante_cents": 20000}},
        previous=previous,
        approved_files={},
    )
    assert edited.entry.changed == ["limits.max_ante_cents: 10000 -> 20000"]
    assert edited.entry.unapproved is True
    assert edited.alert == (
        "the configuration t.toml changed since the last start with no approved change: "
        "limits.max_ante_cents: 10000 -> 20000"
    )
    approved = check_configuration(
        source="t.toml",
        file_sha256="b" * 64,
        config_digest="d2",
        settings={"limits": {"max_ante_cents": 20000}},
        previous=previous,
        approved_files={"b" * 64: "CT1-0007"},
    )
    assert approved.alert is None
    assert approved.entry.approved_change == "CT1-0007"
    comment = check_configuration(
        source="t.toml",
        file_sha256="c" * 64,
        config_digest="d1",
        settings={"limits": {"max_ante_cents": 10000}},
        previous=previous,
        approved_files={},
    )
    assert comment.entry.changed == ["the file's text changed; the effective settings did not"]
    assert comment.alert is not None  # a controlled file: any edit counts


def test_the_progressive_parameters_go_through_the_progressives_own_function(
    desk: tuple[JournaledTable, ChangeDesk],
) -> None:
    """The `progressive` kind reaches the engine's SetProgressiveParameters (the progressive's one
    function); on a table without a Progressive it is refused there, in its words, and never applies."""
    table, changes = desk
    change_id = run_async(
        lambda: changes.propose("progressive", {"parameters": {"base_cents": 100}}, "max", "")
    )
    with pytest.raises(ChangeRefusedError, match="not applied: this table offers no Progressive wager"):
        run_async(lambda: changes.approve(change_id, "mia"))
    assert changes.control.proposals[change_id].status == "rejected"
    assert list(table.journal_file.entries(kinds=["change_approved"])) == []
