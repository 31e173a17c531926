"""The daemon and the journal's segments (docs/journal.md "Segments and seals"): `run` seals a segment
that is due at start, after recovery and before the table opens, and goes on in the next one; and its
background verification finds a sealed segment tampered with and raises a ``journal_error`` alert
(journaled as a fault_raised) while the table opens and plays as usual."""

from __future__ import annotations

import json
from dataclasses import asdict, replace
from pathlib import Path

from controller.daemon import TableDaemon
from controller.journal.chain import canonical_json
from controller.journal.checkpoint import CHECKPOINT_FORMAT, checkpoint_in_format, state_to_checkpoint
from controller.journal.recovery import rebuild_state
from controller.journal.seals import read_seal, seal_file, seal_numbers, segment_file
from controller.journal.segments import verify_segments
from controller.journal.state import TableState
from controller.journal.store import Journal
from tests.daemon.harness import by_round, entries, run_daemon, write_config


def segmented_config(directory: Path, segment_entries: int) -> Path:
    config = write_config(directory, "hcf-house")
    text = config.read_text(encoding="utf-8").replace(
        "[journal]\n", f"[journal]\nsegment_entries = {segment_entries}\nsegment_per_gaming_day = false\n", 1
    )
    config.write_text(text, encoding="utf-8")
    return config


def test_run_seals_a_due_segment_at_start_and_verifies_the_sealed_ones_in_the_background(
    tmp_path: Path,
) -> None:
    config = segmented_config(tmp_path, segment_entries=50)
    journal_path = tmp_path / "journal.sqlite"
    # Sealing while running off: this test is of the seal at a start.
    run_daemon(config, journal_path, rounds=2, timeout_s=120, seal_while_running=False)
    assert seal_numbers(journal_path) == []  # a new journal: nothing due yet at its first start
    first = run_daemon(config, journal_path, rounds=1, timeout_s=120, seal_while_running=False)
    assert seal_numbers(journal_path) == [1]  # due at this start: sealed before the table opened
    assert first.summary.rounds_closed == 1
    with Journal.open_existing(journal_path) as journal:
        assert journal.file.base.segment == 2
        opened = list(journal.entries(kinds=["table_opened"]))
        assert opened[-1].seq > journal.file.base.base_seq  # the table opened in the new segment
    # Segment 1 tampered with: the next start still opens (it reads only the last seal), and the
    # background verification raises the alert.
    sealed = segment_file(journal_path, 1)
    sealed.chmod(0o644)
    data = bytearray(sealed.read_bytes())
    at = data.find(b"chip_count")
    data[at : at + 10] = b"chip_COUNT"
    sealed.write_bytes(bytes(data))
    run_daemon(
        config,
        journal_path,
        timeout_s=120,
        seal_while_running=False,
        stop_when=lambda daemon: daemon.watches.segments_verified is not None,
    )
    alerts = [
        entry
        for entry in entries(journal_path)
        if entry.kind == "fault_raised" and entry.payload["kind"] == "journal_error"
    ]
    assert len(alerts) == 1, [a.payload for a in alerts]
    assert "segment 1" in alerts[0].payload["reason"]["message"]
    assert "sha256 differs" in alerts[0].payload["reason"]["message"]
    assert not verify_segments(journal_path, key=None)[0].ok


def test_run_seals_between_rounds_while_the_table_runs_and_recall_reads_across(tmp_path: Path) -> None:
    """A table that never restarts still seals: with segment_entries = 300 one run of 12 rounds seals
    several segments between rounds; every entry is in exactly one segment, in order, the chain and
    every seal verify, and the panel recalls a round of the first (sealed) segment."""
    from controller.panel.backend import JournalPanelBackend

    config = segmented_config(tmp_path, segment_entries=300)
    journal_path = tmp_path / "journal.sqlite"
    seen: list[int] = []
    live_recall: list[dict[str, object]] = []
    first_rounds: list[str] = []

    def sealed_twice(daemon: TableDaemon) -> bool:
        seals = daemon.ledger.seals.live_seals
        seen[:] = [seal.segment for seal in seals]
        if len(seals) < 2 or daemon.summary.rounds_closed < 8:
            return False
        # The daemon's own journal object (the one the embedded panel holds) followed both switches:
        # it appends in segment 3 and recalls the first round, sealed in segment 1.
        assert daemon.journal.file.base.segment == seals[-1].segment + 1
        first_round = next(iter(daemon.journal.entries(kinds=["round_started"]))).round_id
        assert first_round is not None
        live_recall[:] = JournalPanelBackend(daemon.journal).recall(round_id=first_round)
        first_rounds.append(first_round)
        return True

    run = run_daemon(config, journal_path, timeout_s=300, stop_when=sealed_twice)
    assert run.summary.rounds_closed >= 8
    numbers = seal_numbers(journal_path)
    assert len(numbers) >= 2
    assert numbers == list(range(1, len(numbers) + 1))
    assert seen[:2] == [1, 2]
    verdicts = verify_segments(journal_path, key=None)
    assert all(verdict.ok for verdict in verdicts), [verdict.line for verdict in verdicts]
    all_entries = entries(journal_path)
    assert [entry.seq for entry in all_entries] == list(range(1, len(all_entries) + 1))
    first_seal = read_seal(journal_path, 1)
    assert first_seal is not None
    # No round spans two segments: each round's entries lie within one segment's range.
    for round_entries in by_round(all_entries).values():
        seqs = [entry.seq for entry in round_entries]
        assert (max(seqs) <= first_seal.last_seq) == (min(seqs) <= first_seal.last_seq)
    sealed_round = next(
        entry.round_id
        for entry in all_entries
        if entry.kind == "round_settled" and entry.seq <= first_seal.last_seq
    )
    with Journal.open_existing(journal_path) as journal:
        assert journal.file.base.segment == len(numbers) + 1
        recalled = JournalPanelBackend(journal, read_only=True).recall(round_id=sealed_round)
    assert [item["round_id"] for item in recalled] == [sealed_round]
    assert [item["round_id"] for item in live_recall] == first_rounds


def test_a_seal_while_running_waits_for_a_reader_holding_the_file_and_changes_nothing(
    tmp_path: Path,
) -> None:
    """Another process's connection on the open file (a `flushtable panel` over it): SQLite cannot
    leave WAL mode, so the due seal is deferred, with nothing changed; once the
    reader is gone the next round's end seals it."""
    import sqlite3

    config = segmented_config(tmp_path, segment_entries=300)
    journal_path = tmp_path / "journal.sqlite"
    reader: list[sqlite3.Connection] = []
    deferred: list[str] = []

    def sealed_after_the_reader_left(daemon: TableDaemon) -> bool:
        if not reader and not deferred:
            connection = sqlite3.connect(f"file:{journal_path}?mode=ro", uri=True)
            connection.execute("SELECT COUNT(*) FROM journal").fetchone()
            reader.append(connection)
        if reader and daemon.ledger.seals.live_seal_deferred is not None:
            assert daemon.ledger.seals.live_seals == []
            deferred.append(daemon.ledger.seals.live_seal_deferred)
            reader.pop().close()
        return bool(daemon.ledger.seals.live_seals)

    run = run_daemon(config, journal_path, timeout_s=300, stop_when=sealed_after_the_reader_left)
    assert deferred
    assert "locked" in deferred[0]
    assert run.summary.rounds_closed >= 3  # due after round 3: deferred, then sealed
    assert seal_numbers(journal_path)[:1] == [1]
    verdicts = verify_segments(journal_path, key=None)
    assert all(verdict.ok for verdict in verdicts), [verdict.line for verdict in verdicts]
    all_entries = entries(journal_path)
    assert [entry.seq for entry in all_entries] == list(range(1, len(all_entries) + 1))


def test_a_start_after_a_seal_of_format_1_refolds_once_and_seals_at_once(tmp_path: Path) -> None:
    """A seal the first release of segments wrote (checkpoint format 1, no progressive meter): the next
    start folds the journal whole, opens, and seals the open segment before the table opens although the
    sealing policy does not say so; the new seal is of format 2 and every seal verifies."""
    (tmp_path / "due").mkdir()
    (tmp_path / "not-due").mkdir()
    journal_path = tmp_path / "journal.sqlite"
    due = segmented_config(tmp_path / "due", segment_entries=50)
    not_due = segmented_config(tmp_path / "not-due", segment_entries=500_000)
    # Sealing while running off: this test is of the seals at a start.
    run_daemon(due, journal_path, rounds=2, timeout_s=120, seal_while_running=False)
    run_daemon(due, journal_path, rounds=1, timeout_s=120, seal_while_running=False)
    assert seal_numbers(journal_path) == [1]
    seal = read_seal(journal_path, 1)
    assert seal is not None
    assert seal.checkpoint["format"] == CHECKPOINT_FORMAT
    old = replace(seal, checkpoint=checkpoint_in_format(seal.checkpoint, 1)).keyed(None)
    seal_file(journal_path, 1).chmod(0o644)
    seal_file(journal_path, 1).write_text(json.dumps(asdict(old)), encoding="utf-8")
    started = run_daemon(not_due, journal_path, rounds=1, timeout_s=120, seal_while_running=False)
    assert started.summary.rounds_closed == 1
    assert seal_numbers(journal_path) == [1, 2]  # sealed at once: the refold happens at one start only
    second = read_seal(journal_path, 2)
    assert second is not None
    assert second.checkpoint["format"] == CHECKPOINT_FORMAT
    assert [verdict.ok for verdict in verify_segments(journal_path, key=None)] == [True, True]
    with Journal.open_existing(journal_path) as journal:
        assert canonical_json(state_to_checkpoint(rebuild_state(journal))) == canonical_json(
            state_to_checkpoint(TableState(journal.table_id).apply_all(journal.replay()))
        )
