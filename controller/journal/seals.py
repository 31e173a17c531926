"""The seals of a segmented journal, read (docs/journal.md "Segments and seals"): where the segments and
their seals are (the layout in controller/journal/segments.py's docstring), a seal read and checked
against the anchor key, the seals listed, and the sealed segment holding an entry, a round or a range of
time found by bisection over the seals. Sealing, verifying and archiving are in segments.py; this module
never opens a journal, so the store and its readers look segments up here without a cycle."""

from __future__ import annotations

import functools
import hashlib
import hmac
import os
import re
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, TypeVar

from controller.journal.chain import canonical_json
from controller.journal.checkpoint import CheckpointError, state_from_checkpoint
from controller.journal.durable import read_json_if_there
from controller.journal.errors import JournalError
from controller.journal.schema import FIRST_SEGMENT, SegmentBase
from controller.journal.state import TableState

SEAL_FORMAT = 1


_SEAL_CONTEXT = b"flushtable journal seal v1\n"  # the anchor key signs seals and anchors apart
_SEAL_MAX_BYTES = 16 << 20  # a seal with its checkpoint is some kilobytes: far above is not one
_SEGMENT_NAME = re.compile(r"^segment-(\d{6,})\.seal\.json\Z")  # \Z, not $: no name with a final line break


def segments_dir(journal_path: str | Path) -> Path:
    path = Path(journal_path)
    return path.with_name(path.name + ".segments")


@functools.lru_cache(maxsize=64)
def _segments_dir_text(journal_path: str | Path) -> str:
    """``segments_dir`` as text, made once per journal path: the readers' lookups name seal files by
    the hundred per page, and pathlib's parsing was most of a lookup's cost (cProfile of the panel's
    meters page on 5 million entries)."""
    return os.fspath(segments_dir(journal_path))


def segment_file(journal_path: str | Path, segment: int) -> Path:
    return segments_dir(journal_path) / f"segment-{segment:06d}.sqlite"


def seal_file(journal_path: str | Path, segment: int) -> Path:
    return segments_dir(journal_path) / f"segment-{segment:06d}.seal.json"


def archived_file(journal_path: str | Path, segment: int) -> Path:
    return segments_dir(journal_path) / f"segment-{segment:06d}.archived.json"


@dataclass(frozen=True, slots=True)
class Seal:
    """What a sealed segment holds and ends with (the module's docstring)."""

    table_id: str
    segment: int
    first_seq: int
    last_seq: int
    entries: int
    prev_hash: str  # the hash the segment's first entry extends (the previous seal's final hash)
    final_hash: str
    file_sha256: str
    file_bytes: int
    rounds_started: int  # every round started up to the segment's end, sealed segments included
    first_utc: str
    last_utc: str
    sealed_utc: str
    checkpoint: dict[str, Any]
    format: int = SEAL_FORMAT
    mac: str | None = None

    def signed_fields(self) -> dict[str, Any]:
        fields = asdict(self)
        fields.pop("mac")
        return fields

    def keyed(self, key: bytes | None) -> Seal:
        return replace(self, mac=None if key is None else seal_mac(key, self))

    def next_base(self) -> SegmentBase:
        return SegmentBase(self.segment + 1, self.last_seq, self.final_hash, self.rounds_started)

    def state(self) -> TableState:
        """The reducer's state at the segment's end."""
        try:
            return state_from_checkpoint(self.checkpoint)
        except CheckpointError as error:
            raise JournalError(f"seal of segment {self.segment}: {error}") from None


def seal_mac(key: bytes, seal: Seal) -> str:
    message = _SEAL_CONTEXT + canonical_json(seal.signed_fields()).encode("utf-8")
    return hmac.new(key, message, hashlib.sha256).hexdigest()


def seal_key_problem(seal: Seal, key: bytes | None) -> str | None:
    """Why this seal cannot be trusted with this key (None: it can), as for the anchor: keyed where a
    key is set, not keyed where none is."""
    where = f"the seal of segment {seal.segment}"
    if key is None:
        if seal.mac is not None:
            return f"{where} is keyed, but no anchor key is configured ([journal] anchor_key_file)"
        return None
    if seal.mac is None:
        return f"{where} is not keyed, but an anchor key is configured: written without the key (forged?)"
    if not hmac.compare_digest(seal.mac, seal_mac(key, seal)):
        return f"{where} does not verify with the anchor key (forged, replaced, or another key's?)"
    return None


def read_seal(journal_path: str | Path, segment: int) -> Seal | None:
    """The seal of ``segment``, None when there is none; ``JournalError`` when it is not a seal."""
    path = seal_file(journal_path, segment)
    value = read_json_if_there(
        path, limit_bytes=_SEAL_MAX_BYTES, refused=lambda why: JournalError(f"seal {path}: not a seal: {why}")
    )
    if value is None:
        return None
    try:
        seal = Seal(**value)
    except TypeError:  # not a seal's fields (a value not an object is refused above)
        raise JournalError(f"seal {path}: not a seal (damaged?)") from None
    if (
        seal.format != SEAL_FORMAT
        or seal.segment != segment
        or not isinstance(seal.checkpoint, dict)
        or seal.entries != seal.last_seq - seal.first_seq + 1
    ):
        raise JournalError(f"seal {path}: not the seal of segment {segment} (edited, or moved?)")
    return seal


# The seals' listing by segments directory, kept with the directory's identity (device, inode,
# modification and change times; the change time cannot be set back, as a restored copy's mtime can):
# a reader going back through the segments asks for it at every lookup (the panel's meters page: 40
# rounds' closing entries, each a listing of some hundreds of names, about 30 ms of a 100 ms page at
# 100 segments). Adding, renaming or removing a name in the directory (a seal written
# by any process: its rename into place; an archive pointer; a segment moved away) changes its
# modification time, so another process's seal is seen at the next lookup. A listing is kept only
# once the directory's time is _SETTLED_NS older than the listing: a second change within the
# filesystem's timestamp granularity (a few ms) could otherwise leave the same time on a new listing.
# This process's own seals drop the listing outright (forget_seal_listing).
_LISTINGS: dict[str, tuple[tuple[int, int, int, int], list[int]]] = {}
_SETTLED_NS = 2_000_000_000
_Read = TypeVar("_Read")
_clock_ns = time.time_ns  # the listing's time (the file system's clock); a test sets its own


def forget_seal_listing(journal_path: str | Path) -> None:
    """This process changed the seals of ``journal_path`` (sealed, archived): list them afresh."""
    _LISTINGS.pop(_segments_dir_text(journal_path), None)


def forget_listing_in(directory: Path) -> None:
    """This process wrote a seal (or a pointer) into ``directory``: list it afresh."""
    _LISTINGS.pop(str(directory), None)


def _in_segments_dir(read: Callable[[str], _Read], directory: str) -> _Read | None:
    """``read(directory)``; None when the directory is not there (no segment sealed yet, or it went
    between the two reads of a listing); any other failure a JournalError naming it."""
    try:
        return read(directory)
    except FileNotFoundError:
        return None
    except OSError as error:
        raise JournalError(f"segments {directory}: cannot list: {error}") from error


def seal_numbers(journal_path: str | Path) -> list[int]:
    """The segments that have a seal, in order (the directory's listing: no file is read; kept while
    the directory is unchanged, see _LISTINGS). A new list each call: the caller may change it."""
    directory = _segments_dir_text(journal_path)
    status = _in_segments_dir(os.stat, directory)
    if status is None:
        return []
    identity = (status.st_dev, status.st_ino, status.st_mtime_ns, status.st_ctime_ns)
    kept = _LISTINGS.get(directory)
    if kept is not None and kept[0] == identity:
        return list(kept[1])
    listed_ns = _clock_ns()
    names = _in_segments_dir(os.listdir, directory)
    if names is None:
        return []
    numbers = sorted(int(match.group(1)) for name in names if (match := _SEGMENT_NAME.match(name)))
    if listed_ns - max(status.st_mtime_ns, status.st_ctime_ns) >= _SETTLED_NS:
        _LISTINGS[directory] = (identity, numbers)
    else:
        _LISTINGS.pop(directory, None)
    return list(numbers)


def last_seal(journal_path: str | Path) -> Seal | None:
    numbers = seal_numbers(journal_path)
    return read_seal(journal_path, numbers[-1]) if numbers else None


def next_segment_base(journal_path: str | Path) -> SegmentBase:
    """Where a new file at the journal's path starts: after the last seal, or as the first segment."""
    seal = last_seal(journal_path)
    return FIRST_SEGMENT if seal is None else seal.next_base()


def archived_location(journal_path: str | Path, segment: int) -> Path | None:
    """Where an archived segment went (its pointer beside the seal), or None when not archived."""
    pointer = archived_file(journal_path, segment)
    value = read_json_if_there(
        pointer,
        limit_bytes=4096,
        refused=lambda why: JournalError(f"archive pointer {pointer}: not an archive pointer: {why}"),
    )
    if value is None:
        return None
    if not isinstance(value.get("path"), str):
        raise JournalError(f"archive pointer {pointer}: names no file")
    return Path(value["path"])


def locate_segment(journal_path: str | Path, segment: int) -> Path:
    """The sealed segment's file: beside the journal, or where it was archived."""
    here = segment_file(journal_path, segment)
    if here.exists():
        return here
    archived = archived_location(journal_path, segment)
    if archived is not None:
        return archived
    raise JournalError(
        f"journal {journal_path}: sealed segment {segment} is missing ({here.name}: deleted? not archived)"
    )


@dataclass(frozen=True, slots=True)
class SealSpan:
    """What the readers need of a seal to find their way: its entries and their times."""

    segment: int
    first_seq: int
    last_seq: int
    first_utc: str
    last_utc: str
    rounds_started: int = 0  # every round started up to the segment's end


# The readers' seal spans by seal file and that file's identity (inode, size, modification time): a
# seal is some kilobytes to megabytes of JSON (its checkpoint), and a reader going back through the
# segments asks for the same seals again for every entry it looks up. Only the readers' way is cached:
# a verification (verify_segment, the segments' watch) reads every seal afresh.
_SPANS: dict[tuple[str, int, int, int], SealSpan | None] = {}
_SPANS_MAX = 4096


def seal_span(journal_path: str | Path, segment: int) -> SealSpan | None:
    """``segment``'s seal's span (None: no seal), read once per process while its file is unchanged."""
    path = f"{_segments_dir_text(journal_path)}{os.sep}segment-{segment:06d}.seal.json"  # seal_file's
    try:
        status = os.stat(path)
    except FileNotFoundError:
        return None
    except OSError as error:
        raise JournalError(f"seal {path}: cannot read: {error}") from None
    key = (path, status.st_ino, status.st_size, status.st_mtime_ns)
    if key in _SPANS:
        return _SPANS[key]
    seal = read_seal(journal_path, segment)
    span = (
        None
        if seal is None
        else SealSpan(
            seal.segment, seal.first_seq, seal.last_seq, seal.first_utc, seal.last_utc, seal.rounds_started
        )
    )
    if len(_SPANS) >= _SPANS_MAX:
        _SPANS.clear()
    _SPANS[key] = span
    return span


def _spans_before(journal_path: str | Path, before_segment: int) -> list[int]:
    return [number for number in seal_numbers(journal_path) if number < before_segment]


def _bisect(journal_path: str | Path, numbers: list[int], before: Callable[[SealSpan], bool]) -> int:
    """The index in ``numbers`` of the first seal that is not ``before`` what is looked for (the seals'
    seqs, times and round counts rise with their numbers): a binary search, so the seals read are the
    log of their count."""
    low, high = 0, len(numbers)
    while low < high:
        middle = (low + high) // 2
        span = seal_span(journal_path, numbers[middle])
        if span is not None and before(span):
            low = middle + 1
        else:
            high = middle
    return low


def _first_holding_after(journal_path: str | Path, numbers: list[int], after_seq: int) -> int:
    """The index in ``numbers`` of the first sealed segment with an entry after ``after_seq``."""
    return _bisect(journal_path, numbers, lambda span: span.last_seq <= after_seq)


def sealed_segment_files(journal_path: str | Path, before_segment: int, after_seq: int) -> list[Path]:
    """The files of the sealed segments before ``before_segment`` that hold entries after ``after_seq``,
    oldest first (the readers' way back: Journal.entries, .replay, .entry, .last_entries)."""
    numbers = _spans_before(journal_path, before_segment)
    start = _first_holding_after(journal_path, numbers, after_seq)
    return [locate_segment(journal_path, number) for number in numbers[start:]]


def _holding(journal_path: str | Path, numbers: list[int], seq: int) -> int | None:
    """Which of the sealed segments ``numbers`` (ascending) holds entry ``seq``; None: none of them."""
    index = _first_holding_after(journal_path, numbers, seq - 1)
    if index >= len(numbers):
        return None
    span = seal_span(journal_path, numbers[index])
    if span is None or not span.first_seq <= seq <= span.last_seq:
        return None
    return numbers[index]


def sealed_segment_of(journal_path: str | Path, before_segment: int, seq: int) -> Path | None:
    """The file of the sealed segment before ``before_segment`` holding entry ``seq`` (None: none)."""
    number = _holding(journal_path, _spans_before(journal_path, before_segment), seq)
    return None if number is None else locate_segment(journal_path, number)


def sealed_segment_of_round(journal_path: str | Path, before_segment: int, number: int) -> Path | None:
    """The file of the sealed segment before ``before_segment`` in which round number ``number`` (the n
    of its id, names.round_number) was started, by the seals' counts of rounds started (a bisection);
    None when no sealed one was. A round's n is the journal's count of rounds started when it started
    (RoundIndex.next_round_id), so this is where it is; an id written otherwise may not be: the caller
    looks further when the round is not there."""
    numbers = _spans_before(journal_path, before_segment)
    low = _bisect(journal_path, numbers, lambda span: span.rounds_started < number)
    if low >= len(numbers):
        return None
    return locate_segment(journal_path, numbers[low])


def sealed_segment_files_in_time(
    journal_path: str | Path, before_segment: int, start_utc: str | None, end_utc: str | None
) -> list[Path]:
    """The files of the sealed segments before ``before_segment`` with an entry in [start_utc, end_utc),
    newest first: by the seals' first and last entry times (a round closes in the segment it started
    in, so its closing entry is within its segment's times). The seals read are the log of their count
    and the segments in the range."""
    numbers = _spans_before(journal_path, before_segment)
    if end_utc is not None:  # the first segment that begins at or after the range's end, by bisection
        numbers = numbers[: _bisect(journal_path, numbers, lambda span: span.first_utc < end_utc)]
    files = []
    for number in reversed(numbers):
        span = seal_span(journal_path, number)
        if span is not None and start_utc is not None and span.last_utc < start_utc:
            break  # this one and every older one ended before the range
        files.append(locate_segment(journal_path, number))
    return files


def segment_of_seq(journal_path: str | Path, seq: int) -> tuple[int, Path] | None:
    """The sealed segment holding entry ``seq`` and its file's place, or None when it is not sealed."""
    number = _holding(journal_path, seal_numbers(journal_path), seq)
    return None if number is None else (number, locate_segment(journal_path, number))
