"""`flushtable settle [FILE] [--jsonl | --text]`: settle a round given as JSON; print its settlement as JSON
(or with --text as a dealer reads it).

The contract is docs/settle.md. Bad input: one line on standard error naming the field and the reason,
exit status 2, never a traceback. With --jsonl each bad line is answered by ``{"error": "..."}`` in its
place, the rest are settled, and the exit status is 2 at the end.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable
from typing import IO, NoReturn

from controller.errors import UserError, shown
from controller.rules.settle import settle_round_json

NAME = "settle"
HELP = "settle one round given as JSON (a file, or standard input) and print its settlement as JSON"

MAX_INPUT_CHARS = 10_000_000  # a round is a few kilobytes; refuse a runaway file rather than exhaust memory


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", nargs="?", metavar="FILE", help="the round as JSON (default: standard input)")
    parser.add_argument(
        "--jsonl",
        action="store_true",
        help='read one round per line and write one settlement (or {"error": ...}) per line, in order',
    )
    parser.add_argument(
        "--text",
        action="store_true",
        help="print the settlement as a dealer or supervisor reads it (hands in words, amounts as money)",
    )
    parser.add_argument(
        "--config",
        metavar="FILE",
        help="with --text: the table configuration whose [property] money the amounts are written in "
        "(default: the amounts alone)",
    )


def _refuse_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not a number JSON allows")


def _refuse_duplicates(pairs: list[tuple[str, object]]) -> dict[str, object]:
    obj: dict[str, object] = {}
    for key, value in pairs:
        if key in obj:
            raise ValueError(f"field {shown(key)} appears twice in one object")
        obj[key] = value
    return obj


def load_round_json(text: str, *, where: str = "input") -> object:
    """Strict JSON: no NaN or Infinity, no key given twice in one object, no 5,000-digit numbers."""
    try:
        return json.loads(text, parse_constant=_refuse_constant, object_pairs_hook=_refuse_duplicates)
    except json.JSONDecodeError as error:
        raise UserError(
            f"{where}: not JSON: {error.msg} at line {error.lineno} column {error.colno}"
        ) from None
    except (ValueError, RecursionError) as error:
        # ValueError: our hooks, and Python's limit on the digits of an int; RecursionError: [[[[...]]]].
        reason = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise UserError(f"{where}: not acceptable JSON: {reason}") from None


def _is_recall_record(obj: object) -> bool:
    # A round input never has a round_id (settle refuses it as an unknown field), so a recall record
    # (docs/journal.md "Recall") is told apart by its shape with no ambiguity.
    return isinstance(obj, dict) and "round_id" in obj and "round" in obj and "settlement" in obj


def round_input(obj: object, *, where: str = "input") -> dict[str, object]:
    """The round to settle: ``obj`` itself, or the ``round`` of a recall record (``flushtable recall
    --jsonl``'s line, or the one-record array ``recall --round ID --json`` prints)."""
    if isinstance(obj, list) and len(obj) == 1 and _is_recall_record(obj[0]):
        obj = obj[0]
    if isinstance(obj, list) and obj and all(_is_recall_record(item) for item in obj):
        raise UserError(
            f"{where}: {len(obj)} recall records in one array; settle one round, or many with "
            "`flushtable recall --jsonl | flushtable settle --jsonl`"
        )
    if not isinstance(obj, dict):
        raise UserError(f"{where}: a round is a JSON object, not {type(obj).__name__}")
    if _is_recall_record(obj):
        round_json = obj["round"]
        if not isinstance(round_json, dict):
            raise UserError(f"{where}: round {obj['round_id']}: its recall record carries no round to settle")
        return round_json
    return obj


def settle_text(text: str, *, where: str = "input") -> dict[str, object]:
    """Settle one round from its JSON text (a round, or a recall record): the settlement as a JSON-ready
    dict, or UserError."""
    obj = round_input(load_round_json(text, where=where), where=where)
    try:
        return settle_round_json(obj)
    except RecursionError:
        raise UserError(f"{where}: nested too deeply") from None


def _read(path: str | None) -> str:
    try:
        if path is None or path == "-":
            text = sys.stdin.read(MAX_INPUT_CHARS + 1)
        else:
            # A regular file only (a FIFO would wait for a writer for ever), read to the limit.
            from controller.files import FileRefused, read_bounded  # noqa: PLC0415 - only for a file

            try:
                data = read_bounded(path, limit_bytes=4 * MAX_INPUT_CHARS)  # UTF-8: at most 4 per character
            except FileRefused as refused:
                raise UserError(f"FILE: cannot read {path}: {refused.reason}") from None
            text = data.decode("utf-8")
    except OSError as error:
        raise UserError(f"FILE: cannot read {path}: {error.strerror}") from None
    except UnicodeDecodeError:
        raise UserError(f"FILE: {path or 'standard input'} is not UTF-8 text") from None
    if len(text) > MAX_INPUT_CHARS:
        raise UserError(f"FILE: more than {MAX_INPUT_CHARS} characters; one round is a few kilobytes")
    return text


def settle_lines(lines: Iterable[str], out: IO[str], err: IO[str]) -> int:
    """--jsonl: one result per input line, in order; blank lines are skipped. A bad line is answered by
    ``{"error": "line N: ..."}`` in its place; at the end one line on ``err`` counts the refusals and
    the status is 2. 0 when every line settled."""
    refused: list[str] = []
    settled = 0
    for line_number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            result: dict[str, object] = settle_text(line, where="input")
            settled += 1
        except UserError as error:
            message = f"line {line_number}: {error}"
            result = {"error": message}
            refused.append(message)
        out.write(json.dumps(result) + "\n")
    if refused:
        print(
            f"flushtable settle: {len(refused)} of {len(refused) + settled} rounds refused "
            f"(first: {refused[0]})",
            file=err,
        )
        return 2
    return 0


def run(args: argparse.Namespace) -> int:
    if args.text and args.jsonl:
        raise UserError("--text and --jsonl: give one or the other")
    if args.config and not args.text:
        raise UserError("--config: only with --text (the JSON settlement is in cents, whatever the money)")
    text = _read(args.file)
    if args.jsonl:
        return settle_lines(text.splitlines(), sys.stdout, sys.stderr)
    result = settle_text(text)
    if args.text:
        # The text reader loads only when asked for: settle's JSON path stays as light as it is.
        from controller.journal.render import render_settlement  # noqa: PLC0415

        round_json = round_input(load_round_json(text))  # settle_text accepted it: this cannot refuse
        if args.config:
            # Only with --config: the configuration's checks load (settle --text stays in its import budget,
            # tests/cli/test_cli_import_budget.py); its [property] money, else the amounts alone.
            from controller.config import load_config  # noqa: PLC0415

            fmt = load_config(args.config).property_settings.money
            sys.stdout.write(render_settlement(round_json, result, fmt) + "\n")
        else:
            sys.stdout.write(render_settlement(round_json, result) + "\n")
        return 0
    sys.stdout.write(json.dumps(result, indent=2) + "\n")
    return 0
