"""The journal proves itself before the table opens (controller/journal/proof.py): every way of damaging
a journal that an attacker with file access, a crash or a bad disk produces is refused by `flushtable
run` (exit 2, one line, nothing appended: the journal's bytes are the same afterwards) and named by
`flushtable journal verify` (exit 1). Real SQLite files made by the real daemon, and the real command
line in a subprocess."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import sqlite3
import struct
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from controller.journal.anchor import Anchor, anchor_path, read_anchor, write_anchor
from controller.journal.proof import JournalRefused, check_journal, prepare_for_run
from controller.journal.store import JournalError
from controller.journal.verify import verify_chain
from tests.daemon.harness import FLUSHTABLE

TABLE_ID = "SIM1"  # the embedded configuration's table
WAIT_S = 30.0  # every wait on a condition is bounded by this
WAL_HEADER = 32
FRAME_HEADER = 24


# --- helpers ---------------------------------------------------------------------------------------
def flushtable(*arguments: str, timeout_s: float = 60.0) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [FLUSHTABLE, *arguments],
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
        env={**os.environ, "NOTIFY_SOCKET": ""},
    )


def run_command(journal: Path, *extra: str, rounds: int = 1, seed: int = 3) -> list[str]:
    return [
        "run",
        "--rounds",
        str(rounds),
        "--no-panel",
        "--time-scale",
        "1000",
        "--seed",
        str(seed),
        "--journal",
        str(journal),
        "--log-level",
        "warning",
        *extra,
    ]


def anchor_of(path: Path) -> Anchor:
    anchor = read_anchor(path)
    assert anchor is not None, f"no anchor beside {path}"
    return anchor


def wal_of(path: Path) -> Path:
    return path.with_name(path.name + "-wal")


def stored_bytes(path: Path) -> dict[str, bytes | None]:
    """The journal as stored: the file, its write-ahead log (an absent one is an empty one: a read-only
    connection may leave an empty -wal), and its anchor. (The -shm is an index SQLite rebuilds.)"""

    def read(file: Path) -> bytes | None:
        return file.read_bytes() if file.exists() else None

    return {
        "journal": read(path),
        "wal": read(wal_of(path)) or b"",
        "anchor": read(anchor_path(path)),
    }


def refused_by_run(path: Path, expected: str) -> str:
    """`flushtable run` refuses the journal: exit 2, one line naming what is wrong, nothing written."""
    before = stored_bytes(path)
    completed = flushtable(*run_command(path))
    lines = completed.stderr.splitlines()
    assert completed.returncode == 2, completed.stderr[-3000:]
    assert len(lines) == 1, completed.stderr
    assert lines[0].startswith(f"flushtable run: journal {path} refused: "), lines[0]
    assert expected in lines[0], lines[0]
    assert lines[0].endswith('nothing was appended (see docs/journal.md "When the journal is refused")')
    assert completed.stdout == ""
    assert stored_bytes(path) == before, "the refused journal was written"
    print(f"\n$ flushtable run ...\n{lines[0]}  [exit 2]")
    return lines[0]


def named_by_verify(path: Path, expected: str) -> str:
    completed = flushtable("journal", "verify", "--journal", str(path))
    assert completed.returncode == 1, (completed.stdout, completed.stderr)
    [line] = completed.stdout.splitlines()
    assert expected in line, line
    print(f"$ flushtable journal verify ...\n{line}  [exit 1]")
    if completed.stderr:
        print(f"(stderr) {completed.stderr.strip()}")
    return line


def copy_journal(source: Path, directory: Path, *, with_shm: bool = False) -> Path:
    """The journal, its -wal and its anchor (and its -shm: the WAL index as a crash left it)."""
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / "journal.sqlite"
    shutil.copyfile(source, target)
    for suffix in ("-wal", "-shm") if with_shm else ("-wal",):
        if source.with_name(source.name + suffix).exists():
            shutil.copyfile(source.with_name(source.name + suffix), target.with_name(target.name + suffix))
    if anchor_path(source).exists():
        shutil.copyfile(anchor_path(source), anchor_path(target))
    return target


def read_only(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=5)


def query(path: Path, sql: str, params: tuple[object, ...] = ()) -> list[tuple[Any, ...]]:
    with contextlib.closing(read_only(path)) as connection:
        return list(connection.execute(sql, params))


def last_seq(path: Path) -> int:
    return int(query(path, "SELECT COALESCE(MAX(seq), 0) FROM journal")[0][0])


@contextlib.contextmanager
def writable(path: Path, *, restore_triggers: bool) -> Iterator[sqlite3.Connection]:
    """A raw connection with the journal's triggers dropped, as an attacker edits it; the triggers are
    put back exactly as they were when ``restore_triggers``."""
    connection = sqlite3.connect(path, isolation_level=None)
    try:
        triggers = connection.execute("SELECT name, sql FROM sqlite_schema WHERE type = 'trigger'").fetchall()
        for name, _sql in triggers:
            connection.execute(f"DROP TRIGGER {name}")
        yield connection
        if restore_triggers:
            for _name, sql in triggers:
                connection.execute(sql)
    finally:
        connection.close()


# --- journals made by the real daemon -------------------------------------------------------------------
@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three rounds played by `flushtable run`, stopped cleanly (every entry in the main file)."""
    path = tmp_path_factory.mktemp("played") / "journal.sqlite"
    completed = flushtable(*run_command(path, rounds=3, seed=1))
    assert completed.returncode == 0, completed.stderr[-3000:]
    return path


@dataclass(frozen=True)
class Killed:
    """A daemon killed with SIGKILL after at least two settled rounds were anchored: committed entries
    still in the write-ahead log."""

    path: Path
    anchor: Anchor
    settled: list[tuple[str, int, int]]  # (round_id, round_started seq, round_settled seq), anchored


@pytest.fixture(scope="module")
def killed(tmp_path_factory: pytest.TempPathFactory) -> Killed:
    directory = tmp_path_factory.mktemp("killed")
    path = directory / "journal.sqlite"
    with (directory / "stderr.log").open("wb") as stderr:
        process = subprocess.Popen(
            [FLUSHTABLE, *run_command(path, rounds=1000, seed=5)],
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            env={**os.environ, "NOTIFY_SOCKET": ""},
        )
        try:
            deadline = time.monotonic() + WAIT_S
            while True:
                assert process.poll() is None, (directory / "stderr.log").read_text()
                assert time.monotonic() < deadline, "two settled rounds were never anchored"
                settled = _anchored_settled_rounds(path)
                if len(settled) >= 2:
                    break
                time.sleep(0.01)
            process.send_signal(signal.SIGKILL)
        finally:
            if process.poll() is None:
                process.kill()
            process.wait(timeout=10)
    assert process.returncode == -signal.SIGKILL
    anchor = read_anchor(path)
    assert anchor is not None
    assert wal_of(path).stat().st_size > WAL_HEADER, "the write-ahead log holds no frame at the kill"
    return Killed(path, anchor, _anchored_settled_rounds(path))


def _anchored_settled_rounds(path: Path) -> list[tuple[str, int, int]]:
    try:
        anchor = read_anchor(path)
    except JournalError:
        return []
    if anchor is None or not path.exists():
        return []
    try:
        rows = query(
            path,
            "SELECT s.round_id, s.seq, c.seq FROM journal s JOIN journal c ON c.round_id = s.round_id "
            "WHERE s.kind = 'round_started' AND c.kind = 'round_settled' AND c.seq <= ? ORDER BY c.seq",
            (anchor.seq,),
        )
    except sqlite3.OperationalError:
        return []  # the schema is still being created
    return [(str(round_id), int(started), int(closed)) for round_id, started, closed in rows]


def test_the_daemon_keeps_the_anchor_at_the_head(played: Path) -> None:
    anchor = read_anchor(played)
    assert anchor is not None
    [(seq, hash_hex, kind)] = query(played, "SELECT seq, hash, kind FROM journal ORDER BY seq DESC LIMIT 1")
    assert (anchor.table_id, anchor.seq, anchor.hash, kind) == (TABLE_ID, seq, hash_hex, "table_closed")
    assert set(json.loads(anchor_path(played).read_text())) == {"table_id", "seq", "hash", "time_utc"}
    completed = flushtable("journal", "verify", "--journal", str(played))
    assert (completed.returncode, completed.stdout) == (0, f"ok {seq} entries, anchored at entry {seq}\n")


def test_the_anchor_follows_each_round_close(killed: Killed) -> None:
    # Killed mid-play: the anchor names at least the closing entry of the last round seen settled.
    assert killed.anchor.seq >= killed.settled[-1][2]
    assert query(killed.path, "SELECT hash FROM journal WHERE seq = ?", (killed.anchor.seq,)) == [
        (killed.anchor.hash,)
    ]


# --- the tamper cases -----------------------------------------------------------------------------------
def test_a_middle_entry_edited(played: Path, tmp_path: Path) -> None:
    path = copy_journal(played, tmp_path)
    middle = last_seq(path) // 2
    [(seq,)] = query(
        path, "SELECT MIN(seq) FROM journal WHERE seq >= ? AND payload LIKE '%\"seat\":1%'", (middle,)
    )
    with writable(path, restore_triggers=True) as db:  # the triggers are back: only the chain can tell
        db.execute(
            "UPDATE journal SET payload = replace(payload, '\"seat\":1', '\"seat\":2') WHERE seq = ?", (seq,)
        )
    expected = f"bad entry {seq}: hash does not match the entry's contents (edited?)"
    refused_by_run(path, expected)
    assert named_by_verify(path, expected) == expected


@pytest.mark.parametrize("restore_triggers", [True, False], ids=["triggers-restored", "triggers-dropped"])
def test_a_row_deleted(played: Path, tmp_path: Path, restore_triggers: bool) -> None:
    path = copy_journal(played, tmp_path)
    seq = last_seq(path) // 2
    with writable(path, restore_triggers=restore_triggers) as db:
        db.execute("DELETE FROM journal WHERE seq = ?", (seq,))
    expected = f"bad entry {seq}: missing: the next entry is {seq + 1} (entries deleted?)"
    refused_by_run(path, expected)
    assert named_by_verify(path, expected) == expected


@pytest.mark.parametrize("how", ["dropped", "replaced"])
def test_the_append_only_trigger_dropped(played: Path, tmp_path: Path, how: str) -> None:
    path = copy_journal(played, tmp_path)
    with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as db:
        db.execute("DROP TRIGGER journal_no_delete")
        if how == "replaced":  # the same name, doing nothing
            db.execute("CREATE TRIGGER journal_no_delete BEFORE DELETE ON journal WHEN 0 BEGIN SELECT 1; END")
    expected = (
        "append-only trigger journal_no_delete missing (dropped?)"
        if how == "dropped"
        else "append-only trigger journal_no_delete altered"
    )
    refused_by_run(path, expected)
    named_by_verify(path, expected)


@pytest.mark.parametrize("how", ["truncated", "deleted"])
def test_the_file_truncated_to_zero_or_gone(played: Path, tmp_path: Path, how: str) -> None:
    path = copy_journal(played, tmp_path)
    anchor = read_anchor(path)
    assert anchor is not None
    if how == "truncated":
        os.truncate(path, 0)
    else:
        path.unlink()
    what = "empty (0 bytes)" if how == "truncated" else "missing"
    expected = f"the journal is {what}, but its anchor (journal.sqlite.anchor) says entries 1 to {anchor.seq}"
    refused_by_run(path, expected)
    named_by_verify(path, expected)
    assert path.exists() == (how == "truncated")  # never restarted: nothing was created


def _wal_frames(wal: bytes) -> tuple[int, list[int]]:
    """The page size and, for each valid frame (the log's current salt), its offset; SQLite's own
    checksums are left to SQLite."""
    page_size = struct.unpack(">I", wal[8:12])[0]
    salts = wal[16:24]
    offsets: list[int] = []
    offset = WAL_HEADER
    while offset + FRAME_HEADER + page_size <= len(wal) and wal[offset + 8 : offset + 16] == salts:
        offsets.append(offset)
        offset += FRAME_HEADER + page_size
    return page_size, offsets


def _flip(data: bytearray, offset: int, mask: int = 0x01) -> None:
    data[offset] ^= mask


def test_a_byte_of_the_wal_flipped_after_a_sigkill(killed: Killed, tmp_path: Path) -> None:
    # Everything the SIGKILL left, the WAL index (-shm) of the killed writer included.
    path = copy_journal(killed.path, tmp_path / "flipped", with_shm=True)
    wal = wal_of(path).read_bytes()
    page_size, frames = _wal_frames(wal)
    commits = [
        index for index, offset in enumerate(frames) if struct.unpack(">I", wal[offset + 4 : offset + 8])[0]
    ]
    assert commits, "no committed frame in the write-ahead log"
    # Find the first transaction after the first frame whose loss cuts a settled, anchored round in two:
    # its round_started survives, its round_settled is lost. (Each trial on a scratch copy.)
    chosen: tuple[int, int, tuple[str, int, int]] | None = None
    for frame in (commit + 1 for commit in commits[:-1]):
        trial = copy_journal(killed.path, tmp_path / f"trial-{frame}")
        damaged = bytearray(wal)
        _flip(damaged, frames[frame] + FRAME_HEADER + page_size // 2)
        wal_of(trial).write_bytes(bytes(damaged))
        survives = last_seq(trial)
        cut = [item for item in killed.settled if item[1] <= survives < item[2]]
        if cut:
            chosen = (frame, survives, cut[0])
            break
    assert chosen is not None, "no transaction boundary inside a settled round in the write-ahead log"
    frame, survives, (round_id, _started, settled_seq) = chosen
    assert frame > 0
    damaged = bytearray(wal)
    _flip(damaged, frames[frame] + FRAME_HEADER + page_size // 2)
    wal_of(path).write_bytes(bytes(damaged))

    # SQLite ignores the log from the bad frame on, silently: the chain alone still verifies, shorter,
    # and the settled round is open again.
    assert verify_chain(path).ok
    assert last_seq(path) == survives < settled_seq <= killed.anchor.seq
    assert query(
        path, "SELECT kind FROM journal WHERE round_id = ? AND kind LIKE 'round_%'", (round_id,)
    ) == [("round_started",)]
    expected = (
        f"bad entry {survives + 1}: anchored entry missing: the journal ends at entry {survives}, its anchor "
        f"(journal.sqlite.anchor) names entry {killed.anchor.seq}"
    )
    refused_by_run(path, expected)
    named_by_verify(path, expected)

    # Without the anchor the table would have opened, and recovery voided a round that was settled.
    blind = copy_journal(path, tmp_path / "without-anchor")
    anchor_path(blind).unlink()
    assert flushtable("journal", "anchor", "--journal", str(blind)).returncode == 0
    completed = flushtable(*run_command(blind))
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert query(
        blind, "SELECT source FROM journal WHERE round_id = ? AND kind = 'round_voided'", (round_id,)
    ) == [("recovery",)]


def _index_leaf_pages(path: Path, index: str) -> tuple[int, list[int]]:
    with contextlib.closing(read_only(path)) as db:
        page_size = int(db.execute("PRAGMA page_size").fetchone()[0])
        try:
            pages = [
                int(row[0])
                for row in db.execute(
                    "SELECT pageno FROM dbstat WHERE name = ? AND pagetype = 'leaf' ORDER BY pageno", (index,)
                )
            ]
        except sqlite3.OperationalError:  # no dbstat in this SQLite: the root page (a leaf when small)
            pages = [
                int(db.execute("SELECT rootpage FROM sqlite_schema WHERE name = ?", (index,)).fetchone()[0])
            ]
    return page_size, pages


def test_bits_flipped_in_index_pages(played: Path, tmp_path: Path) -> None:
    path = copy_journal(played, tmp_path)
    assert stored_bytes(path)["wal"] == b""  # every page is in the file
    kinds = [
        str(row[0]) for row in query(path, "SELECT kind FROM journal GROUP BY kind ORDER BY COUNT(*) DESC")
    ]
    page_size, pages = _index_leaf_pages(path, "journal_by_kind")
    data = bytearray(path.read_bytes())
    flipped = 0
    for page in pages:
        start, end = (page - 1) * page_size, page * page_size
        for kind in kinds:
            at = data.find(kind.encode(), start, end)
            if at >= 0:
                _flip(data, at + 1, 0x04)  # one bit of a key in an index cell
                flipped += 1
                break
    assert flipped
    path.write_bytes(bytes(data))
    # What the chain alone cannot see: the table is intact, but readers going through the index lose rows.
    assert verify_chain(path).ok
    by_index = query(path, "SELECT COUNT(*) FROM journal WHERE kind = ?", (kinds[0],))
    by_table = query(path, "SELECT COUNT(*) FROM journal NOT INDEXED WHERE kind = ?", (kinds[0],))
    assert by_index != by_table
    refused_by_run(path, "SQLite integrity check failed: ")
    named_by_verify(path, "SQLite integrity check failed: ")


# --- a read-only file system ------------------------------------------------------------------------------
@contextlib.contextmanager
def read_only_mount(directory: Path) -> Iterator[None]:
    """A tmpfs at ``directory``, made read-only once ``yield``ed to... filled by the caller first."""
    directory.mkdir()
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a file system needs root")
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(directory)], capture_output=True, check=False
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        yield
    finally:
        if subprocess.run(["umount", str(directory)], capture_output=True, check=False).returncode != 0:
            subprocess.run(["umount", "-l", str(directory)], capture_output=True, check=False)


def test_verify_on_a_read_only_file_system(killed: Killed, tmp_path: Path) -> None:
    mount_point = tmp_path / "ro"
    with read_only_mount(mount_point):
        path = copy_journal(killed.path, mount_point)  # the file and its -wal, as the crash left them
        remounted = subprocess.run(
            ["mount", "-o", "remount,ro", str(mount_point)], capture_output=True, check=False
        )
        assert remounted.returncode == 0, remounted.stderr
        with pytest.raises(OSError, match="Read-only file system"):
            (mount_point / "probe").write_bytes(b"")
        with pytest.raises(sqlite3.OperationalError, match="unable to open"):  # what verify used to do
            query(path, "SELECT COUNT(*) FROM journal")
        entries = last_seq(killed.path)
        with contextlib.closing(sqlite3.connect(f"{path.as_uri()}?mode=ro&immutable=1", uri=True)) as main:
            tables = main.execute("SELECT name FROM sqlite_schema WHERE name = 'journal'").fetchall()
            in_main_file = main.execute("SELECT MAX(seq) FROM journal").fetchone()[0] if tables else 0
        assert in_main_file < entries  # entries only the write-ahead log holds
        completed = flushtable("journal", "verify", "--journal", str(path))
        print(f"\n$ flushtable journal verify (read-only file system)\n{completed.stdout.strip()}")
        assert (completed.returncode, completed.stdout) == (
            0,
            f"ok {entries} entries, anchored at entry {killed.anchor.seq}\n",
        ), completed.stderr


@pytest.mark.parametrize("with_wal", [True, False], ids=["wal", "no-wal"])
def test_verify_where_the_shm_cannot_be_created(
    killed: Killed, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, with_wal: bool
) -> None:
    """The same code path without a mount: the directory taken as unwritable (root writes anywhere)."""
    from controller.journal import snapshot

    path = copy_journal(killed.path, tmp_path)
    if not with_wal:
        with contextlib.closing(sqlite3.connect(path)) as db:
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        wal_of(path).unlink(missing_ok=True)
    for leftover in (path.with_name(path.name + "-shm"),):
        leftover.unlink(missing_ok=True)
    monkeypatch.setattr(snapshot, "_shared_access_possible", lambda _path: False)
    before = sorted(item.name for item in tmp_path.iterdir())
    verdict = check_journal(path, anchor=read_anchor(path))
    assert verdict.ok, verdict.line
    assert verdict.entries == last_seq(killed.path)
    assert sorted(item.name for item in tmp_path.iterdir()) == before  # nothing created beside it


# --- what `run` does with a missing journal, a new one, and one with no anchor ------------------------
def test_a_new_journal_only_where_neither_exists(tmp_path: Path) -> None:
    path = tmp_path / "var" / "journal.sqlite"
    path.parent.mkdir()
    prepare_for_run(path, TABLE_ID)  # neither: the anchor first (seq 0), then the journal
    assert anchor_of(path) == Anchor(TABLE_ID, 0, "0" * 64, anchor_of(path).time_utc)
    assert not path.exists()
    prepare_for_run(path, TABLE_ID)  # a crash before the journal was made: still new
    path.write_bytes(b"")
    prepare_for_run(path, TABLE_ID)  # ... or while SQLite made the file
    with pytest.raises(
        JournalRefused, match=r"its anchor \(journal.sqlite.anchor\) is table 'SIM1', not 'T9'"
    ):
        prepare_for_run(path, "T9")
    anchor_path(path).unlink()
    with pytest.raises(JournalRefused, match="the journal is empty \\(0 bytes\\), and it has no anchor"):
        prepare_for_run(path, TABLE_ID)
    anchor_path(path).write_text("{not json")
    with pytest.raises(JournalRefused, match="not JSON"):
        prepare_for_run(path, TABLE_ID)


def test_a_journal_with_entries_and_no_anchor_is_refused_until_anchored(played: Path, tmp_path: Path) -> None:
    path = copy_journal(played, tmp_path)
    anchor_path(path).unlink()
    line = refused_by_run(path, "but no anchor (journal.sqlite.anchor): if this is the table's journal, run ")
    assert f"`flushtable journal anchor --journal {path}`" in line
    # verify refuses it as run does, with the same reason (proof.startup_check: one code path).
    completed = flushtable("journal", "verify", "--journal", str(path))
    assert completed.returncode == 1, completed.stderr
    assert f"refused: {completed.stdout.strip()}; nothing was appended" in line
    anchored = flushtable("journal", "anchor", "--journal", str(path))
    assert anchored.returncode == 0, anchored.stderr
    seq = last_seq(path)
    print(f"\n$ flushtable journal anchor ...\n{anchored.stdout.strip()}")
    assert anchored.stdout.startswith(f"ok {seq} entries; anchor {anchor_path(path)} written: {seq}:")
    completed = flushtable(*run_command(path))
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert anchor_of(path).seq == last_seq(path) > seq


def test_a_rewritten_anchored_entry(played: Path, tmp_path: Path) -> None:
    """The anchored entry is there with another hash (the tail rewritten with fresh hashes)."""
    path = copy_journal(played, tmp_path)
    anchor = read_anchor(path)
    assert anchor is not None
    write_anchor(path, Anchor.of(TABLE_ID, anchor.seq, "f" * 64))
    expected = (
        f"bad entry {anchor.seq}: hash differs from the anchor (journal.sqlite.anchor) (chain rewritten?)"
    )
    refused_by_run(path, expected)
    named_by_verify(path, expected)


def test_new_journal_never_replaces_one_with_content(played: Path, tmp_path: Path) -> None:
    path = copy_journal(played, tmp_path)
    before = stored_bytes(path)
    completed = flushtable(*run_command(path, "--new-journal"))
    assert completed.returncode == 2
    assert "--new-journal: " in completed.stderr
    assert "exists and is not empty; a journal is never replaced" in completed.stderr
    assert stored_bytes(path) == before
    # Truncated to zero: the supervisor starts a new journal explicitly; the old anchor is kept.
    old_anchor = anchor_path(path).read_text()
    os.truncate(path, 0)
    completed = flushtable(*run_command(path, "--new-journal"))
    assert completed.returncode == 0, completed.stderr[-3000:]
    [kept] = list(tmp_path.glob("journal.sqlite.anchor.superseded-*"))
    assert kept.read_text() == old_anchor
    assert query(path, "SELECT MIN(seq) FROM journal") == [(1,)]
    assert anchor_of(path).seq == last_seq(path)
