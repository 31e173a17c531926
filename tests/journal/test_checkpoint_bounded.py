"""A seal's checkpoint does not grow with the journal's age (docs/journal.md "A seal's checkpoint is
bounded"): the reducer keeps the closing kinds of its recent window of closed rounds only, so the tenth
seal's checkpoint is the size of the second's, a start from it is the whole journal's fold, and the
button's decision at recovery is the journal's. Seals of format 2 (which carried every round ever
closed) still load, and verify, before and after the format-3 seals this release writes."""

from __future__ import annotations

import json
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import pytest

from controller.cli import main as cli_main
from controller.engine.state import RecoveredState
from controller.journal import Journal
from controller.journal import checkpoint as checkpoint_module
from controller.journal import state_parts as state_module
from controller.journal.chain import canonical_json
from controller.journal.checkpoint import CHECKPOINT_FORMAT, state_to_checkpoint
from controller.journal.recovery import rebuild_state
from controller.journal.seals import Seal, read_seal, seal_file
from controller.journal.segments import verify_segments
from controller.journal.state import TableState
from tests.journal.mixed import retagged, rounds
from tests.journal.test_segments import KEY, anchor_head, key_config, seal_now

WINDOW_ROUNDS = 4  # the reducer's windows, made small so ten seals pass them many times over
ROUNDS_PER_SEGMENT = 8
SEALS = 10
CLOSING_KINDS = ("round_settled", "round_dead", "round_voided")


@pytest.fixture
def small_window(monkeypatch: pytest.MonkeyPatch) -> None:
    """The reducer's bounded windows (closed rounds 50, the meters' chart 40 rounds) made small, so ten
    seals pass them many times over and each seal's size is what it stays at."""
    monkeypatch.setattr(TableState, "RECENT_ROUNDS", WINDOW_ROUNDS)
    monkeypatch.setattr(state_module, "HISTORY_ROUNDS", WINDOW_ROUNDS)
    monkeypatch.setattr(checkpoint_module, "HISTORY_ROUNDS", WINDOW_ROUNDS)


def segment_rounds(index: int) -> list[list[Any]]:
    """The engine's own rounds, their ids made unique for this segment (same shape in every one)."""
    made: list[list[Any]] = retagged(rounds()[:ROUNDS_PER_SEGMENT], f"S{index:02d}")
    return made


def append_segment(path: Path, index: int) -> None:
    with Journal.open(path, "T1", synchronous="OFF") as journal:
        for batch in segment_rounds(index):
            journal.append_many(batch)
        anchor_head(path, journal, KEY)


def build_sealed(path: Path, seals: int) -> list[Seal]:
    from controller.journal.proof import prepare_for_run

    prepare_for_run(path, "T1", key=KEY)
    made = []
    for index in range(seals):
        append_segment(path, index)
        made.append(seal_now(path, KEY))
    append_segment(path, seals)  # the open segment
    return made


def journal_button_moves_on(journal: Journal) -> bool:
    """From the entries themselves: the last round started was closed by a round_settled."""
    last_round: str | None = None
    closing: dict[str, str] = {}
    for stored in journal.replay():
        if stored.entry.kind == "round_started":
            last_round = stored.round_id
        elif stored.entry.kind in CLOSING_KINDS and stored.round_id is not None:
            closing[stored.round_id] = stored.entry.kind
    return last_round is not None and closing.get(last_round) == "round_settled"


@pytest.mark.usefixtures("small_window")
def test_the_tenth_seals_checkpoint_is_the_size_of_the_seconds(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite"
    seals = build_sealed(path, SEALS)
    sizes = [len(canonical_json(seal.checkpoint)) for seal in seals]
    kept = [len(seal.checkpoint["state"]["closed_rounds"]) for seal in seals]
    # Every segment holds the same rounds under new ids: only counters' digits may differ. Before the
    # bound, each seal carried every round ever closed (~45 bytes a round, 8 rounds a segment).
    assert max(sizes[1:]) - sizes[1] <= 256, sizes
    assert max(kept) <= WINDOW_ROUNDS, kept
    assert all(seal.checkpoint["format"] == CHECKPOINT_FORMAT == 4 for seal in seals)
    with Journal.open(path, "T1") as journal:
        started = rebuild_state(journal)
        whole = TableState("T1").apply_all(journal.replay())
        expected_moves_on = journal_button_moves_on(journal)
    # A start after them (the last seal's checkpoint and the open segment) is the whole fold ...
    assert canonical_json(state_to_checkpoint(started)) == canonical_json(state_to_checkpoint(whole))
    # ... and the button's decision at recovery is what the entries say.
    recovered = RecoveredState.from_table_state(started)
    assert recovered.button_moves_on == expected_moves_on
    assert [verdict.ok for verdict in verify_segments(path, key=KEY)] == [True] * SEALS


def every_closed_round(path: Path, last_seq: int) -> dict[str, str]:
    """What a format-2 seal carried as closed_rounds: every round closed up to ``last_seq``."""
    closed: dict[str, str] = {}
    with Journal.open(path, "T1") as journal:
        for stored in journal.replay():
            if stored.seq > last_seq:
                break
            if stored.entry.kind in CLOSING_KINDS and stored.round_id is not None:
                closed[stored.round_id] = stored.entry.kind
    return closed


def rewrite_as_format_2(path: Path, seal: Seal, closed: dict[str, str]) -> None:
    """The seal as the release before format 3 wrote it: format 2, every round closed, keyed again (its
    meters without the progressive's net: these rounds have no Progressive wager)."""
    state = seal.checkpoint["state"]
    meters = {k: v for k, v in state["meters"].items() if k != "progressive_net_cents"}
    checkpoint = {"format": 2, "state": {**state, "closed_rounds": closed, "meters": meters}}
    seal_file(path, seal.segment).chmod(0o644)
    seal_file(path, seal.segment).write_text(
        json.dumps(asdict(replace(seal, checkpoint=checkpoint).keyed(KEY)))
    )


@pytest.mark.usefixtures("small_window")
def test_format_2_seals_then_format_3_seals_load_and_verify(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "var" / "journal.sqlite"
    path.parent.mkdir()
    from controller.journal.proof import prepare_for_run

    prepare_for_run(path, "T1", key=KEY)
    for index in range(3):  # three seals written by the release before (format 2)
        append_segment(path, index)
        sealed = seal_now(path, KEY)
        rewrite_as_format_2(path, sealed, every_closed_round(path, sealed.last_seq))
    old = read_seal(path, 3)
    assert old is not None
    assert old.checkpoint["format"] == 2
    assert old.checkpoint["state"]["closed_rounds"] == every_closed_round(path, old.last_seq)
    assert len(old.checkpoint["state"]["closed_rounds"]) > 3 * WINDOW_ROUNDS
    # The start from a format-2 seal is the whole fold; so is the start after format-3 seals follow.
    with Journal.open(path, "T1") as journal:
        assert canonical_json(state_to_checkpoint(rebuild_state(journal))) == canonical_json(
            state_to_checkpoint(TableState("T1").apply_all(journal.replay()))
        )
    for index in range(3, 6):  # this release goes on sealing (format 3)
        append_segment(path, index)
        sealed = seal_now(path, KEY)
        # The map of every round the format-2 seals carried is not carried on: the window only.
        assert len(sealed.checkpoint["state"]["closed_rounds"]) <= WINDOW_ROUNDS
        assert sealed.checkpoint["format"] == CHECKPOINT_FORMAT == 4
    append_segment(path, 6)
    with Journal.open(path, "T1") as journal:
        started = rebuild_state(journal)
        whole = TableState("T1").apply_all(journal.replay())
        moves_on = journal_button_moves_on(journal)
    assert canonical_json(state_to_checkpoint(started)) == canonical_json(state_to_checkpoint(whole))
    assert RecoveredState.from_table_state(started).button_moves_on == moves_on
    assert [verdict.ok for verdict in verify_segments(path, key=KEY)] == [True] * 6
    # `journal verify --segment` (in this process: the windows above are made small here only): a
    # format-2 seal after format 2, and the first format-3 seal after it.
    config = key_config(tmp_path, path)
    for number in ("3", "4"):
        assert cli_main(["journal", "verify", "--config", str(config), "--segment", number]) == 0
        assert capsys.readouterr().out.startswith(f"segment {number}: ok")
    # A format-2 seal whose map of every closed round was edited (an old round's kind) is still found.
    edited: dict[str, Any] = json.loads(json.dumps(old.checkpoint))
    first_round = next(iter(edited["state"]["closed_rounds"]))
    edited["state"]["closed_rounds"][first_round] = (
        "round_voided"
        if (edited["state"]["closed_rounds"][first_round] != "round_voided")
        else "round_settled"
    )
    seal_file(path, 3).write_text(json.dumps(asdict(replace(old, checkpoint=edited).keyed(KEY))))
    verdicts = verify_segments(path, key=KEY)
    assert [verdict.ok for verdict in verdicts] == [True, True, False, True, True, True]
    assert "checkpoint" in verdicts[2].line


@pytest.mark.usefixtures("small_window")
def test_a_format_1_seal_past_the_window_is_refolded_and_verified(tmp_path: Path) -> None:
    """Format 1 carried every round closed too: the start that refolds the sealed past, and journal
    verify, hold it to that map although the reducer keeps only its window."""
    path = tmp_path / "journal.sqlite"
    from controller.journal.proof import prepare_for_run

    prepare_for_run(path, "T1", key=KEY)
    for index in range(3):
        append_segment(path, index)
        sealed = seal_now(path, KEY)
        # What format 1 did not carry (controller/journal/checkpoint.py), written out: the old shape.
        lacked = {"progressive", "software", "software_checked", "clock", "clock_stepped"}
        lacked |= {"config_checked", "changes", "approved_config_files"}
        state = {name: value for name, value in sealed.checkpoint["state"].items() if name not in lacked}
        state["closed_rounds"] = every_closed_round(path, sealed.last_seq)
        # Nor the progressive's net in the meters (these rounds have no Progressive wager).
        state["meters"] = {k: v for k, v in state["meters"].items() if k != "progressive_net_cents"}
        assert len(state["closed_rounds"]) > WINDOW_ROUNDS
        seal_file(path, sealed.segment).chmod(0o644)
        checkpoint = {"format": 1, "state": state}
        seal_file(path, sealed.segment).write_text(
            json.dumps(asdict(replace(sealed, checkpoint=checkpoint).keyed(KEY)))
        )
    append_segment(path, 3)
    with Journal.open(path, "T1") as journal:
        assert canonical_json(state_to_checkpoint(rebuild_state(journal))) == canonical_json(
            state_to_checkpoint(TableState("T1").apply_all(journal.replay()))
        )
    assert [verdict.ok for verdict in verify_segments(path, key=KEY)] == [True] * 3
