"""The bulk writer of bench/bench_years.py: a journal of tens of millions of entries in an hour, which the
real ``flushtable journal verify`` accepts whole (chain, seals, checkpoints, totals).

How (docs/journal.md "Measured: a journal of years"): the first segment is written through the real
path (``Journal.append_many`` of the engine's rounds as retagged copies, the reducer folded on from what
it wrote, ``seal_open_segment``). Every later segment is created by ``Journal.open`` (its schema, its
triggers, its base: the last seal's final entry) and filled by this writer, which does per entry only
what must differ between copies, with everything else worked out once per template entry:

- the row: the template entry's stored texts (its public part, its salted private part and digest, as
  ``Journal.append_many`` wrote them for the first copy), with the copy's round id, seq and time; a
  round_started's public part is the template's with its round id replaced (checked equal to the
  canonical JSON of the retagged part once per template round);
- the hash: ``chain.entry_hash_from_text``'s formula, its envelope spliced from texts made once per
  template entry (checked equal to ``entry_hash_from_text`` on the first copy);
- the rows go in with ``executemany`` (the schema's triggers run for each row: the chain, a round
  started once and closed once), the totals and the round index through the store's own
  ``totals.record`` in the same transaction;
- the checkpoint is the real reducer's: each entry is folded by ``TableState.apply`` (the template's
  typed entry, a round_started's with the copy's round id) and the segment sealed by the real
  ``seal_open_segment``.

What differs from a table's journal: a private part's salt repeats across copies of the same entry (the
digest still commits to its text: ``verify`` checks it), and every entry of a round has the round's time
(60 s a round, 60 rounds an hour).
"""

from __future__ import annotations

import hashlib
import sqlite3
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, NamedTuple

import msgspec

from controller.journal import Journal
from controller.journal import entries as typed
from controller.journal.anchor import Anchor, write_anchor
from controller.journal.chain import canonical_json, entry_hash_from_text, format_time_utc
from controller.journal.segments import seal_open_segment
from controller.journal.state import TableState
from controller.journal.store import JournalEntry
from controller.journal.totals import TOTAL_KINDS, record
from controller.names import format_round_id


class Folded(NamedTuple):
    """What the reducer reads of an entry (controller/journal/state.py ``Stored``)."""

    seq: int
    time_utc: str
    table_id: str
    round_id: str | None
    source: str
    kind: str
    entry: typed.Entry


@dataclass(frozen=True, slots=True)
class Template:
    """One entry of the template copy, as the real path wrote it, split for splicing."""

    kind: str
    source: str
    round_id: str | None  # the template's (a key: each copy's round gets its own numbered id)
    version: int
    public: dict[str, Any]
    public_text: str
    private_text: str | None
    private_digest: str | None
    typed_entry: typed.Entry
    head: str  # '{"kind":K,"payload":'
    digest: str  # ',"private_digest":D,"round_id":'
    tail: str  # ',"source":S,"table_id":T,"time_utc":'
    end: str  # ',"version":V}'
    counted: bool  # a kind the totals count
    starts: bool  # a round_started: its public part names the round


def _template(entry: JournalEntry) -> Template:
    digest = "null" if entry.private_digest is None else canonical_json(entry.private_digest)
    return Template(
        kind=entry.kind,
        source=entry.source,
        round_id=entry.round_id,
        version=entry.version,
        public=entry.public,
        public_text=canonical_json(entry.public),
        private_text=entry.private_text,
        private_digest=entry.private_digest,
        typed_entry=entry.entry,
        head=f'{{"kind":{canonical_json(entry.kind)},"payload":',
        digest=f',"private_digest":{digest},"round_id":',
        tail=f',"source":{canonical_json(entry.source)},"table_id":{canonical_json(entry.table_id)},"time_utc":',
        end=f',"version":{entry.version}}}',
        counted=entry.kind in TOTAL_KINDS,
        starts=entry.kind == "round_started",
    )


class StepClock:
    def __init__(self, start: datetime) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now


@dataclass
class Progress:
    written: int = 0
    rounds: int = 0
    seals: int = 0
    copy: int = 0
    splice_checked: bool = False
    rounds_started: int = 0  # in the whole journal: the next round's id is numbered one more
    last_round_id: str | None = None  # the last round started (a batch opens with its tail entries)
    seal_s: float = 0.0
    real_path_s: float = 0.0
    bulk_s: float = 0.0


def build_bulk(
    path: Path,
    entries: int,
    base: list[list[Any]],
    *,
    table_id: str,
    start: datetime,
    round_step: timedelta,
    segment_entries: int,
    open_entries: int,
    retag: Callable[[list[list[Any]], str], list[list[Any]]],
) -> dict[str, Any]:
    """``entries`` entries at ``path``: sealed segments of ``segment_entries`` (the first through the
    real path, the rest by the bulk writer), then an open segment of about ``open_entries``."""
    if segment_entries <= 0:
        raise SystemExit("the bulk writer writes sealed segments: --segment-entries must be > 0")
    clock = StepClock(start)
    state = TableState(table_id)
    done = Progress()
    started = time.perf_counter()
    cpu_started = time.process_time()
    sealed_target = max(entries - open_entries, 0)

    def anchor_at(seq: int, hash_hex: str) -> None:
        write_anchor(path, Anchor.of(table_id, seq, hash_hex, now=clock.now))

    def seal() -> None:
        sealing = time.perf_counter()
        seal_open_segment(path, state, key=None, now=clock.now, write_anchor_at_end=anchor_at)
        done.seals += 1
        done.seal_s += time.perf_counter() - sealing

    # 1. The first segment through the real path; its first copy is the template of every later one.
    templates: list[list[Template]] = []
    journal = Journal.open(path, table_id, clock=clock, synchronous="OFF")
    here = 0
    try:
        journal.wal.defer_checkpoints()
        while here < min(segment_entries, sealed_target or entries):
            for one_round in retag(base, f"C{done.copy}"):
                written = journal.append_many(one_round)
                state.apply_all(written)
                if done.copy == 0:
                    templates.append([_template(entry) for entry in written])
                done.written += len(written)
                here += len(written)
                done.rounds += 1
                clock.now += round_step
            done.copy += 1
        journal.wal.checkpoint()
    finally:
        journal.close()
    done.real_path_s = time.perf_counter() - started
    done.rounds_started, done.last_round_id = state.rounds_started, state.last_round_id
    print(f"  {path.name}: {done.written:,} entries by the real path", file=sys.stderr, flush=True)
    # 2. The rest by the bulk writer, a segment at a time.
    while done.written < entries:
        seal()  # the segment before is full: the real path's, or one of the bulk writer's sealed ones
        bulk_started = time.perf_counter()
        goal = entries - done.written  # the open segment, last
        if done.written < sealed_target:
            goal = min(segment_entries, sealed_target - done.written)
        _bulk_segment(
            path,
            table_id,
            templates=templates,
            state=state,
            clock=clock,
            round_step=round_step,
            done=done,
            goal=goal,
        )
        done.bulk_s += time.perf_counter() - bulk_started
        rate = done.written / (time.perf_counter() - started)
        print(f"  {path.name}: {done.written:,} entries, {rate:,.0f}/s", file=sys.stderr, flush=True)
    with Journal.open_existing(path) as head_journal:
        last = head_journal.last_entry()
    assert last is not None
    anchor_at(last.seq, last.hash)
    return {
        "how": (
            "segment 1 through Journal.append_many (retagged engine rounds, reducer folded, "
            "seal_open_segment); every later segment made by Journal.open and filled by splicing segment 1's "
            "first copy as written (numbered round ids, the chain's formula, template private parts), "
            "executemany with the insert triggers and indexes set aside and remade from their own SQL, "
            "totals.record, TableState.apply on every entry, sealed by seal_open_segment (docs/journal.md "
            "'Measured')"
        ),
        "entries": done.written,
        "rounds": done.rounds,
        "segments_sealed": done.seals,
        "open_segment_entries": here_of(path),
        "segment_entries": segment_entries,
        "span_days": round((clock.now - start).total_seconds() / 86400, 1),
        "build_s": round(time.perf_counter() - started, 1),
        "build_cpu_s": round(time.process_time() - cpu_started, 1),
        "build_entries_per_s": round(done.written / (time.perf_counter() - started)),
        "build_entries_per_cpu_s": round(done.written / max(time.process_time() - cpu_started, 1e-9)),
        "real_path_s": round(done.real_path_s, 1),
        "bulk_s": round(done.bulk_s, 1),
        "seal_s": round(done.seal_s, 1),
    }


def here_of(path: Path) -> int:
    with Journal.open_existing(path) as journal:
        return journal.reader.segment_summary()[0]


_COLUMNS = (
    "seq, time_utc, table_id, round_id, source, kind, version, payload, private, private_digest, "
    "prev_hash, hash"
)
_INSERT = f"INSERT INTO journal ({_COLUMNS}) VALUES ({', '.join('?' * 12)})"
_ROUNDS_PER_COMMIT = 200


def _not_folded(_entry: Folded) -> None:
    """No reducer: an open segment extended for a measurement is never sealed by this writer."""


def extend_open(
    path: Path,
    base: list[list[Any]],
    *,
    table_id: str,
    round_step: timedelta,
    open_entries: int,
) -> dict[str, Any]:
    """Bulk-append copies of the template to the open segment of a journal this module built until it
    holds ``open_entries`` (the worst case of a start: an open segment at the seal policy's limit). The
    template is read back from the first sealed segment (its first copy, as the real path wrote it);
    these copies' rounds are numbered on from the journal's count, as the bulk writer numbers them."""
    from controller.journal.seals import segment_file  # noqa: PLC0415

    lengths = [len(one_round) for one_round in base]
    with Journal.open_existing(segment_file(path, 1), readonly=True) as first:
        written = list(first.entries())[: sum(lengths)]
    templates: list[list[Template]] = []
    for length in lengths:
        templates.append([_template(entry) for entry in written[:length]])
        del written[:length]
    here = here_of(path)
    with Journal.open_existing(path) as journal:
        last = journal.last_entry()
    assert last is not None
    clock = StepClock(datetime.fromisoformat(last.time_utc.removesuffix("Z") + "+00:00") + round_step)
    with Journal.open_existing(path) as journal:
        started_last = journal.last_entries(1, ["round_started"])
        done = Progress(
            rounds_started=journal.indexes.round_count(),
            last_round_id=started_last[0].round_id if started_last else None,
        )
    started = time.perf_counter()
    if open_entries > here:
        _bulk_segment(
            path,
            table_id,
            templates=templates,
            state=None,
            clock=clock,
            round_step=round_step,
            done=done,
            goal=open_entries - here,
        )
    with Journal.open_existing(path) as journal:
        last = journal.last_entry()
    assert last is not None
    write_anchor(path, Anchor.of(table_id, last.seq, last.hash, now=clock.now))
    return {
        "open_segment_entries_before": here,
        "open_segment_entries": here_of(path),
        "added_s": round(time.perf_counter() - started, 1),
    }


def _bulk_segment(
    path: Path,
    table_id: str,
    *,
    templates: list[list[Template]],
    state: TableState | None,
    clock: StepClock,
    round_step: timedelta,
    done: Progress,
    goal: int,
) -> None:
    """Append whole copies of the template's rounds to the open segment until it holds ``goal`` more
    entries (or a few more: a round is never cut)."""
    Journal.open(path, table_id, clock=clock, synchronous="OFF").close()  # the segment, made as run makes it
    connection = sqlite3.connect(path, isolation_level=None)
    try:
        connection.execute("PRAGMA synchronous = OFF")
        connection.execute("PRAGMA cache_size = -200000")
        # The insert triggers and the two indexes are set aside while the rows go in and made again
        # after, from their own SQL as Journal.open wrote it (a bulk load: an index built once is a
        # sort, and the triggers' checks per row were half of an insert's cost). What the triggers
        # check per row (each entry extends the last; a round starts once, and closes once after it
        # started), `flushtable journal verify --segments` checks for the whole segment after.
        set_aside = connection.execute(
            "SELECT type, name, sql FROM sqlite_schema WHERE tbl_name = 'journal' AND sql IS NOT NULL "
            "AND (type = 'index' OR (type = 'trigger' AND sql LIKE '%BEFORE INSERT%')) ORDER BY rowid"
        ).fetchall()
        for kind, name, _sql in set_aside:
            connection.execute(f"DROP {kind.upper()} {name}")
        row = connection.execute("SELECT seq, hash FROM journal ORDER BY seq DESC LIMIT 1").fetchone()
        if row is None:
            base = connection.execute(
                "SELECT (SELECT value FROM journal_meta WHERE key = 'base_seq'), "
                "(SELECT value FROM journal_meta WHERE key = 'base_hash')"
            ).fetchone()
            seq, prev = int(base[0]), str(base[1])
        else:
            seq, prev = int(row[0]), str(row[1])
        apply: Callable[[Folded], None] = state.apply if state is not None else _not_folded
        sha256 = hashlib.sha256
        added = 0
        round_index = done.rounds % len(templates)  # where the copies stand in the template
        rows: list[tuple[Any, ...]] = []
        counted: list[tuple[int, str, str | None, str, dict[str, Any]]] = []
        rounds_here = 0
        checked = not done.splice_checked
        while added < goal:
            one_round = templates[round_index]
            time_text = format_time_utc(clock.now)
            time_json = canonical_json(time_text)
            # Each round started gets the id a table gives it (names.format_round_id: its day and the
            # journal's count of rounds started); a batch opens with the previous round's tail
            # entries, which keep that round's id.
            ids: dict[str, tuple[str, str]] = {}
            day = clock.now.date()
            for template in one_round:
                if template.round_id is None:
                    round_id, round_json = None, "null"
                else:
                    known = ids.get(template.round_id)
                    if known is None:
                        if template.starts:
                            done.rounds_started += 1
                            done.last_round_id = format_round_id(table_id, day, done.rounds_started)
                        new_id = done.last_round_id or template.round_id
                        known = ids[template.round_id] = (new_id, canonical_json(new_id))
                    round_id, round_json = known
                public_text = template.public_text
                entry = template.typed_entry
                public = template.public
                if template.starts:
                    public = {**template.public, "round_id": round_id}
                    public_text = canonical_json(public)
                    entry = msgspec.structs.replace(entry, round_id=round_id)
                seq += 1
                hash_hex = sha256(
                    (
                        prev
                        + template.head
                        + public_text
                        + template.digest
                        + round_json
                        + ',"seq":'
                        + str(seq)
                        + template.tail
                        + time_json
                        + template.end
                    ).encode("utf-8")
                ).hexdigest()
                if checked:  # the splice is the chain's formula: proven on the first bulk copy
                    assert hash_hex == entry_hash_from_text(
                        prev_hash=prev,
                        seq=seq,
                        time_utc=time_text,
                        table_id=table_id,
                        round_id=round_id,
                        source=template.source,
                        kind=template.kind,
                        version=template.version,
                        payload_text=public_text,
                        private_digest=template.private_digest,
                    ), "the bulk writer's hash is not the chain's"
                rows.append(
                    (
                        seq,
                        time_text,
                        table_id,
                        round_id,
                        template.source,
                        template.kind,
                        template.version,
                        public_text,
                        template.private_text,
                        template.private_digest,
                        prev,
                        hash_hex,
                    )
                )
                if template.counted:
                    counted.append((seq, template.kind, round_id, time_text, public))
                apply(Folded(seq, time_text, table_id, round_id, template.source, template.kind, entry))
                prev = hash_hex
            added += len(one_round)
            done.written += len(one_round)
            done.rounds += 1
            rounds_here += 1
            clock.now += round_step
            round_index += 1
            if round_index == len(templates):
                round_index = 0
                done.copy += 1
                done.splice_checked = True
                checked = False
            if rounds_here % _ROUNDS_PER_COMMIT == 0 or added >= goal:
                connection.execute("BEGIN IMMEDIATE")
                connection.executemany(_INSERT, rows)
                record(connection, counted)
                connection.execute("COMMIT")
                rows.clear()
                counted.clear()
        connection.execute("BEGIN IMMEDIATE")
        for _kind, _name, sql in set_aside:
            connection.execute(sql)
        connection.execute("COMMIT")
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    finally:
        connection.close()
