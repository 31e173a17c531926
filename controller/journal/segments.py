"""Sealed segments: the journal as a chain of SQLite files (docs/journal.md "Segments and seals").

Layout, for the journal at ``var/journal.sqlite``::

    var/journal.sqlite                           the open segment (the one `run` appends to)
    var/journal.sqlite.anchor                    its anchor, as before
    var/journal.sqlite.segments/segment-000001.sqlite       a sealed segment (read-only, 0444)
    var/journal.sqlite.segments/segment-000001.seal.json    its seal
    var/journal.sqlite.segments/segment-000001.archived.json   where an archived segment went

A seal names its segment's entries (first and last seq, count), the hash the segment starts from and
its final hash, the sha256 and size of the sealed file, the rounds started up to its end, its first and
last entry times, the reducer's checkpoint at its end (controller/journal/checkpoint.py) and, with an
anchor key configured, an HMAC-SHA256 over all of it under that key. The next segment's file names the
seal's final entry as its base (journal_meta ``base_seq``/``base_hash``): its chain trigger makes its
first entry extend it.

Sealing (``seal_open_segment``), with the open segment closed by its writer and no round open (a round
never spans two segments: its closing entry's trigger looks for its start in the same file):

1. the open segment is made self-contained: its WAL checkpointed into it and the file switched to a
   rollback journal (``journal_mode=DELETE``), so its bytes are final;
2. the anchor is written at its last entry (it already is, normally);
3. the seal is written atomically (temporary file, fsync, rename, fsync the directory);
4. the file is made read-only and renamed into the segments directory (one rename, fsynced);
5. the next segment is created at the journal's path, its base the seal's final entry.

A crash between any two steps is finished at the next start (``finish_interrupted_seal``): a seal
whose segment is still at the journal's path is moved (4), and a journal path with no file after a
seal gets its new segment (5). Nothing is ever written twice: each step is idempotent.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import sqlite3
import stat
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from controller.journal.chain import GENESIS_HASH, canonical_json, format_time_utc
from controller.journal.checkpoint import (
    EVERY_CLOSED_ROUND_FORMATS,
    METERS_WITHOUT_PROGRESSIVE_NET_FORMATS,
    READ_AS_STATE_FORMATS,
    CheckpointError,
    checkpoint_format,
    checkpoint_in_format,
    record_closings,
    refold_reason,
    state_from_checkpoint,
    state_to_checkpoint,
)
from controller.journal.durable import fsync_directory, write_durably
from controller.journal.errors import JournalError, sqlite_reason
from controller.journal.kinds import ROUND_STARTED
from controller.journal.schema import SegmentBase, read_segment_base
from controller.journal.seals import (
    Seal,
    archived_file,
    forget_listing_in,
    last_seal,
    locate_segment,
    read_seal,
    seal_file,
    seal_key_problem,
    seal_numbers,
    segment_file,
    segments_dir,
)
from controller.journal.state import TableState
from controller.journal.state_parts import MetersBeforeProgressiveNet
from controller.journal.store import Journal


class SealBusy(JournalError):
    """A seal that must wait: another connection is on the open segment (SQLite cannot leave WAL mode
    then). Nothing was changed; the next attempt may succeed. Any other ``JournalError`` from a seal is
    a failure to report (a full disk, a directory that cannot be written, a state that cannot be
    written as a checkpoint): the open segment stays open and whole, and the table goes on with it."""


_HASH_CHUNK_BYTES = 1 << 20


# --- sealing ----------------------------------------------------------------------------------------


def gaming_day(time_utc: datetime, day_start_utc: str) -> str:
    """The gaming day (YYYY-MM-DD) a moment belongs to: a day that starts at ``day_start_utc``."""
    hours, _, minutes = day_start_utc.partition(":")
    shifted = time_utc.astimezone(UTC) - timedelta(hours=int(hours), minutes=int(minutes))
    return shifted.date().isoformat()


def seal_due(  # noqa: PLR0913 - keyword-only: the seal's triggers, each a configuration setting
    entries: int,
    first_utc: str | None,
    now: datetime,
    *,
    every_entries: int,
    per_gaming_day: bool,
    gaming_day_start_utc: str,
    last_checkpoint_refolds: str | None = None,
) -> str | None:
    """Why the open segment is due to be sealed now (None: it is not). Pure. ``last_checkpoint_refolds``:
    why the last seal's checkpoint is not read as a state (``checkpoint.refold_reason``; None: it is,
    or there is no seal): it makes every start refold the sealed segments, so the first start that can
    seals at once."""
    if entries == 0 or first_utc is None:
        return None
    if last_checkpoint_refolds is not None:
        return f"the last seal's checkpoint {last_checkpoint_refolds}"
    if every_entries > 0 and entries >= every_entries:
        return f"it holds {entries} entries (segment_entries = {every_entries})"
    if per_gaming_day:
        first = datetime.strptime(first_utc, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
        began, today = gaming_day(first, gaming_day_start_utc), gaming_day(now, gaming_day_start_utc)
        if began < today:
            return f"it began on gaming day {began}, and this is {today}"
    return None


def file_sha256(path: Path) -> tuple[str, int]:
    digest = hashlib.sha256()
    size = 0
    with path.open("rb") as handle:
        while chunk := handle.read(_HASH_CHUNK_BYTES):
            digest.update(chunk)
            size += len(chunk)
    return digest.hexdigest(), size


def _write_atomically(path: Path, data: bytes) -> None:
    try:
        write_durably(path, data)
    finally:
        forget_listing_in(path.parent)  # a seal (or a pointer) of ours: the listing afresh


def _make_self_contained(path: Path) -> None:
    """Every entry into the main file and the file switched to a rollback journal: its bytes are then
    all there is (no -wal, no -shm), what the seal's sha256 covers."""
    try:
        connection = sqlite3.connect(path, isolation_level=None)
        try:
            connection.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
            mode = connection.execute("PRAGMA journal_mode = DELETE").fetchone()[0]
        finally:
            connection.close()
    except sqlite3.Error as error:
        name = str(getattr(error, "sqlite_errorname", ""))
        reason = sqlite_reason(error, path)
        if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")):
            raise SealBusy(f"journal {path}: cannot seal now: {reason} (another connection?)") from None
        raise JournalError(f"journal {path}: cannot seal: {reason}") from None
    if str(mode).lower() != "delete":
        raise SealBusy(f"journal {path}: cannot seal now: still in {mode} mode (another connection?)")
    with path.open("rb") as handle:
        os.fsync(handle.fileno())


@dataclass(frozen=True, slots=True)
class _Head:
    base: SegmentBase
    table_id: str
    entries: int
    last_seq: int
    final_hash: str
    rounds_here: int
    first_utc: str
    last_utc: str


def settle_rollback_journal(path: Path) -> bool:
    """A seal killed while switching the open segment to a rollback journal (its step 1) can leave a
    hot ``-journal`` beside it, which read-only readers cannot roll back (SQLITE_READONLY_ROLLBACK).
    Opened once read-write here, SQLite rolls it back as any writer would at open (nothing committed is
    touched: a hot journal holds only an uncommitted change). True when there was one."""
    hot = path.with_name(path.name + "-journal")
    if not hot.exists() or not path.exists():
        return False
    try:
        connection = sqlite3.connect(path, isolation_level=None)
        try:
            connection.execute("SELECT COUNT(*) FROM sqlite_schema").fetchone()
        finally:
            connection.close()
    except sqlite3.Error as error:
        raise JournalError(f"journal {path}: cannot roll back its interrupted change: {error}") from error
    return True


def _holds_no_journal(path: Path) -> bool:
    """No file, an empty one, or a database with nothing committed in it (a new segment's creation cut
    short: its schema and base are committed in one transaction, so it has all or nothing)."""
    try:
        if path.stat().st_size == 0:
            return True
    except FileNotFoundError:
        return True
    try:
        connection = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, isolation_level=None)
        try:
            application_id = connection.execute("PRAGMA application_id").fetchone()[0]
            tables = connection.execute("SELECT COUNT(*) FROM sqlite_schema").fetchone()[0]
        finally:
            connection.close()
    except sqlite3.Error:
        return False  # not readable as a database: not ours to remove; the start refuses it
    return bool(application_id == 0 and tables == 0)


def _read_base(path: Path) -> int | None:
    """The segment number of the journal file at ``path`` (None: not readable as one)."""
    try:
        connection = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, isolation_level=None)
        try:
            return read_segment_base(connection).segment
        finally:
            connection.close()
    except sqlite3.Error:
        return None


def _read_head(path: Path) -> _Head:
    connection = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, isolation_level=None)
    try:
        base = read_segment_base(connection)
        table_id = str(
            connection.execute("SELECT value FROM journal_meta WHERE key = 'table_id'").fetchone()[0]
        )
        count, first_utc = connection.execute(
            "SELECT COUNT(*), (SELECT time_utc FROM journal ORDER BY seq LIMIT 1) FROM journal"
        ).fetchone()
        last = connection.execute(
            "SELECT seq, hash, time_utc FROM journal ORDER BY seq DESC LIMIT 1"
        ).fetchone()
        rounds = connection.execute(
            "SELECT COUNT(*) FROM journal WHERE kind = ?", (ROUND_STARTED,)
        ).fetchone()[0]
    except sqlite3.Error as error:
        raise JournalError(f"journal {path}: cannot read: {error}") from error
    finally:
        connection.close()
    if last is None:
        return _Head(base, table_id, 0, base.base_seq, base.base_hash, 0, "", "")
    return _Head(
        base, table_id, int(count), int(last[0]), str(last[1]), int(rounds), str(first_utc), str(last[2])
    )


def _checkpoint_of(path: Path, state: TableState) -> dict[str, Any]:
    """The state as a seal's checkpoint, read back as the next start will read it: a state that cannot
    be written, or would not read back the same, is refused here (no seal), never found at a start."""
    try:
        checkpoint = state_to_checkpoint(state)
        text = canonical_json(checkpoint)
        if canonical_json(state_to_checkpoint(state_from_checkpoint(json.loads(text)))) != text:
            raise CheckpointError("it does not read back as the same state")
    except (CheckpointError, ValueError, TypeError, KeyError, AttributeError) as error:
        why = f"the checkpoint cannot be written: {error}"
        raise JournalError(f"journal {path}: cannot seal: {why}") from None
    return checkpoint


def seal_open_segment(
    journal_path: str | Path,
    state: TableState,
    *,
    key: bytes | None,
    now: datetime | None = None,
    write_anchor_at_end: Callable[[int, str], object] | None = None,
) -> Seal | None:
    """Seal the open segment at ``journal_path`` (closed by its writer: no connection may be open on
    it) with ``state``, the reducer's state at its last entry, and start the next one. None when the
    open segment holds no entry (nothing to seal). Refused while a round is open (a round never spans
    two segments). ``write_anchor_at_end(seq, hash)``: the caller's anchor, written before the seal."""
    path = Path(journal_path)
    head = _read_head(path)
    if head.entries == 0:
        return None
    if state.last_seq != head.last_seq:
        raise JournalError(
            f"journal {path}: cannot seal: the state given ends at entry {state.last_seq}, the segment at "
            f"{head.last_seq}"
        )
    if state.open_rounds:
        rounds = ", ".join(r.round_id for r in state.open_rounds)
        raise JournalError(f"journal {path}: cannot seal while a round is open ({rounds})")
    segment = head.base.segment
    directory = segments_dir(path)
    try:
        directory.mkdir(exist_ok=True)
        _make_self_contained(path)
        if write_anchor_at_end is not None:
            write_anchor_at_end(head.last_seq, head.final_hash)
        sha, size = file_sha256(path)
        moment = now if now is not None else datetime.now(UTC)
        checkpoint = _checkpoint_of(path, state)
        seal = Seal(
            table_id=head.table_id,
            segment=segment,
            first_seq=head.base.base_seq + 1,
            last_seq=head.last_seq,
            entries=head.entries,
            prev_hash=head.base.base_hash,
            final_hash=head.final_hash,
            file_sha256=sha,
            file_bytes=size,
            rounds_started=head.base.base_rounds + head.rounds_here,
            first_utc=head.first_utc,
            last_utc=head.last_utc,
            sealed_utc=format_time_utc(moment),
            checkpoint=checkpoint,
        ).keyed(key)
        data = (json.dumps(asdict(seal), sort_keys=True, separators=(",", ":")) + "\n").encode("utf-8")
        _write_atomically(seal_file(path, segment), data)
    except OSError as error:  # a full disk, a directory it may not write: the open segment goes on
        raise JournalError(f"journal {path}: cannot seal segment {segment}: {error}") from error
    except sqlite3.Error as error:
        reason = sqlite_reason(error, path)
        raise JournalError(f"journal {path}: cannot seal segment {segment}: {reason}") from error
    finish_interrupted_seal(path)
    return seal


def finish_interrupted_seal(journal_path: str | Path, *, dry_run: bool = False) -> str | None:
    """Finish a seal a crash cut short (steps 4 and 5 of the module's docstring); what was done (with
    ``dry_run``: what would be, nothing written), or None when nothing was to be done. Only ever moves
    a file its seal names by sha256, and creates the next segment only where the journal's path holds
    no journal."""
    path = Path(journal_path)
    seal = last_seal(path)
    if seal is None:
        return None
    done: list[str] = []
    target = segment_file(path, seal.segment)
    try:
        if (
            path.exists()
            and path.stat().st_size > 0
            and not target.exists()
            and _read_base(path) == seal.segment
        ):
            head = _read_head(path)
            if head.last_seq == seal.last_seq:
                sha, _size = file_sha256(path)
                if sha == seal.file_sha256 and dry_run:
                    return f"the seal of segment {seal.segment} was interrupted: its file is still at {path}"
                if sha == seal.file_sha256:
                    for leftover in (path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
                        with contextlib.suppress(FileNotFoundError):
                            leftover.unlink()
                    os.chmod(path, stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
                    os.replace(path, target)
                    fsync_directory(target.parent)
                    fsync_directory(path.parent)
                    done.append(f"segment {seal.segment} moved to {target}")
        if _holds_no_journal(path) and dry_run:
            following = seal.segment + 1
            return f"the seal of segment {seal.segment} was interrupted before segment {following} started"
        if _holds_no_journal(path):
            # Missing, empty, or a database whose creation a crash cut short (no table committed).
            for leftover in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
                with contextlib.suppress(FileNotFoundError):
                    leftover.unlink()
            with Journal.open(path, seal.table_id, base=seal.next_base()):
                pass
            done.append(f"segment {seal.segment + 1} started at {path}")
    except (OSError, sqlite3.Error) as error:
        reason = sqlite_reason(error, path) if isinstance(error, sqlite3.Error) else str(error)
        raise JournalError(
            f"journal {path}: cannot finish the seal of segment {seal.segment}: {reason}"
        ) from error
    return "; ".join(done) or None


# --- verifying ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SegmentVerdict:
    segment: int
    ok: bool
    line: str
    entries: int = 0
    location: Path | None = None


class _Refused(Exception):
    """One refusal of a sealed segment: its one line, the entries checked, the file (when found)."""

    def __init__(self, line: str, entries: int = 0, location: Path | None = None) -> None:
        super().__init__(line)
        self.line = line
        self.entries = entries
        self.location = location


def verify_segment(
    journal_path: str | Path,
    segment: int,
    *,
    key: bytes | None,
    previous: Seal | None = None,
    check_checkpoint: bool = True,
) -> SegmentVerdict:
    """One sealed segment on its own: its seal (format, MAC), its file (there, or archived; its sha256
    and size), SQLite's integrity, its base against the seal and the previous seal, every entry's
    chain link and hash, its count and final hash, and (``check_checkpoint``) the checkpoint: the
    previous seal's state with this segment folded on must be the seal's. The first refusal found is
    the verdict, in that order."""
    path = Path(journal_path)
    try:
        seal, previous = _seal_in_line(path, segment, key, previous)
        location = _sealed_file(path, segment, seal)
        _sealed_chain(location, segment, seal)
        if check_checkpoint:
            problem = _checkpoint_problem(path, location, seal, previous)
            if problem is not None:
                raise _Refused(problem, seal.entries, location)
    except _Refused as refused:
        line = f"segment {segment}: {refused.line}"
        return SegmentVerdict(segment, False, line, refused.entries, refused.location)
    where = "" if location.parent == segments_dir(path) else f" (archived at {location})"
    return SegmentVerdict(
        segment, True, f"segment {segment}: ok {seal.entries} entries{where}", seal.entries, location
    )


def _seal_in_line(
    path: Path, segment: int, key: bytes | None, previous: Seal | None
) -> tuple[Seal, Seal | None]:
    """Segment ``segment``'s seal, checked against the anchor key and following ``previous`` (read when
    not given), and that previous seal."""
    try:
        seal = read_seal(path, segment)
    except JournalError as error:
        raise _Refused(str(error)) from None
    if seal is None:
        raise _Refused("no seal (deleted?)")
    problem = seal_key_problem(seal, key)
    if problem is not None:
        raise _Refused(problem)
    if previous is None and segment > 1:
        try:
            previous = read_seal(path, segment - 1)
        except JournalError as error:
            raise _Refused(str(error)) from None
    if previous is not None and (
        previous.last_seq + 1 != seal.first_seq or previous.final_hash != seal.prev_hash
    ):
        raise _Refused(
            f"does not follow segment {previous.segment}'s seal (a segment swapped, reordered or left out?)"
        )
    if previous is None and segment > 1:
        raise _Refused(f"the seal of segment {segment - 1} is missing: its link cannot be checked (deleted?)")
    if segment == 1 and (seal.first_seq != 1 or seal.prev_hash != GENESIS_HASH):
        raise _Refused("the first segment does not start at entry 1 from the genesis hash")
    return seal, previous


def _sealed_file(path: Path, segment: int, seal: Seal) -> Path:
    """Where the sealed file is (beside the journal or archived), once its bytes are the sealed ones."""
    try:
        location = locate_segment(path, segment)
    except JournalError as error:
        raise _Refused(str(error).split(": ", 1)[-1]) from None
    try:
        sha, size = file_sha256(location)
    except OSError as error:
        raise _Refused(f"cannot read {location}: {error}", location=location) from None
    if size != seal.file_bytes or sha != seal.file_sha256:
        raise _Refused(
            f"{location.name} is not the file its seal names (sha256 differs: edited or replaced?)",
            location=location,
        )
    return location


def _sealed_chain(location: Path, segment: int, seal: Seal) -> None:
    """The bytes are the sealed ones; this proves the seal says what they hold: SQLite's integrity, the
    file's base, every entry's link and hash, the count and the final hash."""
    from controller.journal.verify import verify_connection  # noqa: PLC0415 (a cycle through proof)

    try:
        connection = sqlite3.connect(
            f"{location.resolve().as_uri()}?immutable=1", uri=True, isolation_level=None
        )
    except sqlite3.Error as error:
        raise _Refused(f"cannot open {location}: {error}", location=location) from None
    try:
        rows = [str(row[0]) for row in connection.execute("PRAGMA integrity_check(5)")]
        if rows != ["ok"]:
            raise _Refused(f"SQLite integrity check failed: {rows[0]}", location=location)
        base = read_segment_base(connection)
        if base.segment != segment or base.base_seq + 1 != seal.first_seq or base.base_hash != seal.prev_hash:
            raise _Refused(
                f"{location.name} is segment {base.segment}, not the one its seal names", location=location
            )
        chain = verify_connection(connection, location)
    except (sqlite3.Error, JournalError) as error:
        raise _Refused(f"cannot read {location}: {error}", location=location) from None
    finally:
        connection.close()
    if not chain.ok:
        raise _Refused(chain.summary(), chain.entries_checked, location)
    if chain.entries_checked != seal.entries or chain.head_hash != seal.final_hash:
        raise _Refused(
            f"holds {chain.entries_checked} entries ending {chain.head_hash[:16]}…, its seal says "
            f"{seal.entries} ending {seal.final_hash[:16]}…",
            chain.entries_checked,
            location,
        )


def _state_before(journal_path: Path, seal: Seal, previous: Seal | None, *, old_reading: bool) -> TableState:
    """The state at the start of ``seal``'s segment: the previous seal's checkpoint, or, where that
    cannot be read as a state (``refold_reason``), the sealed segments before it folded. ``old_reading``:
    with the meters as releases before checkpoint format 4 read a round (the progressive's net left out
    of its balance, ``MetersBeforeProgressiveNet``), to hold a seal of such a release to what it signs."""
    if previous is not None:
        previous_format = checkpoint_format(previous.checkpoint)
        if old_reading and previous_format in READ_AS_STATE_FORMATS:
            try:
                return state_from_checkpoint(previous.checkpoint, as_written=True)
            except CheckpointError as error:
                raise JournalError(f"seal of segment {previous.segment}: {error}") from None
        if not old_reading and refold_reason(previous.checkpoint) is None:
            return previous.state()
    state = TableState(seal.table_id)
    if old_reading:
        state.meters = MetersBeforeProgressiveNet()
    for number in range(1, seal.segment):
        with Journal.open_existing(locate_segment(journal_path, number), readonly=True) as sealed:
            state.apply_all(sealed.replay(since_seq=sealed.file.base.base_seq))
    return state


def _checkpoint_problem(journal_path: Path, location: Path, seal: Seal, previous: Seal | None) -> str | None:
    found = checkpoint_format(seal.checkpoint)
    previous_format = None if previous is None else checkpoint_format(previous.checkpoint)
    old_reading = found in METERS_WITHOUT_PROGRESSIVE_NET_FORMATS
    if old_reading and previous_format is not None and previous_format > (found or 0):
        return f"its seal's checkpoint is of format {found}, after a seal of a later format"
    try:
        state = _state_before(journal_path, seal, previous, old_reading=old_reading)
    except JournalError as error:
        return str(error)
    every_closed: dict[str, str] | None = None
    if found in EVERY_CLOSED_ROUND_FORMATS:
        # Formats 1 and 2 carried every round ever closed: the previous seal's map (verified in its
        # turn) with this segment's closings, since the reducer keeps only its recent window.
        if previous is None:
            every_closed = {}
        elif previous_format in EVERY_CLOSED_ROUND_FORMATS and previous is not None:
            carried = previous.checkpoint.get("state")
            closed = carried.get("closed_rounds") if isinstance(carried, dict) else None
            every_closed = dict(closed) if isinstance(closed, dict) else {}  # damaged: its own verdict says
        else:
            return f"its seal's checkpoint is of format {found}, after a seal of a later format"
    with Journal.open_existing(location, readonly=True) as sealed:
        entries = sealed.replay(since_seq=seal.first_seq - 1)
        state.apply_all(entries if every_closed is None else record_closings(entries, every_closed))
    # A seal of an earlier format is held to what that format carried (its own projection).
    expected = checkpoint_in_format(state_to_checkpoint(state), found, every_closed_round=every_closed)
    if canonical_json(expected) != canonical_json(seal.checkpoint):
        return "its seal's checkpoint is not the state its entries fold to (edited?)"
    return None


def verify_segments(
    journal_path: str | Path,
    *,
    key: bytes | None,
    progress: Callable[[SegmentVerdict, int, int], None] | None = None,
    check_checkpoint: bool = True,
) -> list[SegmentVerdict]:
    """Every sealed segment in order, each against the one before (``progress(verdict, done, total)``
    after each), and the open segment's base against the last seal."""
    path = Path(journal_path)
    numbers = seal_numbers(path)
    present = set(numbers)
    total = numbers[-1] if numbers else 0
    verdicts: list[SegmentVerdict] = []
    previous: Seal | None = None
    for number in range(1, total + 1):  # a number left out: a segment deleted with its seal
        if number not in present:
            verdict = SegmentVerdict(number, False, f"segment {number}: no seal (deleted?)")
        else:
            verdict = verify_segment(
                path, number, key=key, previous=previous, check_checkpoint=check_checkpoint
            )
        verdicts.append(verdict)
        if progress is not None:
            progress(verdict, number, total)
        try:
            previous = read_seal(path, number) if number in present else None
        except JournalError:
            previous = None
    return verdicts


# --- archive ----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Archived:
    segment: int
    path: Path
    last_utc: str


def archive_segments(
    journal_path: str | Path,
    archive_dir: str | Path,
    *,
    retention_days: int,
    key: bytes | None,
    now: datetime | None = None,
) -> list[Archived]:
    """Move every sealed segment whose last entry is older than ``retention_days`` to ``archive_dir``
    (its seal stays beside the journal, with a pointer to where the file went). Each is verified first
    (a damaged segment is not archived: JournalError), copied (temporary name, fsync, rename), checked
    against its seal's sha256 there, pointed to, and only then removed here. A crash at any point leaves
    the segment readable in one place or the other, and the next run finishes."""
    path = Path(journal_path)
    target_dir = Path(archive_dir)
    moment = now if now is not None else datetime.now(UTC)
    cutoff = format_time_utc(moment - timedelta(days=retention_days))
    moved: list[Archived] = []
    for number in seal_numbers(path):
        seal = read_seal(path, number)
        if seal is None or seal.last_utc >= cutoff:
            continue
        here = segment_file(path, number)
        if not here.exists():
            continue  # archived already
        verdict = verify_segment(path, number, key=key, check_checkpoint=False)
        if not verdict.ok:
            raise JournalError(f"archive refused: {verdict.line}")
        destination = target_dir / f"{seal.table_id}-{here.name}"
        try:
            target_dir.mkdir(parents=True, exist_ok=True)
            if not destination.exists() or file_sha256(destination)[0] != seal.file_sha256:
                temporary = destination.with_name(destination.name + ".partial")
                shutil.copyfile(here, temporary)
                with temporary.open("rb") as handle:
                    os.fsync(handle.fileno())
                os.chmod(temporary, stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
                os.replace(temporary, destination)
                fsync_directory(target_dir)
            if file_sha256(destination)[0] != seal.file_sha256:
                raise JournalError(
                    f"archive {destination}: the copy differs from its seal; the segment stays"
                )
            pointer = {"path": str(destination.resolve()), "archived_utc": format_time_utc(moment)}
            _write_atomically(
                archived_file(path, number), (json.dumps(pointer, sort_keys=True) + "\n").encode()
            )
            here.unlink()
            fsync_directory(here.parent)
        except OSError as error:
            raise JournalError(f"archive of segment {number} to {target_dir}: {error}") from error
        moved.append(Archived(number, destination, seal.last_utc))
    return moved
