"""structlog: the journal's entries as log events, one processor chain, JSON lines or the console."""

from __future__ import annotations

import io
import json
import random
from collections.abc import Iterator

import pytest
import structlog
from structlog.testing import capture_logs

from controller.journal import Journal
from controller.journal import entries as typed
from controller.logs import bind_device, bind_round, bind_table, configure_logging, get_logger
from tests.journal.scripted import play_round


def test_every_entry_is_logged_with_table_round_and_seq(journal: Journal) -> None:
    with capture_logs() as logs:
        round_id = play_round(journal, random.Random(41), players=1)
    entries = list(journal.entries())
    assert [log["event"] for log in logs] == [entry.kind for entry in entries]
    # The engine journals the betting before the round starts (no round yet) and the return to idle
    # after it; everything from round_started to the round's close carries its id.
    started = next(entry.seq for entry in entries if entry.kind == "round_started")
    closed = next(entry.seq for entry in entries if entry.kind == "round_settled")
    for log, entry in zip(logs, entries, strict=True):
        assert log["journal_seq"] == entry.seq
        assert log["table_id"] == "T1"
        assert log["round_id"] == entry.round_id
        assert log["source"] == entry.source
        assert log["hash"] == entry.hash
        assert log["log_level"] == "info"
        if started <= entry.seq <= closed:
            assert log["round_id"] == round_id


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


def _strings(value: object) -> Iterator[str]:
    """Every string in a JSON value, keys included."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield str(key)
            yield from _strings(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _strings(item)


def test_the_logs_never_carry_a_card(journal: Journal) -> None:
    """Logs reach consoles and shippers: at every level they carry an entry's public part only, never
    its private part, even after the round's reveal (a dead round's and a settled one's alike)."""
    stream = io.StringIO()
    configure_logging(stream=stream, level="debug", json_lines=True)
    with capture_logs() as logs:
        play_round(journal, random.Random(42), outcome="dead")
        play_round(journal, random.Random(43))
    play_round(journal, random.Random(44))  # rendered as JSON lines, at the lowest level
    play_round(journal, random.Random(45), outcome="dead")
    entries = {entry.seq: entry for entry in journal.entries()}
    private_entries = [entry for entry in entries.values() if entry.private is not None]
    # The rounds did deal cards, and wrote hands, dead-round details and the settle input privately.
    kinds = {entry.kind for entry in private_entries}
    assert {"card_dealt", "round_settled", "round_dead", "dead_hand", "fault_raised"} <= kinds
    # What the private parts hold: card codes, and free texts (the shoe's words, the full reason with
    # its card and position).
    cards = {(entry.private or {})["card"] for entry in private_entries if entry.kind == "card_dealt"}
    assert len(cards) > 20
    private_texts = {
        value
        for entry in private_entries
        for value in (entry.private or {}).values()
        if isinstance(value, str) and len(value) > 3
    }
    assert any("position" in text for text in private_texts)  # e.g. "red_light at position 1"

    assert [log["event"] for log in logs] == [entries[log["journal_seq"]].kind for log in logs]
    for log in logs:
        entry = entries[log["journal_seq"]]
        # Exactly the public part: no private field, no private part, no salt, no merged payload.
        assert log["payload"] == entry.public
        assert not set(log["payload"]) & typed.PRIVATE_FIELDS[entry.kind]
        assert "private" not in log
        assert "private_text" not in log
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    journaled = [line for line in lines if "journal_seq" in line]
    assert len(journaled) > 50
    for line in journaled:
        assert line["payload"] == entries[line["journal_seq"]].public
    for record in [*logs, *lines]:
        strings = set(_strings({key: value for key, value in record.items() if key != "hash"}))
        # No card code as a value anywhere (cards named in a round's or a settlement's hands) ...
        assert not strings & cards, (record["event"], strings & cards)
        # ... and no text of a private part, whole or inside another text.
        text = json.dumps(record, default=str)
        assert not [secret for secret in private_texts if secret in text], record["event"]
    # The closing entries' public parts: the settlement without hands, a dead round without cards.
    closing = [log for log in logs if log["event"] in ("round_dead", "round_settled")]
    assert len(closing) == 2
    assert all("settlement" in log["payload"] and "hands" not in log["payload"] for log in closing)
    for log in closing:
        if log["event"] == "round_settled":
            assert "round" not in log["payload"]
            assert all("hand" not in seat for seat in log["payload"]["settlement"]["seats"])
        else:
            assert log["payload"]["round"]["dealer"] == []
            assert all(seat["cards"] == [] for seat in log["payload"]["round"]["seats"])


def test_above_info_the_journal_makes_no_log_call_per_entry(journal: Journal) -> None:
    # Issue 28: logging that formats what is not written. At warning (bench_table's level, a quiet
    # daemon's) the entries' info lines are not written, so the append does not even make the ~100 calls
    # a round. The real filtering logger, counting the calls that reach it.
    calls: list[str] = []
    warning = structlog.make_filtering_bound_logger(30)

    class Counting(warning):  # type: ignore[valid-type,misc]  # a class structlog made at run time
        def info(self, event: str, *args: object, **kw: object) -> object:
            calls.append(event)
            return super().info(event, *args, **kw)

    stream = io.StringIO()
    structlog.configure(
        processors=[structlog.processors.JSONRenderer()],
        wrapper_class=Counting,
        logger_factory=structlog.PrintLoggerFactory(file=stream),
        cache_logger_on_first_use=False,
    )
    try:
        play_round(journal, random.Random(41), players=1)
    finally:
        structlog.reset_defaults()
    assert len(list(journal.entries())) > 10
    assert calls == []
    assert stream.getvalue() == ""
