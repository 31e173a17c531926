"""Must show: scripted full rounds of each game (High Card Flush in both banking modes, Top Flush, Chase
the Flush) through the simulated devices over pseudo-terminals — the real daemon, real ptys, a real
SQLite journal, the configuration a TOML file — and every recalled round checked against
`flushtable settle`."""

from __future__ import annotations

from pathlib import Path

import pytest

from controller.journal.verify import verify_chain
from tests.daemon.harness import (
    GAMES_TOML,
    by_round,
    check_every_round_closed_once,
    check_recall_settles,
    entries,
    run_daemon,
    settle_with_cli,
    write_config,
)

ROUNDS = 6


@pytest.mark.parametrize("game", sorted(GAMES_TOML))
def test_full_rounds_of_each_game_settle_as_recalled(tmp_path: Path, game: str) -> None:
    config_path = write_config(tmp_path, game)
    journal_path = tmp_path / "journal.sqlite"
    run = run_daemon(config_path, journal_path, rounds=ROUNDS, seed=7, autoplay=True)

    assert run.summary.rounds_closed >= ROUNDS
    all_entries = entries(journal_path)
    closings = check_every_round_closed_once(all_entries)
    assert closings["round_settled"] >= ROUNDS - 1, closings  # autoplay makes no dead hands
    assert verify_chain(journal_path).ok

    # Each round went through the devices: cards from the shoe, chips from the sensors, keys pressed.
    for round_id, round_entries in by_round(all_entries).items():
        sources = {entry.source for entry in round_entries}
        kinds = {entry.kind for entry in round_entries}
        if "round_settled" in kinds:
            assert {"shuffler", "sensors", "display"} <= sources, (round_id, sources)
            assert {"bets_locked", "card_dealt", "hand_complete", "decision"} <= kinds, (round_id, kinds)

    records = check_recall_settles(journal_path)
    settled = [record for record in records if record["status"] == "settled"]
    assert settled
    # And with the real command line, all of them in one `flushtable settle --jsonl`.
    assert settle_with_cli([record["round"] for record in settled]) == [
        record["settlement"] for record in settled
    ]
    if game in ("hcf-dp", "hcf-dp-progressive"):
        assert all(record["round"]["banking"]["mode"] == "designated-player" for record in settled)
        assert any(record["settlement"].get("rake", 0) > 0 for record in settled)
    if game == "chase":
        assert all(len(record["round"]["community"]) == 4 for record in settled)
    if game in ("hcf-progressive", "hcf-dp-progressive"):
        # The Progressive wager was played, so the money check above read the progressive's take.
        progressive = [record for record in settled if record["settlement"].get("progressive")]
        assert progressive, "no round with a Progressive wager"
        assert any(record["settlement"]["progressive"]["collected_cents"] > 0 for record in progressive)
