"""A progressive table's journal written by the release before schema 4 (its totals and its seal's
checkpoint left the progressive's net out of each round's balance, so they list every round with a
Progressive wager unbalanced) reads balanced with this release, before and after it is opened to append:
read as it is (its schema-3 totals folded where they hold a Progressive wager), migrated (its open
segment's totals made again), started from its seal (the sealed past refolded once, as the seal's
reading is not this release's), sealed anew (format 4), and every seal still verifies (the format-3
seal by the reading it was written with: nothing a seal signs is rewritten).

The old journal is written by that release's own code (``git archive`` of its commit, run in a
subprocess): its engine's rounds, its journal, its seal."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import sqlite3
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from controller.cli import main
from controller.journal import Journal
from controller.journal.anchor import Anchor, write_anchor
from controller.journal.chain import canonical_json
from controller.journal.checkpoint import refold_reason, state_to_checkpoint
from controller.journal.meters import compute_meters
from controller.journal.recovery import rebuild_state
from controller.journal.seals import read_seal, seal_file
from controller.journal.segments import seal_open_segment, verify_segments
from controller.journal.state import TableState
from tests.journal.test_segments import key_config

REPO = Path(__file__).resolve().parents[2]
# The release before the progressive's net was counted (the commit this change started from).
RELEASE_BEFORE_PROGRESSIVE_NET = "8ec31aa"
KEY = b"0123456789abcdef0123456789abcdef-upgrade-test"

# Run by the old release (its tree on sys.path): a Top Flush table with the Progressive, 12 rounds, the
# first 6 sealed (format-3 seal, schema-3 segment), the rest in the open segment (schema 3).
OLD_RELEASE_WRITER = """
import random, sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from controller.engine import TableConfig
from controller.journal import Journal
from controller.journal.anchor import Anchor, write_anchor
from controller.journal.proof import prepare_for_run
from controller.journal.recovery import rebuild_state
from controller.journal.segments import seal_open_segment
from tests.engine.table import Table, stack
from tests.progressive.test_table_progressive import (
    DEALER, NOTHING, NOTHING_2, PARAMETERS, THREE_CARD_SF, play, progressive,
)

path, key = Path(sys.argv[1]), sys.argv[2].encode()
rng = random.Random(29)
table = Table(TableConfig(game="top-flush", progressive=PARAMETERS, table_id="T1"), [])
for number in range(12):
    if number == 0:
        table.deck = stack(THREE_CARD_SF, NOTHING, NOTHING_2, DEALER)
    else:
        table.deck = list(range(52))
        rng.shuffle(table.deck)
    table.next_card = 0
    playing = {seat: 100 for seat in (1, 2, 3) if number == 0 or rng.random() < 0.7}
    play(table, playing)
    table.key("next")
    for seat in (1, 2, 3):
        table.bet(seat, "ante", 0)
        table.bet(seat, "play", 0)
        if seat in playing:
            progressive(table, seat, 0)
batches, current = [], []
for record in table.journal():
    current.append(record)
    if record.kind in ("round_settled", "round_dead", "round_voided"):
        batches.append(current)
        current = []
moment = [datetime(2026, 12, 1, 9, 0, tzinfo=UTC)]
def clock():
    moment[0] += timedelta(seconds=7)
    return moment[0]
prepare_for_run(path, "T1", key=key)
for part, seal in ((batches[:6], True), (batches[6:], False)):
    with Journal.open(path, "T1", clock=clock) as journal:
        for batch in part:
            journal.append_many(batch)
        last = journal.last_entry()
        write_anchor(path, Anchor.of("T1", last.seq, last.hash), key=key)
    if seal:
        with Journal.open(path, "T1", clock=clock) as journal:
            state = rebuild_state(journal)
        seal_open_segment(
            path, state, key=key,
            write_anchor_at_end=lambda seq, h: write_anchor(path, Anchor.of("T1", seq, h), key=key),
        )
"""


def old_release_tree(into: Path) -> Path:
    """The old release's files (the product and the test helpers its writer uses), from git."""
    archive = subprocess.run(
        ["git", "archive", "--format=tar", RELEASE_BEFORE_PROGRESSIVE_NET],
        cwd=REPO,
        capture_output=True,
        check=True,
        timeout=120,
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into


def write_with_old_release(tmp_path: Path) -> Path:
    tree = old_release_tree(tmp_path / "old")
    path = tmp_path / "var" / "journal.sqlite"
    path.parent.mkdir()
    script = tmp_path / "write_old.py"
    script.write_text(OLD_RELEASE_WRITER)
    done = subprocess.run(
        [sys.executable, str(script), str(path), KEY.decode()],
        check=False,
        cwd=tree,
        env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE": "1"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return path


def user_version(path: Path) -> int:
    with sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True) as connection:
        return int(connection.execute("PRAGMA user_version").fetchone()[0])


def stored_unbalanced_rows(path: Path) -> int:
    with sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True) as connection:
        rows = connection.execute(
            "SELECT COUNT(*) FROM journal_totals WHERE period = 'all' AND key LIKE 'unbalanced%'"
        ).fetchone()
        return int(rows[0])


def meters_json(path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, object]]:
    code = main(["meters", "--journal", str(path), "--json"])
    return code, json.loads(capsys.readouterr().out)


def test_an_old_progressive_journal_balances_migrates_restarts_and_every_seal_verifies(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_with_old_release(tmp_path)
    old_seal = read_seal(path, 1)
    assert old_seal is not None
    assert old_seal.checkpoint["format"] == 3
    # What the old release wrote: its totals and its seal name the Progressive rounds unbalanced.
    assert user_version(path) == 3
    assert stored_unbalanced_rows(path) > 0
    assert old_seal.checkpoint["state"]["meters"]["unbalanced_rounds"]
    assert refold_reason(old_seal.checkpoint) is not None
    sealed_files = sorted(p for p in path.parent.rglob("*.sqlite") if p != path)
    assert sealed_files
    sealed_digests = {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in sealed_files}
    seal_text = seal_file(path, 1).read_bytes()

    # Read as it is (schema 3, not migrated): balanced, the schema-3 totals folded.
    code, shown = meters_json(path, capsys)
    assert (code, shown["balanced"], shown["unbalanced_rounds"]) == (0, True, [])
    progressive_net = shown["progressive_net_cents"]
    assert isinstance(progressive_net, int)
    assert progressive_net != 0
    assert user_version(path) == 3  # reading changed nothing
    # The format-3 seal verifies, by the reading it was written with; so do the stored totals.
    assert [verdict.ok for verdict in verify_segments(path, key=KEY)] == [True]
    config = key_config(tmp_path, path, KEY)
    assert main(["journal", "verify", "--config", str(config), "--totals"]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("totals: ")]
    assert len(lines) == 2
    assert all("as schema 3 counted them" in line for line in lines), lines

    # Opened to append: the open segment is migrated (its totals made again), the sealed one is not.
    with Journal.open(path, "T1") as journal:
        assert journal.file.schema_version == 4
        assert compute_meters(journal).to_json() == shown | {"rounds_open": 0}
        # A start from the format-3 seal refolds the sealed past: the whole fold, this release's meters.
        started = rebuild_state(journal)
        whole = TableState("T1").apply_all(journal.replay())
        assert canonical_json(state_to_checkpoint(started)) == canonical_json(state_to_checkpoint(whole))
        assert started.meters.balanced
        assert started.meters.progressive_net_cents == progressive_net
        last = journal.last_entry()
        assert last is not None
    assert user_version(path) == 4
    assert stored_unbalanced_rows(path) == 0
    assert {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in sealed_files} == sealed_digests
    assert seal_file(path, 1).read_bytes() == seal_text
    code, after = meters_json(path, capsys)
    assert (code, after) == (0, shown)
    assert main(["journal", "verify", "--config", str(config), "--segments", "--totals"]) == 0
    out = capsys.readouterr().out
    assert "segment 1: ok" in out
    assert "totals: segment 1: totals of" in out  # the sealed file: schema 3, as it was written
    assert "as schema 3 counted them" in out
    assert "totals: segment 2 (open): totals of" in out
    assert out.count("as schema 3 counted them") == 1  # the open one is migrated

    # A stored total edited in the open segment (they are derived, not chained) is named; put back.
    for change in (100, -100):
        with contextlib.closing(sqlite3.connect(path)) as connection, connection:
            connection.execute(
                "UPDATE journal_totals SET value = value + ? WHERE period = 'all' AND key = 'handle_cents'",
                (change,),
            )
        if change > 0:
            assert main(["journal", "verify", "--config", str(config), "--totals"]) == 1
            assert "segment 2 (open): totals differ from its entries: all handle_cents: stored" in (
                capsys.readouterr().out
            )

    # Sealed anew (as the start does at once after such a seal): format 4, and both seals verify.
    write_anchor(path, Anchor.of("T1", last.seq, last.hash), key=KEY)
    new_seal = seal_open_segment(
        path,
        started,
        key=KEY,
        write_anchor_at_end=lambda seq, h: write_anchor(path, Anchor.of("T1", seq, h), key=KEY),
    )
    assert new_seal is not None
    assert new_seal.checkpoint["format"] == 4
    assert refold_reason(new_seal.checkpoint) is None
    assert [verdict.ok for verdict in verify_segments(path, key=KEY)] == [True, True]
    code, resealed = meters_json(path, capsys)
    assert (code, resealed) == (0, shown)
    with Journal.open(path, "T1") as journal:
        restarted = rebuild_state(journal)  # from the format-4 seal, read as a state
        assert restarted.meters.to_json() == started.meters.to_json()
    assert {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in sealed_files} == sealed_digests
