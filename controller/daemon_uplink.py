"""The daemon's side of the uplink (docs/floor.md): the journal streamed to the floor, read under a lock
the seals wait for, and the floor's seeded software check answered from this table, journaled first.

Given the journal's side (``DaemonJournal``: its file users and its commit), the table's id and the
release verified at the start; nothing else of the daemon. The uplink itself (nats) is imported only
when one is configured.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from functools import partial
from pathlib import Path
from typing import Any

from controller.config import UplinkConfig
from controller.daemon_journal import DaemonJournal
from controller.daemon_start import daemon_record
from controller.engine.outputs import Output
from controller.journal import entries
from controller.software import VerifiedRelease, seeded_digests_of_root


def uplink_task(
    ledger: DaemonJournal,
    config: UplinkConfig,
    *,
    table_id: str,
    verified: VerifiedRelease | None,
    stop: asyncio.Event,
) -> Coroutine[Any, Any, None]:
    """The uplink's coroutine until ``stop`` (for the daemon to run as a task of its own). While it
    reads the journal's file it holds a lock, and a seal waits for it (the ledger's file users)."""
    from controller.uplink.uplink import start_uplink  # noqa: PLC0415 (nats: floor only)

    uplink_lock = asyncio.Lock()  # held while the uplink reads the file: no seal then
    ledger.seals.file_users.append(
        lambda: "the uplink is reading the journal" if uplink_lock.locked() else None
    )
    journal_path: Path = ledger.path
    return start_uplink(
        journal_path,
        table_id,
        config,
        stop,
        on_verify=partial(answer_software_check, ledger, table_id=table_id, verified=verified),
        file_lock=uplink_lock,
    )


async def answer_software_check(
    ledger: DaemonJournal,
    seed: bytes,
    requested_by: str,
    *,
    table_id: str,
    verified: VerifiedRelease | None,
) -> dict[str, Any]:
    """The floor's seeded software verification (controller/uplink/uplink.py asks): HMAC-SHA256 with
    its seed over every product file that runs here, journaled (software_checked) before it is
    answered. Hashing runs in a thread: the table plays on meanwhile."""
    result = await asyncio.to_thread(seeded_digests_of_root, seed)
    entry = entries.SoftwareChecked(
        seed=seed.hex(), aggregate=result.aggregate, files=len(result.files), requested_by=requested_by
    )
    committed: asyncio.Future[list[Output]] = asyncio.get_running_loop().create_future()
    ledger.add([daemon_record(entry)], answer=committed)
    ledger.after_burst()
    await committed
    return {
        **entries.public_dict(entry),  # the answer carries the entry's fields as journaled
        "table_id": table_id,
        "release": None if verified is None else verified.release,
        "release_digest": None if verified is None else verified.release_digest,
        "development": None if verified is None else verified.development,
    }
