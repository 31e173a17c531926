"""Check the floor's record of a table against its own chain: every hash recomputed from the columns
PostgreSQL holds, every link, every private part a reader may see (``floor_private_shown``: the parts
the table's gate shows; the service checked every part it took against its commitment as it took it)
against its commitment (`flushtable floor demo`, tests and an auditor's query all use this)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import psycopg

from controller.journal import entries as typed
from controller.journal.chain import GENESIS_HASH, canonical_json, entry_hash_from_text


@dataclass(frozen=True, slots=True)
class ChainCheck:
    table_id: str
    ok: bool
    entries: int
    problem: str = ""


def verify_table(connection: psycopg.Connection[Any], table_id: str) -> ChainCheck:
    previous = GENESIS_HASH
    count = 0
    cursor = connection.execute(
        "SELECT e.seq, e.time_text, e.round_id, e.source, e.kind, e.version, e.payload, e.private_digest, "
        "e.prev_hash, e.hash, p.private_text FROM floor_entries e LEFT JOIN floor_private_shown p "
        "USING (table_id, seq) WHERE e.table_id = %s ORDER BY e.seq",
        (table_id,),
    )
    for (
        seq,
        time_text,
        round_id,
        source,
        kind,
        version,
        payload,
        digest,
        prev_hash,
        hash_,
        private_text,
    ) in cursor:
        count += 1
        if seq != count:
            return ChainCheck(table_id, False, count - 1, f"entry {count} missing (next is {seq})")
        if prev_hash != previous:
            return ChainCheck(
                table_id, False, count - 1, f"entry {seq}: prev_hash is not entry {seq - 1}'s hash"
            )
        recomputed = entry_hash_from_text(
            prev_hash=prev_hash,
            seq=seq,
            time_utc=time_text,
            table_id=table_id,
            round_id=round_id,
            source=source,
            kind=kind,
            version=version,
            payload_text=canonical_json(payload),
            private_digest=digest,
        )
        if recomputed != hash_:
            return ChainCheck(table_id, False, count - 1, f"entry {seq}: hash does not match its contents")
        if private_text is not None and typed.commitment(private_text) != digest:
            return ChainCheck(
                table_id, False, count - 1, f"entry {seq}: private part does not match its commitment"
            )
        previous = hash_
    return ChainCheck(table_id, True, count)
