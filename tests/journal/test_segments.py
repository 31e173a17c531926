"""Sealed segments (docs/journal.md "Segments and seals"), on real SQLite files with the round engine's
own records: the checkpoint folds on exactly as the whole journal does; a start proves the open
segment and the last seal without reading the sealed past; `journal verify --segment/--segments`
finds a sealed segment edited, deleted, reordered, swapped or its seal replaced; a journal written by
the release before segments opens, is sealed and goes on; archived segments are read from the
archive, and recall says where."""

from __future__ import annotations

import contextlib
import importlib.util
import itertools
import json
import os
import shutil
import sqlite3
import stat
import subprocess
import sys
from collections.abc import Callable
from dataclasses import asdict, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from controller.journal import Journal
from controller.journal.anchor import Anchor, write_anchor
from controller.journal.chain import canonical_json
from controller.journal.checkpoint import state_from_checkpoint, state_to_checkpoint
from controller.journal.proof import prepare_for_run, startup_check
from controller.journal.recall import recall_records
from controller.journal.recovery import rebuild_state
from controller.journal.seals import Seal, read_seal, seal_file, seal_numbers, segment_file
from controller.journal.segments import (
    archive_segments,
    gaming_day,
    seal_due,
    seal_open_segment,
    verify_segment,
    verify_segments,
)
from controller.journal.state import TableState
from controller.progressive import model as progressive_model
from tests.journal.mixed import assert_same_state, rounds, write_mixed

KEY = b"0123456789abcdef0123456789abcdef-segments-test"
OTHER_KEY = b"fedcba9876543210fedcba9876543210-another-key"
REPO = Path(__file__).resolve().parents[2]
# The release before segments (the merge of issue 22's review): its store wrote journals with the
# chain trigger that has no base. Its own code writes the fixture journal below.
RELEASE_BEFORE_SEGMENTS = "a0840b0"

_BATCHES: list[list[Any]] = []


def batches() -> list[list[Any]]:
    """Whole rounds as the engine records them (every game, faults included), made once."""
    if not _BATCHES:
        _BATCHES.extend(rounds())
    return _BATCHES


def state_text(state: TableState) -> str:
    return canonical_json(state_to_checkpoint(state))


def anchor_head(path: Path, journal: Journal, key: bytes | None) -> None:
    last = journal.last_entry()
    assert last is not None
    write_anchor(path, Anchor.of(journal.table_id, last.seq, last.hash), key=key)


def seal_now(path: Path, key: bytes | None) -> Seal:
    """Seal as the daemon does at start: the state the journal folds to, the anchor at the end."""
    with Journal.open(path, "T1") as journal:
        state = rebuild_state(journal)
    seal = seal_open_segment(
        path,
        state,
        key=key,
        write_anchor_at_end=lambda seq, hash_hex: write_anchor(path, Anchor.of("T1", seq, hash_hex), key=key),
    )
    assert seal is not None
    return seal


def build(path: Path, parts: list[list[list[Any]]], key: bytes | None = KEY) -> list[Seal]:
    """A journal of ``len(parts)`` segments, all but the last sealed; each part's rounds appended."""
    path.parent.mkdir(parents=True, exist_ok=True)
    prepare_for_run(path, "T1", key=key)
    seals = []
    for index, part in enumerate(parts):
        with Journal.open(path, "T1", synchronous="OFF") as journal:
            for batch in part:
                journal.append_many(batch)
            anchor_head(path, journal, key)
        if index < len(parts) - 1:
            seals.append(seal_now(path, key))
    return seals


def three_segments(path: Path, key: bytes | None = KEY) -> list[Seal]:
    rounds = batches()
    return build(path, [rounds[:4], rounds[4:8], rounds[8:12], rounds[12:]], key)


def test_a_checkpoint_folds_on_exactly_as_the_whole_journal_at_every_cut(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whole states compared (every attribute, the progressive's every field, then the checkpoint's
    JSON), over the engine's rounds with a stand-alone progressive's entries and the software checks
    between them; the meter remembers 6 rounds, so cuts fall before and after it forgets."""
    monkeypatch.setattr(progressive_model, "RECENT_ROUNDS", 6)
    monkeypatch.setattr(progressive_model, "RECENT_PAID_AWARDS", 4)
    with Journal.open(tmp_path / "j.sqlite", "T1", synchronous="OFF") as journal:
        write_mixed(journal, range(len(batches())))
        entries = list(journal.replay())
    kinds = {entry.kind for entry in entries}
    assert {"progressive_contribution", "progressive_award_claimed", "progressive_award_paid"} <= kinds
    assert {"progressive_reset", "progressive_overflow", "progressive_reserve"} <= kinds
    assert {"software_verified", "software_checked", "round_settled"} <= kinds
    assert {"clock_offset", "clock_stepped", "config_checked", "change_proposed", "change_approved"} <= kinds
    whole = TableState("T1").apply_all(entries)
    cuts = range(0, len(entries), 11)  # mid-round cuts too: open rounds, raised faults, dealt cards
    for cut in cuts:
        before = TableState("T1").apply_all(entries[:cut])
        checkpoint = json.loads(canonical_json(state_to_checkpoint(before)))  # through its JSON text
        restored = state_from_checkpoint(checkpoint)
        assert_same_state(restored, before)
        assert_same_state(restored.apply_all(entries[cut:]), whole)
    assert len(cuts) > 50


def test_a_segmented_journal_reads_as_one_and_starts_from_its_last_seal(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite"
    seals = three_segments(path)
    assert [seal.segment for seal in seals] == [1, 2, 3] == seal_numbers(path)
    for before, after in itertools.pairwise(seals):
        assert after.first_seq == before.last_seq + 1
        assert after.prev_hash == before.final_hash
    assert all(seal.mac is not None for seal in seals)
    assert not os.access(segment_file(path, 1), os.W_OK) or os.geteuid() == 0
    assert stat.S_IMODE(segment_file(path, 1).stat().st_mode) == 0o444
    decided = startup_check(path, "T1", key=KEY)
    assert decided.refusal is None, decided.refusal
    assert decided.verdict is not None
    assert "open segment 4" in decided.verdict.line
    with Journal.open_existing(path) as journal:
        every = list(journal.entries())
        assert [entry.seq for entry in every] == list(range(1, len(every) + 1))
        assert journal.entry(seals[0].last_seq) is not None
        assert journal.entry(seals[0].last_seq).hash == seals[0].final_hash  # type: ignore[union-attr]
        started = sum(1 for entry in every if entry.kind == "round_started")
        assert journal.indexes.round_count() == started
        # The start's state (last seal's checkpoint + the open segment) is the whole journal's fold.
        assert state_text(rebuild_state(journal)) == state_text(TableState("T1").apply_all(journal.replay()))
        assert len(journal.last_entries(30, ["round_settled", "round_dead", "round_voided"])) == 12
    assert [verdict.ok for verdict in verify_segments(path, key=KEY)] == [True, True, True]


def test_a_start_never_reads_the_sealed_past(tmp_path: Path) -> None:
    """With every sealed segment's file made unreadable garbage, the start still proves and folds (it
    reads the last seal only); the verification of the sealed segments is what finds them."""
    path = tmp_path / "journal.sqlite"
    three_segments(path)
    for number in seal_numbers(path):
        file = segment_file(path, number)
        file.chmod(0o644)
        file.write_bytes(b"not a journal" * 100)
        file.chmod(0o000)
    decided = startup_check(path, "T1", key=KEY)
    assert decided.refusal is None, decided.refusal
    with Journal.open_existing(path) as journal:
        assert rebuild_state(journal).last_seq == journal.last_entry().seq  # type: ignore[union-attr]
    for number in seal_numbers(path):
        segment_file(path, number).chmod(0o644)
    assert not any(verdict.ok for verdict in verify_segments(path, key=KEY))


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "controller.cli", *args],
        check=False,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )


def key_config(tmp_path: Path, path: Path, key: bytes = KEY) -> Path:
    """A configuration naming the journal and the anchor key (what `journal verify` reads the key from)."""
    from controller.config import DEFAULT_CONFIG_TOML

    key_file = tmp_path / "anchor.key"
    key_file.write_bytes(key)
    config = tmp_path / "table.toml"
    text = DEFAULT_CONFIG_TOML.replace(
        'path = "var/journal.sqlite"', f'path = "{path}"\nanchor_key_file = "{key_file}"'
    ).replace('id = "SIM1"', 'id = "T1"')
    config.write_text(text)
    return config


def _edit_bytes(path: Path, _other: Path) -> None:
    file = segment_file(path, 2)
    file.chmod(0o644)
    data = bytearray(file.read_bytes())
    at = data.find(b"chip_count")  # inside an entry's payload
    data[at : at + 10] = b"chip_COUNT"
    file.write_bytes(bytes(data))


def _edit_with_sqlite(path: Path, _other: Path) -> None:
    """An edit through SQLite itself (triggers dropped): a valid file with one payload changed."""
    file = segment_file(path, 2)
    file.chmod(0o644)
    with contextlib.closing(sqlite3.connect(file, isolation_level=None)) as db:
        db.execute("DROP TRIGGER journal_no_update")
        db.execute("UPDATE journal SET payload = replace(payload, '2500', '2600') WHERE kind = 'bets_locked'")
        db.execute(
            "CREATE TRIGGER journal_no_update BEFORE UPDATE ON journal BEGIN SELECT RAISE(ABORT, "
            "'journal is append-only: UPDATE refused'); END"
        )


def _delete(path: Path, _other: Path) -> None:
    segment_file(path, 2).unlink()


def _delete_with_seal(path: Path, _other: Path) -> None:
    segment_file(path, 2).unlink()
    seal_file(path, 2).unlink()


def _reorder(path: Path, _other: Path) -> None:
    one, two = segment_file(path, 1), segment_file(path, 2)
    spare = one.with_name("spare")
    one.rename(spare)
    two.rename(one)
    spare.rename(two)


def _swap_segment_and_seal(path: Path, other: Path) -> None:
    """Segment 2 and its seal both replaced by another journal's segment 2 (the same table, the same
    key: each verifies by itself)."""
    for source, target in (
        (segment_file(other, 2), segment_file(path, 2)),
        (seal_file(other, 2), seal_file(path, 2)),
    ):
        target.unlink()
        shutil.copyfile(source, target)


def _rewrite_seal(path: Path, key: bytes | None) -> None:
    seal = read_seal(path, 2)
    assert seal is not None
    forged = replace(seal, checkpoint={**seal.checkpoint, "forged": True}).keyed(key)
    seal_file(path, 2).write_text(json.dumps(asdict(forged)))


def _seal_without_key(path: Path, _other: Path) -> None:
    _rewrite_seal(path, None)


def _seal_with_another_key(path: Path, _other: Path) -> None:
    _rewrite_seal(path, OTHER_KEY)


def _seal_with_the_key_but_a_false_checkpoint(path: Path, _other: Path) -> None:
    """Whoever holds the key: a seal whose checkpoint is not what the segment folds to."""
    seal = read_seal(path, 2)
    assert seal is not None
    checkpoint = json.loads(json.dumps(seal.checkpoint))
    checkpoint["state"]["meters"]["handle_cents"] += 100_00
    seal_file(path, 2).write_text(json.dumps(asdict(replace(seal, checkpoint=checkpoint).keyed(KEY))))


TAMPERS: dict[str, tuple[Callable[[Path, Path], None], str]] = {
    "edit": (_edit_bytes, "sha256 differs"),
    "edit through sqlite": (_edit_with_sqlite, "sha256 differs"),
    "delete": (_delete, "missing"),
    "delete with its seal": (_delete_with_seal, "no seal"),
    "reorder": (_reorder, "sha256 differs"),
    "swap a whole segment": (_swap_segment_and_seal, "does not follow"),
    "replace a seal, no key": (_seal_without_key, "not keyed"),
    "replace a seal, another key": (_seal_with_another_key, "does not verify with the anchor key"),
    "a seal with a false checkpoint": (_seal_with_the_key_but_a_false_checkpoint, "checkpoint"),
}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Two journals of the same table and key, four segments each (built once, copied per case)."""
    root = tmp_path_factory.mktemp("segments")
    first, second = root / "a" / "journal.sqlite", root / "b" / "journal.sqlite"
    three_segments(first)
    rounds = batches()
    build(second, [rounds[:3], rounds[3:9], rounds[9:12], rounds[12:]])
    return first, second


@pytest.mark.parametrize("tamper", sorted(TAMPERS))
def test_tampering_with_a_sealed_segment_is_found_by_journal_verify(
    tmp_path: Path, built: tuple[Path, Path], tamper: str
) -> None:
    source, other = built
    shutil.copytree(source.parent, tmp_path / "var", copy_function=shutil.copy)
    path = tmp_path / "var" / source.name
    config = key_config(tmp_path, path)
    assert all(verdict.ok for verdict in verify_segments(path, key=KEY, check_checkpoint=False))
    damage, expected = TAMPERS[tamper]
    damage(path, other)
    verdicts = verify_segments(path, key=KEY)
    bad = [verdict for verdict in verdicts if not verdict.ok]
    assert bad, f"{tamper}: not found"
    assert any(expected in verdict.line for verdict in bad), [verdict.line for verdict in bad]
    if tamper != "reorder":  # (a reorder moves segment 1's file too)
        assert 1 not in [verdict.segment for verdict in bad]  # segment 1 was left alone: still verifies
    result = cli("journal", "verify", "--config", str(config), "--segments")
    assert result.returncode == 1, result.stdout
    assert expected in result.stdout
    assert "[1/3] segment 1: " in result.stdout  # the progress, a line a segment
    one = verify_segment(path, bad[0].segment, key=KEY)  # what `journal verify --segment N` prints
    assert not one.ok
    assert one.line == bad[0].line
    # The start does not read the sealed past: it still opens, unless the last seal itself is touched.
    if tamper.startswith(("replace a seal", "a seal with")) or tamper == "delete with its seal":
        return
    assert startup_check(path, "T1", key=KEY).refusal is None


def test_journal_verify_segment_checks_one_segment_on_its_own(
    tmp_path: Path, built: tuple[Path, Path]
) -> None:
    source, _other = built
    shutil.copytree(source.parent, tmp_path / "var", copy_function=shutil.copy)
    path = tmp_path / "var" / source.name
    config = key_config(tmp_path, path)
    good = cli("journal", "verify", "--config", str(config), "--segment", "2")
    assert good.returncode == 0, good.stdout + good.stderr
    assert good.stdout.startswith("segment 2: ok")
    _edit_bytes(path, path)
    bad = cli("journal", "verify", "--config", str(config), "--segment", "2")
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "sha256 differs" in bad.stdout


def test_the_open_segment_against_the_last_seal_is_proven_at_start(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite"
    three_segments(path)
    _rewrite_seal(path, OTHER_KEY)  # not the last seal: a start does not read it
    assert startup_check(path, "T1", key=KEY).refusal is None
    seal = read_seal(path, 3)
    assert seal is not None
    seal_file(path, 3).write_text(json.dumps(asdict(replace(seal, checkpoint={"forged": 1}).keyed(None))))
    refusal = startup_check(path, "T1", key=KEY).refusal
    assert refusal is not None
    assert "seal of segment 3 is not keyed" in refusal
    seal_file(path, 3).unlink()
    refusal = startup_check(path, "T1", key=KEY).refusal
    assert refusal is not None
    assert "open segment is segment 4, but the last seal is segment 2" in refusal


def test_rolling_the_whole_set_back_is_caught_by_the_anchor(tmp_path: Path) -> None:
    path = tmp_path / "var" / "journal.sqlite"
    rounds = batches()
    build(path, [rounds[:4], rounds[4:8]])
    old = tmp_path / "old"
    shutil.copytree(path.parent, old, copy_function=shutil.copy)
    with Journal.open(path, "T1") as journal:
        journal.append_many(rounds[8])
        anchor_head(path, journal, KEY)
    seal_now(path, KEY)
    anchor = (path.parent / "journal.sqlite.anchor").read_bytes()
    shutil.rmtree(path.parent)
    shutil.copytree(old, path.parent)
    (path.parent / "journal.sqlite.anchor").write_bytes(anchor)  # the anchor is kept apart
    refusal = startup_check(path, "T1", key=KEY).refusal
    assert refusal is not None
    assert "anchored entry missing" in refusal


def old_release_store(tmp_path: Path) -> Any:
    """The journal store of the release before segments, loaded from git as that release shipped it."""
    source = subprocess.run(
        ["git", "show", f"{RELEASE_BEFORE_SEGMENTS}:controller/journal/store.py"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    file = tmp_path / "old_store.py"
    file.write_text(source)
    spec = importlib.util.spec_from_file_location("flushtable_old_store", file)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_a_journal_written_before_segments_opens_is_sealed_and_goes_on(tmp_path: Path) -> None:
    old = old_release_store(tmp_path)
    path = tmp_path / "journal.sqlite"
    rounds = batches()
    with old.Journal.open(path, "T1") as journal:
        for batch in rounds[:5]:
            journal.append_many(batch)
        last = journal.last_entry()
    write_anchor(path, Anchor.of("T1", last.seq, last.hash), key=KEY)
    with contextlib.closing(sqlite3.connect(path)) as db:  # the trigger of its day: no base
        trigger = db.execute("SELECT sql FROM sqlite_schema WHERE name = 'journal_extends_chain'").fetchone()[
            0
        ]
    assert "COALESCE(MAX(seq), 0)" in trigger
    assert "base_seq" not in trigger
    decided = startup_check(path, "T1", key=KEY)
    assert decided.refusal is None, decided.refusal
    with Journal.open(path, "T1") as journal:  # this release appends to it as the first segment
        journal.append_many(rounds[5])
        anchor_head(path, journal, KEY)
    seal = seal_now(path, KEY)
    assert seal.segment == 1
    assert seal.first_seq == 1
    with Journal.open(path, "T1") as journal:
        journal.append_many(rounds[6])
        anchor_head(path, journal, KEY)
        assert journal.file.base.segment == 2
        assert state_text(rebuild_state(journal)) == state_text(TableState("T1").apply_all(journal.replay()))
    assert verify_segment(path, 1, key=KEY).ok
    assert startup_check(path, "T1", key=KEY).refusal is None


def test_sealing_is_due_by_count_or_gaming_day() -> None:
    now = datetime(2026, 12, 5, 7, 0, tzinfo=UTC)
    policy = {"every_entries": 1000, "per_gaming_day": True, "gaming_day_start_utc": "06:00"}
    assert seal_due(0, None, now, **policy) is None  # type: ignore[arg-type]
    assert seal_due(999, "2026-12-05T06:00:00.000000Z", now, **policy) is None  # type: ignore[arg-type]
    assert "1000 entries" in (seal_due(1000, "2026-12-05T06:30:00.000000Z", now, **policy) or "")  # type: ignore[arg-type]
    # 05:59 belongs to the gaming day that began the morning before.
    assert "2026-12-04" in (seal_due(5, "2026-12-05T05:59:00.000000Z", now, **policy) or "")  # type: ignore[arg-type]
    assert gaming_day(datetime(2026, 12, 5, 5, 59, tzinfo=UTC), "06:00") == "2026-12-04"
    assert (
        seal_due(
            5,
            "2026-12-04T07:00:00.000000Z",
            now,
            every_entries=0,
            per_gaming_day=False,
            gaming_day_start_utc="06:00",
        )
        is None
    )


def test_archived_segments_are_read_from_the_archive_and_recall_says_where(tmp_path: Path) -> None:
    path = tmp_path / "var" / "journal.sqlite"
    three_segments(path)
    archive = tmp_path / "archive"
    with Journal.open_existing(path) as journal:
        first_round = next(journal.entries(kinds=["round_settled"])).round_id
        before = [entry.hash for entry in journal.entries()]
    later = datetime.now(UTC) + timedelta(days=400)
    moved = archive_segments(path, archive, retention_days=90, key=KEY, now=later)
    assert [item.segment for item in moved] == [1, 2, 3]
    assert not segment_file(path, 1).exists()
    assert seal_file(path, 1).exists()
    with Journal.open_existing(path) as journal:
        assert [entry.hash for entry in journal.entries()] == before
    assert all(verdict.ok and "archived at" in verdict.line for verdict in verify_segments(path, key=KEY))
    assert startup_check(path, "T1", key=KEY).refusal is None
    assert archive_segments(path, archive, retention_days=90, key=KEY, now=later) == []  # done once
    record = recall_records(path, round_id=first_round)[0]
    assert record["stored"]["segment"] == 1
    assert record["stored"]["archived"]
    assert record["stored"]["file"].startswith(str(archive))
    shown = cli("recall", "--journal", str(path), "--round", str(first_round))
    assert shown.returncode == 0, shown.stderr
    assert f"archived segment 1, read from {archive}" in shown.stderr
