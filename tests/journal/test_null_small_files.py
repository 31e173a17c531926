"""A small file beside the journal (the anchor, a seal, an archived segment's pointer) holding JSON
``null`` is a damaged file, not an absent one: refused as not that file's kind, in one line, never a traceback
(controller/journal/durable.py ``read_json_if_there``). Read as absent, a damaged anchor would read
"no anchor ... run `flushtable journal anchor`", inviting a re-anchor over the evidence; a damaged seal
or pointer would read as a segment never sealed or never archived. The real command on a real
segmented, archived journal."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from controller.journal.anchor import anchor_path
from controller.journal.seals import archived_file, seal_file
from controller.journal.segments import archive_segments
from tests.journal.test_segments import KEY, batches, build, cli, key_config

FILES: dict[str, tuple[Callable[[Path], Path], str]] = {
    "anchor": (anchor_path, "anchor {file}: not an anchor: a JSON object is expected, not null"),
    "seal": (lambda path: seal_file(path, 1), "seal {file}: not a seal: a JSON object is expected, not null"),
    "archive pointer": (
        lambda path: archived_file(path, 1),
        # verify names the segment, not the pointer's path
        "segment 1: not an archive pointer: a JSON object is expected, not null",
    ),
}


@pytest.mark.parametrize("which", list(FILES))
def test_a_small_file_of_json_null_is_refused_not_read_as_absent(tmp_path: Path, which: str) -> None:
    path = tmp_path / "var" / "journal.sqlite"
    rounds = batches()
    build(path, [rounds[:2], rounds[2:4]])
    # Segment 1 archived (its pointer beside its seal), as `flushtable journal archive` leaves it.
    later = datetime.now(UTC) + timedelta(days=400)
    assert [
        item.segment
        for item in archive_segments(path, tmp_path / "archive", retention_days=90, key=KEY, now=later)
    ] == [1]
    config = key_config(tmp_path, path)
    assert cli("journal", "verify", "--config", str(config), "--segments").returncode == 0
    file_of, words = FILES[which]
    file = file_of(path)
    assert file.exists()
    file.write_text("null")
    done = cli("journal", "verify", "--config", str(config), "--segments")
    # Refused (1: a verdict of verify's, 2: a file it cannot read), never read as no file.
    assert done.returncode in (1, 2), done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert words.format(file=file) in done.stdout + done.stderr
    assert "no anchor" not in done.stdout + done.stderr
