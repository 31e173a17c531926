"""The sealed segments before a journal's open one, as its readers reach them (docs/journal.md "Segments
and seals"): found by their seals (controller/journal/seals.py), opened read-only, and the last few
kept open for the next reader.

The journal (controller/journal/store.py) gives this part the file it reads beside and how to open a
sealed segment (``opener``: a read-only ``Journal``), so this module never imports the store."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from controller.journal.handle import JournalFile
from controller.names import round_number

if TYPE_CHECKING:
    from controller.journal.store import Journal

_SEALED_KEPT_OPEN = 4  # sealed segments a Journal keeps open for its readers (a range spans one or two)


class SealedSegments:
    """The sealed segments of the journal whose open file is ``file``."""

    def __init__(self, file: JournalFile, opener: Callable[[Path], Journal]) -> None:
        self._file = file
        self._opener = opener
        # The sealed segments last read through this object, kept open (read-only; a sealed file never
        # changes, and a connection on it never holds up a seal of the open one): recall and the panel
        # read a round's entries one round at a time, and opening a SQLite file costs milliseconds.
        self._kept: dict[Path, Journal] = {}
        # Readers in a sealed segment now (by id): one pushed out of _kept while a reader (another
        # thread: the panel's) still uses it is kept in _retired and closed by its last reader.
        self._users: dict[int, int] = {}
        self._retired: dict[int, Journal] = {}
        self._lock = threading.Lock()

    def in_time(self, start_utc: str | None, end_utc: str | None) -> Iterator[Journal]:
        """The sealed segments with an entry in [start_utc, end_utc), newest first, each opened
        read-only (kept open for the next reader) and held until the caller moves on: found by their
        seals' times, so a range reads the segments it covers, not those between it and the journal's
        end."""
        base = self._file.base
        if base.segment <= 1:
            return
        from controller.journal.seals import sealed_segment_files_in_time  # noqa: PLC0415 (the reducer's modules, for a journal with seals)

        for file in sealed_segment_files_in_time(self._file.path, base.segment, start_utc, end_utc):
            with self.held(file) as sealed:
                yield sealed

    def after(self, after_seq: int = 0, *, newest_first: bool = False) -> Iterator[Journal]:
        """The sealed segments holding entries after ``after_seq``, oldest first (or newest first), each
        opened read-only (wherever it is: beside the journal or archived) and closed once the caller
        moves on: what the readers go through for entries before the open segment's base."""
        base = self._file.base
        if base.segment <= 1:
            return
        from controller.journal.seals import sealed_segment_files  # noqa: PLC0415 (the reducer's modules, for a journal with seals)

        files = sealed_segment_files(self._file.path, base.segment, after_seq)
        for file in reversed(files) if newest_first else files:
            with contextlib.closing(self._opener(file)) as sealed:
                yield sealed

    @contextlib.contextmanager
    def holding(self, seq: int) -> Iterator[Journal | None]:
        """The sealed segment holding entry ``seq``, opened read-only (None: no sealed one does), found
        by its seal (a binary search over the seals: controller/journal/seals.py)."""
        from controller.journal.seals import sealed_segment_of  # noqa: PLC0415 (the reducer's modules, for a journal with seals)

        base = self._file.base
        file = sealed_segment_of(self._file.path, base.segment, seq) if base.segment > 1 else None
        if file is None:
            yield None
            return
        with self.held(file) as sealed:
            yield sealed

    def of_round(self, round_id: str) -> Path | None:
        """The sealed segment round ``round_id`` was started in by its number (None: no number, or no
        sealed segment by it)."""
        number = round_number(round_id)
        base = self._file.base
        if number is None or base.segment <= 1 or number > base.base_rounds:
            return None
        from controller.journal.seals import sealed_segment_of_round  # noqa: PLC0415 (the reducer's modules, for a journal with seals)

        return sealed_segment_of_round(self._file.path, base.segment, number)

    @contextlib.contextmanager
    def held(self, file: Path) -> Iterator[Journal]:
        """The sealed segment at ``file``, opened read-only once and kept (the last few), counted as in
        use until the caller leaves: one pushed out of the kept few is closed only when no reader holds
        it (the panel reads on threads of its own)."""
        sealed = self._take(file)
        try:
            yield sealed
        finally:
            self._release(sealed)

    def _take(self, file: Path) -> Journal:
        with self._lock:
            sealed = self._kept.pop(file, None)
            if sealed is None:
                sealed = self._opener(file)
            self._kept[file] = sealed  # the most recent last
            self._users[id(sealed)] = self._users.get(id(sealed), 0) + 1
            while len(self._kept) > _SEALED_KEPT_OPEN:
                evicted = self._kept.pop(next(iter(self._kept)))
                if self._users.get(id(evicted), 0) == 0:
                    evicted.close()
                else:
                    self._retired[id(evicted)] = evicted
            return sealed

    def _release(self, sealed: Journal) -> None:
        with self._lock:
            left = self._users.get(id(sealed), 1) - 1
            if left > 0:
                self._users[id(sealed)] = left
                return
            self._users.pop(id(sealed), None)
            retired = self._retired.pop(id(sealed), None)
        if retired is not None:
            retired.close()

    def close(self) -> None:
        """Close every sealed segment kept open."""
        with self._lock:
            for sealed in [*self._kept.values(), *self._retired.values()]:
                sealed.close()
            self._kept.clear()
            self._retired.clear()
