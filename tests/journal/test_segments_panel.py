"""A panel process over a segmented journal (docs/journal.md "Segments and seals"): its view starts from
the last seal's checkpoint and folds only the open segment, as `flushtable run` does, so it never reads
the sealed past (bench/bench_years.py's panel_start_s: 403 s on 5 million entries when it folded them
all). Shown by moving the sealed segments' files away: the panel opens the same view all the same."""

from __future__ import annotations

import os
from pathlib import Path

from controller.journal import Journal
from controller.journal.recovery import rebuild_state
from controller.journal.seals import seal_file, seal_numbers, segment_file
from controller.panel import JournalPanelBackend
from tests.journal.test_segments import state_text, three_segments


def test_the_panel_starts_from_the_last_seal_without_reading_the_sealed_segments(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite"
    three_segments(path)
    with Journal.open_existing(path) as journal:
        expected = state_text(rebuild_state(journal))
        last = journal.last_entry()
    assert last is not None
    away = tmp_path / "away"
    away.mkdir()
    numbers = seal_numbers(path)
    assert len(numbers) == 3
    for number in numbers:  # the sealed files gone (their seals stay): reading one would fail
        os.replace(segment_file(path, number), away / segment_file(path, number).name)
    with Journal.open_existing(path) as journal:
        backend = JournalPanelBackend(journal, read_only=True)
        assert backend.journal_error is None, backend.journal_error
        assert backend.start_error is None
        assert backend.last_seq == last.seq
        assert state_text(backend._view.state) == expected


def test_a_panel_whose_last_seal_is_unreadable_says_so_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite"
    three_segments(path)
    last_seal = seal_file(path, seal_numbers(path)[-1])
    os.chmod(last_seal, 0o644)
    last_seal.write_text("{not a seal")
    with Journal.open_existing(path) as journal:
        backend = JournalPanelBackend(journal, read_only=True)  # no traceback: a page that says why
        last = journal.last_entry()
    assert backend.start_error is not None
    assert "not a seal" in backend.start_error
    assert "\n" not in backend.start_error
    assert last is not None
    assert backend.last_seq == last.seq  # folded from the first entry instead, through the segments
