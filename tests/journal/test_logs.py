"""structlog: the journal's entries as log events, one processor chain, JSON lines or the console."""

from __future__ import annotations

import io
import json
import random

import pytest
import structlog
from structlog.testing import capture_logs

from controller.journal import Journal
from controller.logs import bind_device, bind_round, bind_table, configure_logging, get_logger
from tests.journal.scripted import play_round


def test_every_entry_is_logged_with_table_round_and_seq(journal: Journal) -> None:
    with capture_logs() as logs:
        round_id = play_round(journal, random.Random(41), players=1)
    entries = list(journal.entries())
    assert [log["event"] for log in logs] == [entry.kind for entry in entries]
    for log, entry in zip(logs, entries, strict=True):
        assert log["journal_seq"] == entry.seq
        assert log["table_id"] == "T1"
        assert log["round_id"] == round_id
        assert log["hash"] == entry.hash
        assert log["log_level"] == "info"


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_json_lines_carry_the_bound_context() -> None:
    stream = io.StringIO()
    configure_logging(stream=stream)  # not a terminal: JSON lines
    bind_table("T7")
    bind_round("RT7-20261129-000001")
    bind_device("shuffler")
    get_logger("test").info("card_dealt", position=3)
    bind_round(None)
    get_logger("test").debug("hidden")  # below the level
    get_logger("test").warning("device_lost", reason="heartbeat")
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert [line["event"] for line in lines] == ["card_dealt", "device_lost"]
    assert lines[0]["table_id"] == "T7"
    assert lines[0]["round_id"] == "RT7-20261129-000001"
    assert lines[0]["device"] == "shuffler"
    assert lines[0]["position"] == 3
    assert lines[0]["level"] == "info"
    assert lines[0]["timestamp"].endswith("Z")
    assert "round_id" not in lines[1]


def test_a_terminal_gets_the_console_renderer() -> None:
    stream = Terminal()
    configure_logging(stream=stream)
    bind_table("T7")
    get_logger("test").info("bets_locked", seats=3)
    text = stream.getvalue()
    assert "bets_locked" in text
    assert "table_id" in text
    with pytest.raises(json.JSONDecodeError):
        json.loads(text)
    configure_logging(stream=Terminal(), json_lines=True)
    structlog.get_logger().info("forced_json")


def test_bad_level_is_refused() -> None:
    with pytest.raises(ValueError, match="log level must be one of"):
        configure_logging(level="loud")


def test_the_logs_never_carry_a_card(journal: Journal) -> None:
    with capture_logs() as logs:
        play_round(journal, random.Random(42), outcome="dead")
        play_round(journal, random.Random(43))
    dealt = [log for log in logs if log["event"] == "card_dealt"]
    assert dealt
    assert all("card" not in log["payload"] for log in dealt)
    closing = [log for log in logs if log["event"] in ("round_dead", "round_settled")]
    assert len(closing) == 2
    assert all("round" not in log["payload"] and "settlement" in log["payload"] for log in closing)
