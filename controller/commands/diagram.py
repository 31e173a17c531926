"""`flushtable diagram --game G [--format mermaid|svg]`: draw a game's round machine.

The drawing comes from the same definition the engine runs (controller/engine/machine.py). SVG is laid
out by our own code: transitions' GraphMachine needs the graphviz system package for SVG, which a
fresh machine does not have.
"""

from __future__ import annotations

import argparse
import sys

from controller.engine.machine import mermaid, svg
from controller.errors import UserError
from controller.rules.games import GAME_SHORT_NAMES, parse_game_name

NAME = "diagram"
HELP = "draw a game's round state machine (mermaid text or SVG) from the definition that runs"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--game",
        required=True,
        help=f"the game: {', '.join(f'{full} ({short})' for short, full in GAME_SHORT_NAMES.items())}",
    )
    parser.add_argument("--format", choices=("mermaid", "svg"), default="mermaid", help="output format")
    parser.add_argument("--output", "-o", default=None, help="write to this file instead of standard output")


def run(args: argparse.Namespace) -> int:
    game = parse_game_name(args.game)
    text = mermaid(game) if args.format == "mermaid" else svg(game)
    if args.output is None:
        sys.stdout.write(text)
        return 0
    from controller.files import check_writable_file  # noqa: PLC0415 - only when writing a file

    check_writable_file(args.output, "--output")  # a FIFO would wait for a reader; a device is no file
    try:
        with open(args.output, "w", encoding="utf-8") as handle:
            handle.write(text)
    except OSError as error:
        raise UserError(f"--output: cannot write {args.output}: {error.strerror}") from None
    return 0
