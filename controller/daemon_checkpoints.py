"""The journal's WAL checkpoints while the table runs (docs/journal.md "Checkpoints"): a thread of their
own, on a connection of their own, every CHECKPOINT_EVERY_COMMITS commits, so no COMMIT of the daemon's
group commit (controller/daemon_journal.py) carries a checkpoint.

SQLite's automatic checkpoint runs inside the COMMIT that crosses its threshold: that commit, and every
event waiting for it, also waits for about a thousand pages to be copied and the database fsynced (a
bare commit's p99 4.5 ms with it, 0.7-1.2 ms without; docs/operations.md). While the checkpoint thread
runs, the writer's automatic checkpoint is only a backstop (WalControl.defer_checkpoints). The WAL is
reset by the next commit only once a checkpoint has copied all of it with no commit in between, so the
thread checkpoints again until it catches up (each pass copies only what was committed during the one
before); if it has not after CHECKPOINT_PASSES, the writer copies the little that is left itself,
between two commits. The WAL stays a few megabytes.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
from collections.abc import Callable
from pathlib import Path

import structlog

from controller.journal.store import Journal, JournalError

log = structlog.get_logger("flushtable.daemon")

CHECKPOINT_EVERY_COMMITS = 50  # about 550 WAL pages (2 MB) at the benchmark's 11 pages a commit
CHECKPOINT_PASSES = 3  # the thread's passes in one catch-up before the writer finishes it


class CheckpointThread:
    """The checkpoints of the journal at ``path`` while the table runs. ``writer``: the daemon's journal
    (its WAL's backstop, and the rest a thread could not catch up with); ``stopped``: the journal has
    failed (nothing more is written, nor checkpointed by the writer)."""

    def __init__(self, path: Path, writer: Callable[[], Journal], stopped: Callable[[], bool]) -> None:
        self._path = path
        self._writer = writer
        self._stopped = stopped
        self._thread: concurrent.futures.ThreadPoolExecutor | None = None
        self._connection: Journal | None = None
        self._commits_since = 0
        self.running = False  # a checkpoint is copying now (a live seal waits for it)

    def start(self) -> None:
        """The thread that runs the checkpoints while the table runs."""
        self._thread = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="checkpoint")
        self._writer().wal.defer_checkpoints()
        self._connection = Journal.open_existing(self._path, readonly=False)

    def stop(self) -> None:
        """The checkpoint in progress (if any) finishes. The writer checkpoints by itself again from here
        on, at SQLite's default threshold (WalControl.resume_checkpoints: nothing else runs checkpoints
        now; closing the journal checkpoints it all)."""
        if self._thread is not None:
            self._thread.shutdown(wait=True)
            self._thread = None
        if self._connection is not None:
            self._connection.close()
            self._connection = None
            try:
                self._writer().wal.resume_checkpoints()
            except JournalError as error:
                # Nothing is lost: the commits are fsynced in the WAL, and the backstop still bounds it.
                log.warning("journal_checkpoint_failed", error=str(error))

    def committed(self) -> None:
        """A commit wrote entries: every CHECKPOINT_EVERY_COMMITS of them, the WAL is copied off the loop."""
        self._commits_since += 1
        if self._commits_since >= CHECKPOINT_EVERY_COMMITS:
            self._checkpoint_now()

    def _checkpoint_now(self) -> None:
        """Copy the WAL into the database on the thread, on its own connection (a PASSIVE checkpoint
        never blocks the writer); ``_checkpointed`` on the loop after."""
        if self._connection is None or self._thread is None or self.running:
            return
        self._commits_since = 0
        self.running = True
        loop = asyncio.get_running_loop()
        done = self._thread.submit(catch_up, self._connection)
        done.add_done_callback(lambda finished: loop.call_soon_threadsafe(self._checkpointed, finished))

    def _checkpointed(self, done: concurrent.futures.Future[bool]) -> None:
        self.running = False
        error = done.exception()
        if error is None and not done.result() and not self._stopped():
            # The commits kept coming faster than the thread's passes (a slow disk): the WAL, all but
            # its last few commits copied, would never be reset and would grow, and every fsync with
            # it. The writer copies that little rest itself, here between two commits, so the next
            # commit resets the WAL.
            try:
                self._writer().wal.checkpoint()
            except JournalError as failed:
                error = failed
        if error is not None:
            # Nothing is lost (the entries are in the WAL, fsynced); the next checkpoint retries, and
            # the writer's backstop keeps the WAL bounded meanwhile.
            log.warning("journal_checkpoint_failed", error=str(error))

    def release(self) -> bool:
        """Close the thread's connection for a seal (SQLite leaves WAL mode only with no other
        connection); whether it was open (then ``reopen`` after the seal)."""
        if self._connection is None:
            return False
        self._connection.close()
        self._connection = None
        return True

    def reopen(self) -> None:
        """The thread's connection again, after a seal, on the new segment's file."""
        try:
            self._connection = Journal.open_existing(self._path, readonly=False)
            self._writer().wal.defer_checkpoints()
        except JournalError as error:
            # Nothing is lost: the writer checkpoints by itself again (SQLite's own threshold).
            log.warning("journal_checkpoint_failed", error=str(error))
            self._connection = None
            with contextlib.suppress(JournalError):
                self._writer().wal.resume_checkpoints()

    def close(self) -> None:
        """The thread's connection closed (the daemon's journal closes next)."""
        if self._connection is not None:
            self._connection.close()
            self._connection = None


def catch_up(checkpointer: Journal) -> bool:
    """PASSIVE checkpoints until one finds the WAL all copied and unchanged since the pass before (no
    commit in between: the writer's next commit then starts the WAL again from its beginning); False
    when CHECKPOINT_PASSES did not get there."""
    wal_pages = -1
    for _ in range(CHECKPOINT_PASSES):
        result = checkpointer.wal.checkpoint()
        if result.complete and result.wal_pages == wal_pages:
            return True
        wal_pages = result.wal_pages
    return False
