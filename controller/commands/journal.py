"""`flushtable journal verify|show|tail|head|backup|anchor|archive`: check, read, back up and archive the
table's journal."""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from controller.commands.journal_args import add_journal_arguments, journal_path
from controller.errors import UserError
from controller.files import check_no_special_file
from controller.journal.privacy import RevealOracle
from controller.journal.store import Journal

NAME = "journal"
HELP = "verify the journal's hash chain, or show its entries"
FOLLOW_POLL_S = 0.2


def add_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="journal_action", metavar="ACTION", required=True)
    verify = actions.add_parser(
        "verify",
        help="check the journal as `run` does (chain, anchor, triggers, SQLite's integrity); exit 1 "
        "naming the first bad entry",
    )
    add_journal_arguments(verify)
    verify.add_argument(
        "--anchor",
        metavar="SEQ:HASH",
        help="also require entry SEQ to have this hash (kept from `journal head`)",
    )
    verify.add_argument(
        "--totals",
        action="store_true",
        help="also fold each segment's entries again and compare the totals kept beside them",
    )
    sealed = verify.add_mutually_exclusive_group()
    sealed.add_argument(
        "--segment",
        metavar="N",
        type=int,
        help="check sealed segment N on its own (its seal, file, chain and checkpoint) instead",
    )
    sealed.add_argument(
        "--segments",
        action="store_true",
        help="check every sealed segment in order, printing each, then the open segment as `run` does",
    )
    archive = actions.add_parser(
        "archive",
        help="move sealed segments older than the retention to the archive directory (their seals stay)",
    )
    add_journal_arguments(archive)
    archive.add_argument("--archive-dir", dest="dir", metavar="DIR", help="default: [journal] archive_dir")
    archive.add_argument(
        "--retention-days", metavar="DAYS", type=int, help="default: [journal] retention_days (90)"
    )
    show = actions.add_parser("show", help="print entries, oldest first")
    add_journal_arguments(show)
    show.add_argument("--round", metavar="ID", help="only this round's entries")
    show.add_argument(
        "--kind", metavar="KIND", action="append", help="only entries of this kind (repeatable)"
    )
    show.add_argument("--since", metavar="SEQ", type=int, default=0, help="only entries after SEQ")
    show.add_argument("--json", action="store_true", help="one JSON object a line, every column")
    show.add_argument(
        "--private",
        action="store_true",
        help="also print private parts (cards) of rounds not yet revealed, and of dead hands: for audits",
    )
    actions.add_parser(
        "schema", help="print the JSON Schema of every entry kind (docs/journal-entries.schema.json)"
    )
    tail = actions.add_parser("tail", help="print the last entries; --follow keeps printing new ones")
    add_journal_arguments(tail)
    tail.add_argument("-n", "--lines", type=int, default=20, metavar="N", help="how many (default 20)")
    tail.add_argument("--follow", action="store_true", help="keep printing entries as they are appended")
    tail.add_argument("--json", action="store_true", help="one JSON object a line, every column")
    tail.add_argument(
        "--private",
        action="store_true",
        help="also print private parts (cards) of rounds not yet revealed, and of dead hands: for audits",
    )
    backup = actions.add_parser(
        "backup", help="copy the journal consistently (safe while the table runs), verify the copy"
    )
    add_journal_arguments(backup)
    backup.add_argument("destination", metavar="DEST", help="the new file to write")
    head = actions.add_parser(
        "head", help="print the last entry's seq and hash (an anchor to keep elsewhere)"
    )
    add_journal_arguments(head)
    anchor = actions.add_parser(
        "anchor",
        help="verify the journal fully, then write its anchor beside it (a journal made before anchors)",
    )
    add_journal_arguments(anchor)


def run(args: argparse.Namespace) -> int:
    action: str = args.journal_action
    if action == "schema":
        return _schema()
    if action in ("verify", "anchor", "archive"):
        return _check(args, action)
    path = journal_path(args)
    if action == "backup":
        return _backup(args, path)
    with Journal.open_existing(path) as journal:
        if action == "head":
            return _head(journal)
        # Every entry leaves through the gate: a private part only once its round is revealed, unless
        # an auditor asks for them all with --private.
        oracle = RevealOracle(journal)
        if action == "show":
            return _show(args, journal, oracle)
        return _tail(args, journal, oracle)


def _schema() -> int:
    from controller.journal.entries import json_schema_text  # noqa: PLC0415 - the schema's alone

    sys.stdout.write(json_schema_text())
    return 0


@dataclass(frozen=True, slots=True)
class _CheckTarget:
    """The journal `verify`, `anchor` and `archive` work on, and what the configuration says of it."""

    path: Path
    anchor_key: bytes | None = None
    table_id: str | None = None
    archive_dir: Path | None = None
    retention_days: int = 90


def _check_target(args: argparse.Namespace) -> _CheckTarget:
    """The configuration's anchor key (and, given --config, its table), as `run` reads them. Given
    --journal alone, the embedded configuration would give neither (it names no anchor key:
    tests/cli/test_cli_imports.py holds it to that), so none is read, and none of its checks (pydantic,
    the configuration's models) is loaded: issue 28, a command line that answers at once."""
    if args.journal and args.config is None:
        return _CheckTarget(Path(args.journal))
    from controller.config import load_config  # noqa: PLC0415 (above)

    config = load_config(args.config)
    return _CheckTarget(
        path=Path(args.journal) if args.journal else config.journal_path,
        anchor_key=config.journal_anchor_key,
        table_id=None if args.config is None else config.table_id,
        archive_dir=config.journal_segments.archive_dir,
        retention_days=config.journal_segments.retention_days,
    )


def _check(args: argparse.Namespace, action: str) -> int:
    """`journal verify`, `anchor` and `archive`: the journal named as `run` names it."""
    target = _check_target(args)
    path, key = target.path, target.anchor_key
    check_no_special_file(path, "journal")  # a FIFO, a device, a directory: one line (issue 30)
    if action == "archive":
        return _archive(args, path, key, target.archive_dir, target.retention_days)
    # The start-up proof (anchor, chain, triggers) only for these two: `show`, `tail` and `head`
    # load none of it (issue 28, a command line that answers at once).
    from controller.journal.proof import anchor_journal  # noqa: PLC0415

    if action == "anchor":
        verdict = anchor_journal(path, key=key)
        print(verdict.line)
        return 0 if verdict.ok else 1
    if args.segment is not None or args.segments:
        status = _verify_segments(args, path, target.table_id, key)
    else:
        status = _verify(args, path, target.table_id, key)
    return max(status, _verify_totals(path)) if args.totals else status


def _backup(args: argparse.Namespace, path: Path) -> int:
    from controller.journal.verify import verify_chain  # noqa: PLC0415 (backup's alone)

    with Journal.open_existing(path) as journal:
        last = journal.wal.backup(args.destination)
    result = verify_chain(args.destination)
    if not result.ok:
        print(f"backup {args.destination}: {result.summary()}")
        return 1
    anchor_text = f"{last.seq}:{last.hash}" if last else "0:" + "0" * 64
    print(f"backup {args.destination}: {result.summary()}, anchor {anchor_text}")
    return 0


def _head(journal: Journal) -> int:
    last = journal.last_entry()
    print(f"{last.seq}:{last.hash}" if last else "0:" + "0" * 64)
    return 0


def _show(args: argparse.Namespace, journal: Journal, oracle: RevealOracle) -> int:
    kinds = _check_kinds(args.kind)
    for entry in journal.entries(since_seq=args.since, round_id=args.round, kinds=kinds):
        print(_format(oracle.viewer_entry(entry, with_private=args.private), as_json=args.json))
    return 0


def _tail(args: argparse.Namespace, journal: Journal, oracle: RevealOracle) -> int:
    if args.lines < 1:
        raise UserError(f"--lines: must be at least 1, not {args.lines}")
    last = journal.last_entry()
    since = max(0, (last.seq if last else 0) - args.lines)
    while True:
        for entry in journal.entries(since_seq=since):
            shown = oracle.viewer_entry(entry, with_private=args.private)
            print(_format(shown, as_json=args.json), flush=args.follow)
            since = entry.seq
        if not args.follow:
            return 0
        time.sleep(FOLLOW_POLL_S)


def _verify(args: argparse.Namespace, path: Path, table_id: str | None, key: bytes | None) -> int:
    """What `run` would decide (proof.startup_check, the one code path): its refusal, exit 1; else the
    verdict. Without --config the journal's own table is taken (the embedded configuration's table is
    not this journal's business)."""
    from controller.journal.anchor import anchor_path  # noqa: PLC0415 (verify's alone: _check says why)
    from controller.journal.proof import check_journal, startup_check  # noqa: PLC0415

    explicit = _parse_anchor(args.anchor) if args.anchor else None
    decided = startup_check(path, table_id, key=key, explicit_anchor=explicit)
    verdict = decided.verdict
    if decided.refusal is None and decided.then in ("create", "create_superseding"):
        # `run` would start a new journal here: nothing to verify (no such file, or an empty one).
        verdict = check_journal(path, anchor=decided.anchor)
    assert verdict is not None or decided.refusal is not None
    line = decided.refusal if decided.refusal is not None else verdict.line if verdict else ""
    print(line)
    if verdict is not None and verdict.missing_triggers:
        print("warning: the append-only triggers are missing from this journal", file=sys.stderr)
    if decided.refusal is None and decided.anchor is None and path.exists():
        print(
            f"note: no anchor beside this journal ({anchor_path(path).name}): entries lost from its "
            "end cannot be seen",
            file=sys.stderr,
        )
    elif decided.anchor is not None and decided.anchor.mac is None and key is None:
        print(
            "note: the anchor is not keyed (no [journal] anchor_key_file): whoever can write this disk "
            "can rewrite the journal's end and its anchor together",
            file=sys.stderr,
        )
    return 0 if decided.refusal is None and verdict is not None and verdict.ok else 1


def _verify_segments(args: argparse.Namespace, path: Path, table_id: str | None, key: bytes | None) -> int:
    """`journal verify --segment N` (one sealed segment on its own) or `--segments` (every one, in order,
    a line each as it is checked, then the open segment as `run` checks it)."""
    from controller.journal.seals import seal_numbers  # noqa: PLC0415
    from controller.journal.segments import verify_segment, verify_segments  # noqa: PLC0415

    if args.segment is not None:
        verdict = verify_segment(path, args.segment, key=key)
        print(verdict.line)
        return 0 if verdict.ok else 1

    def progress(verdict: Any, done: int, total: int) -> None:
        print(f"[{done}/{total}] {verdict.line}", flush=True)

    if not seal_numbers(path):
        print("no sealed segment")
    verdicts = verify_segments(path, key=key, progress=progress)
    open_status = _verify(args, path, table_id, key)
    bad = [verdict for verdict in verdicts if not verdict.ok]
    if bad:
        print(
            f"{len(bad)} of {len(verdicts)} sealed segments failed: {', '.join(str(v.segment) for v in bad)}"
        )
    return 1 if bad or open_status else 0


def _verify_totals(path: Path) -> int:
    """`journal verify --totals`: each segment's totals against its entries (a line each); exit 1 when
    one differs."""
    from controller.journal.totals_check import check_totals  # noqa: PLC0415 (--totals' alone)

    with Journal.open_existing(path, readonly=True) as journal:
        verdicts = check_totals(journal)
    for verdict in verdicts:
        print(f"totals: {verdict.line}")
    return 0 if all(verdict.ok for verdict in verdicts) else 1


def _archive(
    args: argparse.Namespace, path: Path, key: bytes | None, archive_dir: Path | None, retention_days: int
) -> int:
    from controller.journal.segments import archive_segments  # noqa: PLC0415 (archive's alone)

    target = Path(args.dir) if args.dir else archive_dir
    if target is None:
        raise UserError("journal archive: no archive directory (--archive-dir, or [journal] archive_dir)")
    if not path.is_file():
        raise UserError(f"journal {path}: no such file")
    try:  # the archive directory first: a bad one refused before anything is read or moved
        target.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise UserError(f"--archive-dir {target}: {error.strerror or error}") from None
    if not target.is_dir():
        raise UserError(f"--archive-dir {target}: not a directory")
    days = args.retention_days if args.retention_days is not None else retention_days
    if days < 1:
        raise UserError(f"--retention-days: must be at least 1, not {days}")
    moved = archive_segments(path, target, retention_days=days, key=key)
    for item in moved:
        print(f"segment {item.segment} (last entry {item.last_utc}) archived to {item.path}")
    print(f"{len(moved)} segment{'s' if len(moved) != 1 else ''} archived (retention {days} days)")
    return 0


def _parse_anchor(text: str) -> tuple[int, str]:
    seq_text, _, hash_hex = text.partition(":")
    if not seq_text.isdigit() or len(hash_hex) != 64 or any(c not in "0123456789abcdef" for c in hash_hex):
        raise UserError(f"--anchor: {text!r} is not SEQ:HASH (the output of `flushtable journal head`)")
    return int(seq_text), hash_hex


def _check_kinds(kinds: list[str] | None) -> list[str] | None:
    if not kinds:
        return kinds
    # The kinds' registry (the typed classes) only to check a --kind given: `journal show` without one
    # loads no typed classes (issue 28).
    from controller.journal.entries import KINDS as KNOWN_KINDS  # noqa: PLC0415

    for kind in kinds:
        if kind not in KNOWN_KINDS:
            raise UserError(f"--kind: unknown entry kind {kind!r} (known: {', '.join(sorted(KNOWN_KINDS))})")
    return kinds


def _format(shown: dict[str, Any], *, as_json: bool) -> str:
    """One entry as the gate let it through (privacy.viewer_entry): its public part, and its private
    part when shown."""
    if as_json:
        return json.dumps(shown, ensure_ascii=False, sort_keys=True)
    parts = (
        shown["payload"] if shown["private"] is None else {**shown["payload"], "private": shown["private"]}
    )
    payload = json.dumps(parts, ensure_ascii=False, sort_keys=True, separators=(", ", ": "))
    if shown["hidden"]:
        payload += "  [private part withheld until the reveal]"
    round_text = shown["round_id"] or "-"
    envelope = f"{shown['seq']:>7} {shown['time_utc']} {round_text:<22} {shown['source']:<14}"
    return f"{envelope} {shown['kind']:<18} {payload}"
