"""The daemon's background verification of the sealed segments (docs/journal.md "Segments and seals",
docs/operations.md "Background verification of the sealed segments").

A start proves only the open segment and the last seal; every sealed segment is verified in full
(``segments.verify_segments``: seal, MAC, file sha256, SQLite's integrity, chain, checkpoint) by a
child process of the daemon at the lowest CPU priority (``nice 19``), once the table is open and then
every ``VERIFY_EVERY_S``. A child, as the integrity watch's: the chain's hashing holds the GIL, which
in a thread would stall the table's event loop. The child prints one JSON line per segment as it goes
(the progress) and the daemon logs each; every segment that fails raises a ``journal_error`` alert on
the panel (a ``fault_raised`` entry, severity alert: the failure is journaled) naming the segment and
what was found. The anchor key reaches the child on its standard input, never on its command line
(which ``ps`` shows).

    python -P -m controller.journal.segments_watch JOURNAL   (the key's hex, or nothing, on stdin)
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from controller.logs import configure_logging

VERIFY_EVERY_S = 24 * 3600.0  # and once at every start
CHILD_NICE = 19
LINE_LIMIT_BYTES = 1 << 16


@dataclass(slots=True)
class SegmentsReport:
    """What one background verification found: every segment's line, the failed ones apart."""

    checked: int = 0
    entries: int = 0
    failed: list[tuple[int, str]] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)


async def verify_in_process(
    journal_path: Path, key: bytes | None, progress: Callable[[dict[str, object]], None] | None = None
) -> SegmentsReport:
    """Every sealed segment verified by a child process at nice 19, its lines read as they come."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-P",
        "-m",
        "controller.journal.segments_watch",
        str(journal_path),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        limit=LINE_LIMIT_BYTES,
    )
    report = SegmentsReport()
    try:
        assert process.stdin is not None
        assert process.stdout is not None
        assert process.stderr is not None
        process.stdin.write((key.hex() if key is not None else "").encode() + b"\n")
        await process.stdin.drain()
        process.stdin.close()
        while line := await process.stdout.readline():
            value = json.loads(line)
            if "error" in value:
                raise RuntimeError(str(value["error"]))
            report.checked += 1
            report.entries += int(value["entries"])
            report.lines.append(str(value["line"]))
            if not value["ok"]:
                report.failed.append((int(value["segment"]), str(value["line"])))
            if progress is not None:
                progress(value)
        err = await process.stderr.read()
        if await process.wait() != 0:
            last = (err.decode(errors="replace").strip().splitlines() or ["no output"])[-1]
            raise RuntimeError(f"the segments' verification exited {process.returncode}: {last}")
    except BaseException:
        if process.returncode is None:
            process.kill()
            await asyncio.shield(process.wait())
        raise
    return report


def _child_main(arguments: list[str]) -> int:
    configure_logging(level="warning", json_lines=True, stream=sys.stderr)
    with contextlib.suppress(OSError):
        os.nice(CHILD_NICE)  # the table's loop, its devices and its commits come first
    key_text = sys.stdin.readline().strip()
    key = bytes.fromhex(key_text) if key_text else None
    (path_text,) = arguments
    from controller.journal.segments import SegmentVerdict, verify_segments  # noqa: PLC0415

    def progress(verdict: SegmentVerdict, done: int, total: int) -> None:
        line = {
            "segment": verdict.segment,
            "ok": verdict.ok,
            "line": verdict.line,
            "entries": verdict.entries,
            "done": done,
            "total": total,
        }
        sys.stdout.write(json.dumps(line) + "\n")
        sys.stdout.flush()

    try:
        verify_segments(Path(path_text), key=key, progress=progress)
    except Exception as error:  # the parent logs it; the table goes on
        sys.stdout.write(json.dumps({"error": f"{type(error).__name__}: {error}"}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(_child_main(sys.argv[1:]))
