"""The journal proves itself before the table opens (docs/journal.md "The anchor" and "When the journal
is refused").

``startup_check`` is what `flushtable run` decides before it appends anything and what `flushtable
journal verify` reports: one code path, so verify exits non-zero whenever run would refuse. It reads
the anchor first and, with an anchor key configured, requires its HMAC (controller/journal/anchor.py:
an anchor recomputed without the key is refused before anything it names is believed); then
``check_journal``, read through a read-only connection (controller/journal/snapshot.py: a read-only
file system too) in one read transaction, and never writing anything:

1. SQLite's own ``PRAGMA integrity_check``: every b-tree page, and every index against its table (a
   flipped bit in an index page makes readers that go through the index, recall among them, drop
   entries while the chain, read through the table, still verifies). Not ``quick_check``: it skips
   exactly that index-against-table check. Measured: 0.19 s on 100,000 entries (48 MB), against 0.75 s
   for the chain.
2. The whole hash chain (controller/journal/verify.py): names the first bad entry.
3. The chain head against the anchor beside the journal (controller/journal/anchor.py): the anchored
   entry must be there with that hash. A journal shorter than its anchor (truncated, a write-ahead log
   lost or damaged, which SQLite silently ignores from the first bad frame on) is caught here.
4. The append-only triggers: every trigger of the journal's schema present with its exact text, and no
   other trigger on the journal's tables.

``prepare_for_run`` is `flushtable run`'s: ``startup_check``, then the new journal's anchor where one
is to be created. An existing journal must pass ``check_journal`` and have an anchor; a missing or
empty (0 bytes) journal is refused where the anchor says entries existed; a new journal is created
only where neither the journal nor an anchor naming entries exists, or on an explicit
``--new-journal`` (which refuses to replace a journal that has any content).
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from controller.journal.anchor import (
    Anchor,
    AnchorError,
    anchor_path,
    key_problem,
    read_anchor,
    remove_stale_temporaries,
    write_anchor,
)
from controller.journal.errors import JournalError
from controller.journal.schema import (
    APPLICATION_ID,
    FIRST_SEGMENT,
    LEGACY_CHAIN_TRIGGER_SQL,
    SegmentBase,
    check_schema_version,
    normalised_sql,
    read_segment_base,
    schema_triggers,
)
from controller.journal.snapshot import readonly_connection, wal_path
from controller.journal.verify import verify_connection
from controller.journal.writer import journal_log

REFUSED_HINT = 'docs/journal.md "When the journal is refused"'
_INTEGRITY_PROBLEMS_SHOWN = 20  # PRAGMA integrity_check(N): stop after N problems


class JournalRefused(JournalError):
    """`flushtable run` will not append to this journal. One line; the CLI exits 2."""


@dataclass(frozen=True, slots=True)
class Verdict:
    """One journal's verdict: ``line`` is what `journal verify` prints and `run` refuses with."""

    ok: bool
    line: str
    entries: int = 0  # entries whose chain checked (all of them when ok)
    head_seq: int = 0
    head_hash: str = ""
    table_id: str | None = None
    anchor: Anchor | None = None  # the anchor beside the journal that was checked, if any
    missing_triggers: tuple[str, ...] = ()


def _trigger_problem(
    connection: sqlite3.Connection, base: SegmentBase = FIRST_SEGMENT
) -> tuple[str | None, tuple[str, ...]]:
    """What is wrong with the journal's triggers (None: nothing), and the missing ones' names. A journal
    written before segments has the chain trigger of its day (no base): accepted as the first segment
    it is, and only there (docs/journal.md "Segments and seals")."""
    expected = dict(schema_triggers())
    legacy_chain = ("journal", normalised_sql(LEGACY_CHAIN_TRIGGER_SQL))
    present = {
        name: (table, normalised_sql(sql))
        for name, table, sql in connection.execute(
            "SELECT name, tbl_name, sql FROM sqlite_schema WHERE type = 'trigger'"
        )
    }
    missing = tuple(sorted(set(expected) - set(present)))
    if missing:
        plural = "s" if len(missing) > 1 else ""
        return f"append-only trigger{plural} {', '.join(missing)} missing (dropped?)", missing
    if base == FIRST_SEGMENT and present.get("journal_extends_chain") == legacy_chain:
        expected["journal_extends_chain"] = legacy_chain
    altered = sorted(name for name in expected if present[name] != expected[name])
    if altered:
        return f"append-only trigger {', '.join(altered)} altered (not the schema's own)", ()
    journal_tables = {table for table, _sql in expected.values()}
    unknown = sorted(name for name, (table, _sql) in present.items() if name not in expected)
    unknown = [name for name in unknown if present[name][0] in journal_tables]
    if unknown:
        return f"unknown trigger {', '.join(unknown)} on the journal (added?)", ()
    return None, ()


def _integrity_problem(connection: sqlite3.Connection) -> str | None:
    try:
        rows = [
            str(row[0]) for row in connection.execute(f"PRAGMA integrity_check({_INTEGRITY_PROBLEMS_SHOWN})")
        ]
    except sqlite3.DatabaseError as error:
        return f"SQLite integrity check failed: {error}"
    if rows == ["ok"]:
        return None
    more = f" (and {len(rows) - 1} more problem{'s' if len(rows) > 2 else ''})" if len(rows) > 1 else ""
    return f"SQLite integrity check failed: {rows[0].strip()}{more}"


def _seal_problem(path: Path, base: SegmentBase, table_id: str | None, key: bytes | None) -> str | None:
    """The open segment against the last seal, without reading any sealed segment: the last seal is
    the one just before this segment, verifies with the key, and ends where this segment starts."""
    from controller.journal.seals import read_seal, seal_key_problem, seal_numbers  # noqa: PLC0415

    numbers = seal_numbers(path)
    if base.segment == 1:
        if numbers:
            return (
                f"the journal is a first segment, but segments {numbers[0]} to {numbers[-1]} are sealed "
                "beside it (the open segment replaced?)"
            )
        return None
    if not numbers or numbers[-1] != base.segment - 1:
        last = f"the last seal is segment {numbers[-1]}" if numbers else "no seal is there"
        return f"the open segment is segment {base.segment}, but {last} (a seal lost or added?)"
    seal = read_seal(path, base.segment - 1)
    if seal is None:
        return f"the seal of segment {base.segment - 1} is missing"
    problem = seal_key_problem(seal, key)
    if problem is not None:
        return problem
    if seal.table_id != table_id:
        return f"the seal of segment {seal.segment} is table {seal.table_id!r}, not {table_id!r}"
    if (seal.last_seq, seal.final_hash) != (base.base_seq, base.base_hash):
        return (
            f"the open segment starts after entry {base.base_seq}, but the seal of segment {seal.segment} "
            f"ends at entry {seal.last_seq} with another hash (a seal or the open segment replaced?)"
        )
    return None


def _sealed_hash(path: Path, seq: int) -> str | None:
    """The hash of entry ``seq`` in the sealed segment holding it (one row: an anchor that lags a seal)."""
    from controller.journal.seals import segment_of_seq  # noqa: PLC0415

    found = segment_of_seq(path, seq)
    if found is None:
        return None
    connection = sqlite3.connect(f"{found[1].resolve().as_uri()}?immutable=1", uri=True)
    try:
        row = connection.execute("SELECT hash FROM journal WHERE seq = ?", (seq,)).fetchone()
    finally:
        connection.close()
    return None if row is None else str(row[0])


def _examine(
    connection: sqlite3.Connection,
    path: Path,
    anchor: Anchor | None,
    explicit_anchor: tuple[int, str] | None,
    key: bytes | None = None,
) -> Verdict:
    if connection.execute("PRAGMA application_id").fetchone()[0] != APPLICATION_ID:
        raise JournalError(f"journal {path}: not a flushtable journal")
    # An earlier schema is read (and migrated when the journal is next opened to append).
    check_schema_version(connection.execute("PRAGMA user_version").fetchone()[0], path)
    meta = connection.execute("SELECT value FROM journal_meta WHERE key = 'table_id'").fetchone()
    table_id = str(meta[0]) if meta else None
    base = read_segment_base(connection)
    trigger_problem, missing = _trigger_problem(connection, base)  # reported last, but always known

    def verdict(line: str | None, entries: int = 0, head_hash: str = "") -> Verdict:
        ok = line is None
        what = f"ok {entries} entries"
        if base.segment > 1:
            what += f" in open segment {base.segment} (entries {base.base_seq + 1} on; the last seal checked)"
        text = line or what + (f", anchored at entry {anchor.seq}" if anchor else "")
        return Verdict(ok, text, entries, base.base_seq + entries, head_hash, table_id, anchor, missing)

    integrity = _integrity_problem(connection)
    if integrity is not None:
        return verdict(integrity)
    sealed = _seal_problem(path, base, table_id, key)
    if sealed is not None:
        return verdict(sealed)
    chain = verify_connection(connection, path, anchor=explicit_anchor)
    entries, head_hash = chain.entries_checked, chain.head_hash
    head_seq = base.base_seq + entries
    if not chain.ok:
        return verdict(chain.summary(), entries, head_hash)
    if anchor is not None:
        where = anchor_path(path).name
        if anchor.table_id != table_id:
            line = f"the anchor ({where}) is table {anchor.table_id!r}, but the journal is table {table_id!r}"
            return verdict(line, entries, head_hash)
        if anchor.seq > head_seq:
            line = (
                f"bad entry {head_seq + 1}: anchored entry missing: the journal ends at entry {head_seq}, "
                f"its anchor ({where}) names entry {anchor.seq} (entries lost from its end: truncated, or "
                "a lost or damaged write-ahead log?)"
            )
            return verdict(line, entries, head_hash)
        if 0 < anchor.seq <= base.base_seq:
            # The anchor lags behind the last seal: its entry is sealed (normally the seal's last).
            sealed_hash = base.base_hash if anchor.seq == base.base_seq else _sealed_hash(path, anchor.seq)
            if sealed_hash != anchor.hash:
                line = f"bad entry {anchor.seq}: hash differs from the anchor ({where}) (chain rewritten?)"
                return verdict(line, entries, head_hash)
        elif anchor.seq > 0:
            row = connection.execute("SELECT hash FROM journal WHERE seq = ?", (anchor.seq,)).fetchone()
            if row is None or row[0] != anchor.hash:
                line = f"bad entry {anchor.seq}: hash differs from the anchor ({where}) (chain rewritten?)"
                return verdict(line, entries, head_hash)
    return verdict(trigger_problem, entries, head_hash)


def check_journal(
    path: str | Path,
    *,
    anchor: Anchor | None,
    explicit_anchor: tuple[int, str] | None = None,
    key: bytes | None = None,
) -> Verdict:
    """Every check, read-only; ``anchor`` is the anchor beside the journal (``read_anchor``) and
    ``explicit_anchor`` one a supervisor kept elsewhere (`journal verify --anchor`). A ``JournalError``
    when the file is not a journal or cannot be read at all (a missing file with no anchor naming
    entries among them)."""
    journal_path = Path(path)
    gone = _gone(journal_path)
    if gone is not None:
        if gone == "missing" and (anchor is None or anchor.seq == 0):
            raise JournalError(f"journal {journal_path}: no such file")
        return Verdict(False, _gone_line(gone, anchor, journal_path), anchor=anchor)
    with readonly_connection(journal_path) as connection:
        try:
            connection.execute("BEGIN")  # one read transaction: every check sees the same snapshot
            try:
                return _examine(connection, journal_path, anchor, explicit_anchor, key)
            finally:
                connection.execute("COMMIT")
        except sqlite3.Error as error:
            raise JournalError(f"journal {journal_path}: cannot read: {error}") from error


def _gone(path: Path) -> str | None:
    """'missing', 'empty' (0 bytes), or None when the file has content."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return "missing"
    except OSError as error:
        raise JournalError(f"journal {path}: cannot read: {error}") from error
    return "empty" if size == 0 else None


def _gone_line(gone: str, anchor: Anchor | None, path: Path) -> str:
    what = "missing" if gone == "missing" else "empty (0 bytes)"
    if anchor is None:
        return f"the journal is {what}, and it has no anchor to say what it held"
    if anchor.seq == 0:
        return f"the journal is {what}; its anchor names no entry"
    return (
        f"the journal is {what}, but its anchor ({anchor_path(path).name}) says entries 1 to "
        f"{anchor.seq} were written (the last with hash {anchor.hash[:16]}…)"
    )


def _refused(path: Path, reason: str) -> JournalRefused:
    return JournalRefused(f"journal {path} refused: {reason}; nothing was appended (see {REFUSED_HINT})")


Then = Literal["open", "create", "create_superseding", "finish_seal"]


@dataclass(frozen=True, slots=True)
class Startup:
    """What `flushtable run` decides before it writes anything (``startup_check``), and what `journal
    verify` reports: ``refusal`` (the reason `run` refuses, which `verify` prints), or how `run` goes on
    (``then``): open the journal (``verdict``, proven against ``anchor``), or create a new one (the
    genesis anchor written first; ``create_superseding``: an old anchor that named entries kept aside)."""

    refusal: str | None
    then: Then = "open"
    verdict: Verdict | None = None
    anchor: Anchor | None = None


def startup_check(  # noqa: PLR0912 - one branch per start-up refusal, each its own one-line error
    path: str | Path,
    table_id: str | None,
    *,
    key: bytes | None,
    new_journal: bool = False,
    explicit_anchor: tuple[int, str] | None = None,
) -> Startup:
    """Every check `flushtable run` makes before it opens the journal, read-only (one code path for
    `run` and `journal verify`, so that verify exits non-zero whenever run would refuse). ``table_id``:
    the configured table (None: whichever the journal is, for `verify` without a configuration).
    ``key``: the anchor key, or None. A ``JournalError`` when the file is not a journal at all."""
    journal_path = Path(path)
    try:
        anchor = read_anchor(journal_path)
    except AnchorError as error:
        return Startup(str(error))
    if anchor is not None:
        if table_id is not None and anchor.table_id != table_id:
            where = anchor_path(journal_path).name
            line = f"its anchor ({where}) is table {anchor.table_id!r}, not {table_id!r}"
            return Startup(line, anchor=anchor)
        # Before anything the anchor says is believed: one written without the key proves nothing.
        problem = key_problem(anchor, key, journal_path)
        if problem is not None:
            return Startup(problem, anchor=anchor)
    gone = _gone(journal_path)
    wal = wal_path(journal_path)
    wal_has_frames = wal.exists() and wal.stat().st_size > 0
    if new_journal:
        if gone is None or wal_has_frames:
            what = journal_path if gone is None else wal
            return Startup(
                f"--new-journal: {what} exists and is not empty; a journal is never replaced: move it, its "
                "-wal and its anchor aside yourself (keep them: they are the table's record)",
                anchor=anchor,
            )
        superseding = anchor is not None and anchor.seq > 0
        return Startup(None, "create_superseding" if superseding else "create", anchor=anchor)
    from controller.journal.seals import last_seal  # noqa: PLC0415
    from controller.journal.segments import finish_interrupted_seal  # noqa: PLC0415

    interrupted = finish_interrupted_seal(journal_path, dry_run=True)
    if interrupted is not None:
        # `run` finishes it first (prepare_for_run); `verify` says so. The seal itself must hold.
        seal = last_seal(journal_path)
        assert seal is not None
        problem = _seal_covers_anchor(seal, anchor, key, journal_path)
        if problem is not None:
            return Startup(problem, anchor=anchor)
        return Startup(None, "finish_seal", Verdict(True, f"ok: {interrupted}; `run` finishes it"), anchor)
    if gone is not None:
        if anchor is not None and anchor.seq == 0 and not wal_has_frames:
            # A new journal whose creation was cut short (the anchor is written first): start it.
            return Startup(None, "create", anchor=anchor)
        if anchor is None and gone == "missing" and not wal_has_frames:
            return Startup(None, "create")  # the anchor first, then the journal
        reason = _gone_line(gone, anchor, journal_path)
        if anchor is None or anchor.seq == 0:
            reason += " (start a new journal only with `flushtable run --new-journal`)"
        return Startup(reason, anchor=anchor)
    verdict = check_journal(journal_path, anchor=anchor, explicit_anchor=explicit_anchor, key=key)
    if not verdict.ok:
        return Startup(verdict.line, verdict=verdict, anchor=anchor)
    if table_id is not None and verdict.table_id is not None and verdict.table_id != table_id:
        return Startup(f"it belongs to table {verdict.table_id!r}, not {table_id!r}", verdict=verdict)
    if anchor is None and verdict.entries > 0:
        return Startup(
            f"it has {verdict.entries} entries but no anchor ({anchor_path(journal_path).name}): if this "
            f"is the table's journal, run `flushtable journal anchor --journal {journal_path}`",
            verdict=verdict,
        )
    return Startup(None, "open", verdict, anchor)


def _seal_covers_anchor(seal: Any, anchor: Anchor | None, key: bytes | None, path: Path) -> str | None:
    """A seal a crash left unfinished must verify with the key and hold everything the anchor names."""
    from controller.journal.seals import seal_key_problem  # noqa: PLC0415

    problem = seal_key_problem(seal, key)
    if problem is not None:
        return problem
    if anchor is not None and (
        anchor.seq > seal.last_seq or (anchor.seq == seal.last_seq and anchor.hash != seal.final_hash)
    ):
        return (
            f"the journal's open segment is missing after the seal of segment {seal.segment} (entry "
            f"{seal.last_seq}), but its anchor ({anchor_path(path).name}) names entry {anchor.seq}"
        )
    return None


def prepare_for_run(
    path: str | Path, table_id: str, *, key: bytes | None = None, new_journal: bool = False
) -> Anchor:
    """`flushtable run`'s start-up proof, before the journal is opened to append (``startup_check``).
    Returns the anchor the journal was proven against (a new journal's genesis anchor, written first);
    raises ``JournalRefused`` (one line) otherwise. Writes nothing but a new journal's anchor."""
    journal_path = Path(path)
    _remove_stale_temporaries(journal_path)
    try:
        from controller.journal.segments import settle_rollback_journal  # noqa: PLC0415

        if settle_rollback_journal(journal_path):
            journal_log().warning("journal_rolled_back", journal=str(journal_path))
        decided = startup_check(journal_path, table_id, key=key, new_journal=new_journal)
        if decided.then == "finish_seal" and decided.refusal is None:
            # A seal a crash cut short (controller/journal/segments.py): finished, then proven as usual.
            from controller.journal.segments import finish_interrupted_seal  # noqa: PLC0415

            done = finish_interrupted_seal(journal_path)
            journal_log().warning("journal_seal_finished", journal=str(journal_path), done=done)
            decided = startup_check(journal_path, table_id, key=key, new_journal=new_journal)
    except JournalRefused:
        raise
    except JournalError as error:
        raise _refused(journal_path, str(error)) from None
    if decided.refusal is not None:
        raise _refused(journal_path, decided.refusal)
    if decided.then == "open" and decided.anchor is not None:
        return decided.anchor
    if decided.then == "create_superseding" and decided.anchor is not None:
        _supersede(journal_path, decided.anchor)
    # A new journal (or an empty one with no anchor): the anchor first, then the journal.
    return write_anchor(journal_path, Anchor.genesis(table_id), key=key)


def _remove_stale_temporaries(journal_path: Path) -> None:
    """The anchor's and the seals' temporaries a killed writer left (``NAME.anchor.tmp-PID``,
    ``segment-NNNNNN.seal.json.tmp-PID``): removed at the start, said in the log. They are never read
    (a write is the rename), so this is tidiness, not recovery."""
    from controller.journal.seals import segments_dir  # noqa: PLC0415

    anchor = anchor_path(journal_path)
    removed = remove_stale_temporaries(anchor.parent, anchor.name)
    removed += remove_stale_temporaries(segments_dir(journal_path), "segment-")
    if removed:
        journal_log().info(
            "journal_temporaries_removed", journal=str(journal_path), files=[path.name for path in removed]
        )


def _supersede(journal_path: Path, anchor: Anchor) -> None:
    """--new-journal over a lost journal: the old anchor is kept, renamed, never overwritten."""
    old = anchor_path(journal_path)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    kept = old.with_name(f"{old.name}.superseded-{stamp}")
    try:
        old.rename(kept)
    except OSError as error:
        raise JournalError(f"anchor {old}: cannot keep it as {kept.name}: {error}") from error
    journal_log().warning(
        "journal_anchor_superseded",
        journal=str(journal_path),
        old_anchor=str(kept),
        old_seq=anchor.seq,
        old_hash=anchor.hash,
    )


def anchor_journal(path: str | Path, *, key: bytes | None) -> Verdict:
    """`flushtable journal anchor`: check the journal fully (against its anchor if it has one, which
    must verify with ``key``) and, if it passes, write its anchor at the head, keyed with ``key``. For a
    journal made before anchors, or to move an anchor up to the head with the table stopped. The
    verdict's line says what was done."""
    journal_path = Path(path)
    anchor = read_anchor(journal_path)
    if anchor is not None:
        problem = key_problem(anchor, key, journal_path)
        if problem is not None:
            return Verdict(False, problem, anchor=anchor)
    verdict = check_journal(journal_path, anchor=anchor, key=key)
    if not verdict.ok:
        return verdict
    if verdict.table_id is None:
        raise JournalError(f"journal {journal_path}: has no table id")
    head = Anchor.of(verdict.table_id, verdict.head_seq, verdict.head_hash)
    anchor = write_anchor(journal_path, head, key=key)
    return Verdict(
        True,
        f"{verdict.line}; anchor {anchor_path(journal_path)} written: {anchor.text()}",
        verdict.entries,
        verdict.head_seq,
        verdict.head_hash,
        verdict.table_id,
        anchor,
    )
