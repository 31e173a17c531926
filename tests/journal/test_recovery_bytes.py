"""Recovery's ``round_voided`` is built as its typed entry (issue 29): the bytes it writes are the bytes
recovery wrote when it built the entry from dicts. Each fixed open round below is written by the
journal's writer, recovered, and the stored public part (the text the chain hashes) compared with the
text the dict-built recovery wrote for it (recorded at 02c289d, before the change)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from controller.journal import Journal
from controller.journal import entries as e
from controller.journal.recovery import recover

HCF = "high-card-flush"
CHASE = "chase-the-flush"
TOP = "top-flush"

# Each open round: (game, banking, locked wagers by seat, decisions as (seat, action, cents, street)).
OPEN_ROUNDS: dict[
    str, tuple[str, dict[str, object], dict[str, dict[str, int]], list[tuple[int, str, int, str | None]]]
] = {
    # Settled by the rules engine: a raise decided, a folded seat's ante returned too.
    "house_raise_and_fold": (
        HCF,
        {"mode": "house"},
        {"1": {"ante": 500, "flush": 100}, "2": {"ante": 500}},
        [(1, "raise", 1000, None), (2, "fold", 0, None)],
    ),
    # Chase the Flush: the all-in's street is in the settle input; an Xtra Bonus unlike the ante, which
    # the rules engine refuses: the stakes returned by recovery's own settlement.
    "chase_all_in": (
        CHASE,
        {"mode": "house"},
        {"3": {"ante": 500, "xtra_bonus": 100}},
        [(3, "all_in", 1500, "flop")],
    ),
    # A lock the rules engine refuses (no ante), in a designated player's round (the designated player's
    # seat left out): returned by recovery's own settlement, with no rake lines.
    "designated_player_no_ante": (
        HCF,
        {"mode": "designated-player", "seat": 4, "funds": 100000},
        {"1": {"flush": 200}, "4": {"ante": 500}},
        [],
    ),
    # Started, nothing wagered: a settlement of no seats.
    "nothing_wagered": (TOP, {"mode": "house"}, {}, []),
}

STORED_TEXT: dict[str, str] = {
    "chase_all_in": (
        '{"by":"recovery","reason":"interrupted: the controller stopped before the round closed","r'
        'ound":{"banking":{"mode":"house"},"dead":true,"dealer":[],"game":"chase-the-flush","seats"'
        ':[{"cards":[],"seat":3,"street":"flop","wagers":{"all_in":1500,"ante":500,"xtra_bonus":100'
        '}}]},"settlement":{"banker_net":0,"banking":"house","dead":true,"dealer":null,"game":"chas'
        'e-the-flush","rake":0,"seats":[{"hand":null,"net":0,"rake":0,"reason":"round dead","seat":'
        '3,"status":"dead","wagers":{"all_in":{"net":0,"result":"returned","stake":1500},"ante":{"n'
        'et":0,"result":"returned","stake":500},"xtra_bonus":{"net":0,"result":"returned","stake":1'
        "00}}}]}}"
    ),
    "designated_player_no_ante": (
        '{"by":"recovery","reason":"interrupted: the controller stopped before the round closed","r'
        'ound":{"banking":{"funds":100000,"mode":"designated-player","seat":4},"dead":true,"dealer"'
        ':[],"game":"high-card-flush","seats":[{"cards":[],"seat":1,"wagers":{"flush":200}}]},"sett'
        'lement":{"banker_net":0,"banking":"designated-player","dead":true,"dealer":null,"game":"hi'
        'gh-card-flush","rake":0,"seats":[{"hand":null,"net":0,"rake":0,"reason":"round dead","seat'
        '":1,"status":"dead","wagers":{"flush":{"net":0,"result":"returned","stake":200}}}]}}'
    ),
    "house_raise_and_fold": (
        '{"by":"recovery","reason":"interrupted: the controller stopped before the round closed","r'
        'ound":{"banking":{"mode":"house"},"dead":true,"dealer":[],"game":"high-card-flush","seats"'
        ':[{"cards":[],"seat":1,"wagers":{"ante":500,"flush":100,"raise":1000}},{"cards":[],"folded'
        '":true,"seat":2,"wagers":{"ante":500}}]},"settlement":{"banker_net":0,"banking":"house","d'
        'ead":true,"dealer":null,"game":"high-card-flush","rake":0,"seats":[{"hand":null,"net":0,"r'
        'ake":0,"reason":"round dead","seat":1,"status":"dead","wagers":{"ante":{"net":0,"result":"'
        'returned","stake":500},"flush":{"net":0,"result":"returned","stake":100},"raise":{"net":0,'
        '"result":"returned","stake":1000}}},{"hand":null,"net":0,"rake":0,"reason":"round dead","s'
        'eat":2,"status":"dead","wagers":{"ante":{"net":0,"result":"returned","stake":500}}}]}}'
    ),
    "nothing_wagered": (
        '{"by":"recovery","reason":"interrupted: the controller stopped before the round closed","r'
        'ound":{"banking":{"mode":"house"},"dead":true,"dealer":[],"game":"top-flush","seats":[]},"'
        'settlement":{"banker_net":0,"banking":"house","dead":true,"dealer":null,"game":"top-flush"'
        ',"rake":0,"seats":[]}}'
    ),
}


def write_open_round(journal: Journal, round_id: str, name: str) -> None:
    """The open round ``name`` written by the journal's writer, as the engine writes a round it locked."""
    game, banking, locked, decisions = OPEN_ROUNDS[name]
    seats = sorted({int(seat) for seat in locked} | {1})
    journal.append(
        "round_started",
        e.RoundStarted(round_id=round_id, game=game, banking=banking, seats=seats),
        round_id=round_id,
        source="engine",
    )
    journal.append("bets_locked", e.BetsLocked(wagers=locked), round_id=round_id, source="engine")
    for seat, action, cents, street in decisions:
        journal.append(
            "decision",
            e.Decision(seat=seat, action=action, amount_cents=cents, street=street, cause="dealer"),
            round_id=round_id,
            source="engine",
        )


@pytest.mark.parametrize("name", sorted(OPEN_ROUNDS))
def test_recovery_writes_the_round_voided_bytes_it_always_wrote(journal_path: Path, name: str) -> None:
    round_id = "T1-20260101-000001"
    with Journal.open(journal_path, "T1") as journal:
        write_open_round(journal, round_id, name)
        assert recover(journal).voided == [round_id]
    with sqlite3.connect(journal_path) as connection:
        rows = connection.execute(
            "SELECT payload, private FROM journal WHERE kind = 'round_voided' AND round_id = ?", (round_id,)
        ).fetchall()
    assert rows == [(STORED_TEXT[name], None)]
