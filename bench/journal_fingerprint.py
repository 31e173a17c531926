"""A seeded run's journal, fingerprinted without what no two runs share (issue 28: "the journal's bytes
for the same seeded run identical"). Prints JSON: the entries' count and a SHA-256 over every entry's
seq, round id, source, kind, version and payload bytes and its private part's bytes with the salt taken
out; the wall-clock time, the salts (random by design: docs/journal.md) and the hashes that cover them
are left out.

    flushtable run --rounds 30 --seed 1 --no-panel --time-scale 50 --journal A.sqlite   # one checkout
    flushtable run --rounds 30 --seed 1 --no-panel --time-scale 50 --journal B.sqlite   # the other
    python bench/journal_fingerprint.py A.sqlite B.sqlite

Two journals with the same fingerprint wrote the same entries, byte for byte but for those fields.

A whole table's journal orders its devices' events as they arrive, which moves with timing (a change
that makes the table faster may let a status report arrive before a key press). What the code alone
decides is fingerprinted by ``--engine-session OUT``: the round engine's records of seeded autoplay
sessions of every game with faults (bench/bench_journal.py's rounds) written through the journal into
OUT, one round a commit, then fingerprinted: run it from both checkouts (PYTHONPATH) and compare.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import re
import sqlite3
import sys
from pathlib import Path

SALT = re.compile(rb',?"salt":"[0-9a-f]+"')


def fingerprint(path: Path) -> dict[str, object]:
    digest = hashlib.sha256()
    count = 0
    with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
        rows = db.execute(
            "SELECT seq, round_id, source, kind, version, CAST(payload AS BLOB), CAST(private AS BLOB) "
            "FROM journal ORDER BY seq"
        )
        for seq, round_id, source, kind, version, payload, private in rows:
            count += 1
            fields = [str(seq), str(round_id), source, kind, str(version)]
            digest.update("\x1f".join(fields).encode() + b"\x1f" + payload + b"\x1f")
            digest.update(SALT.sub(b"", private) if private is not None else b"\x00")
            digest.update(b"\x1e")
    return {"journal": str(path), "entries": count, "sha256": digest.hexdigest()}


def engine_session(path: Path, rounds_per_game: int) -> None:
    """The engine's records of seeded autoplay sessions, written through the journal into ``path``."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_journal import engine_rounds  # noqa: PLC0415 - a bench helper beside this file

    from controller.journal import Journal  # noqa: PLC0415

    with Journal.open(path, "FP") as journal:
        for batch in engine_rounds("FP", rounds_per_game):
            journal.append_many(batch)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("journals", type=Path, nargs="*")
    parser.add_argument("--engine-session", type=Path, default=None, metavar="OUT")
    parser.add_argument("--rounds", type=int, default=40, help="--engine-session: rounds of each game")
    args = parser.parse_args()
    if args.engine_session is not None:
        engine_session(args.engine_session, args.rounds)
        args.journals.append(args.engine_session)
    results = [fingerprint(path) for path in args.journals]
    print(json.dumps({"journals": results, "identical": len({r["sha256"] for r in results}) == 1}, indent=2))


if __name__ == "__main__":
    main()
