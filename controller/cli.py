"""`flushtable`: the one command-line entry point. Subcommands live in controller.commands.

Start-up is kept short (issue 17; bench/bench_cli.py measures it): only the chosen subcommand's
module is imported, so `settle` never loads the panel, the daemon, numpy or the par-sheet code, and
`--version` and `--help` load no subcommand at all. The names and one-line helps of the subcommands
are therefore listed here, beside the module that implements each (tests/cli/test_cli_imports.py
checks that they match the modules' NAME and HELP).

Logging (structlog, to standard error) is configured only when the chosen command's imports brought
structlog in: a command that logs imports it at its module's top (as the journal's store does), and a
command that never imports it cannot log to standard output by accident. A command that imports
structlog only inside ``run`` configures logging itself (``run`` does, from its configuration).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

from controller import __version__
from controller.errors import UserError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without loading typing (2.5 ms) on `--version`'s path
if TYPE_CHECKING:
    from typing import Any

# name -> (module, one-line help), in the order `flushtable --help` lists them.
COMMANDS: dict[str, tuple[str, str]] = {
    "run": (
        "controller.commands.run",
        "run the table: devices, round engine, journal and panel (with no config: a simulated table)",
    ),
    "demo": (
        "controller.commands.demo",
        "deal and settle a round of each game with simulated players, and print them",
    ),
    "settle": (
        "controller.commands.settle",
        "settle one round given as JSON (a file, or standard input) and print its settlement as JSON",
    ),
    "protocol": (
        "controller.commands.protocol",
        "decode serial captures of the firmware protocol, encode messages into frames, print test vectors",
    ),
    "config": (
        "controller.commands.config",
        "validate a table configuration (or show the embedded default) and print it",
    ),
    "journal": ("controller.commands.journal", "verify the journal's hash chain, or show its entries"),
    "recall": (
        "controller.commands.recall",
        "recall the last rounds played (cards, hands, every wager's result, faults)",
    ),
    "meters": ("controller.commands.meters", "the table's meters, computed from the journal"),
    "report": (
        "controller.commands.report",
        "the table's gaming-day report (rounds, handle, win, hold, dead hands, voids...), from its journal",
    ),
    "clear": (
        "controller.commands.clear",
        "clear the latched faults that hold the table (journaled with your name and reason)",
    ),
    "sim": (
        "controller.commands.sim",
        "serve simulated table devices (shuffler, bet sensors, dealer display) over pseudo-terminals or TCP",
    ),
    "diagram": (
        "controller.commands.diagram",
        "draw a game's round state machine (mermaid text or SVG) from the definition that runs",
    ),
    "math": (
        "controller.commands.math_report",
        "print a game's exact par sheet: house edge, optimal strategy, side bets (exact, never simulated)",
    ),
    "integrity": (
        "controller.commands.integrity",
        "test recalled rounds' cards and wager returns against the exact mathematics (chi-square)",
    ),
    "user": (
        "controller.commands.user",
        "manage the floor panel's logins (user add NAME --role ROLE; user list)",
    ),
    "change": (
        "controller.commands.change",
        "two-person control of the money settings: propose, approve, reject, list (via the table's panel)",
    ),
    "panel": (
        "controller.commands.panel",
        "serve the floor panel over a journal file, read-only (the daemon serves its own with run --panel)",
    ),
    "uplink": ("controller.commands.uplink", "the table's journal streamed to the floor: status, run"),
    "release": (
        "controller.commands.release",
        "the signed release manifest the table verifies at every start (keygen, manifest, sign, dev, verify)",
    ),
    "verify-software": (
        "controller.commands.verify_software",
        "HMAC-SHA256 with a verifier's seed over every file of the product that runs here (--seed HEX)",
    ),
    "floor": (
        "controller.commands.floor",
        "the casino floor: every table's journal in PostgreSQL "
        "(serve, init-db, demo, release, verify, report)",
    ),
}

# Kept for readers of the old interface: the subcommand modules, in --help order.
COMMAND_MODULES: tuple[str, ...] = tuple(module for module, _ in COMMANDS.values())


def terminal_columns() -> int:
    """The terminal's width as ``shutil.get_terminal_size`` reads it (``COLUMNS``, then standard
    output's terminal, then 80), without importing ``shutil``: argparse imports it (with bz2, lzma and
    fnmatch, about 3 ms) to build a formatter, which every ``add_argument`` does, so each command paid
    it at start (issue 28)."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns if columns > 0 else 80


class HelpFormatter(argparse.HelpFormatter):
    """argparse's formatter at the width argparse's own would use (``terminal_columns`` less 2)."""

    def __init__(
        self, prog: str, indent_increment: int = 2, max_help_position: int = 24, width: int | None = None
    ) -> None:
        super().__init__(
            prog,
            indent_increment=indent_increment,
            max_help_position=max_help_position,
            width=terminal_columns() - 2 if width is None else width,
        )


class ArgumentParser(argparse.ArgumentParser):
    """argparse's parser with :class:`HelpFormatter`; its subcommands' parsers are of this class too
    (argparse makes them of the parent's type), so no command's parser loads ``shutil``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)


def chosen_command(argv: Sequence[str]) -> str | None:
    """The subcommand named in ``argv``: its first word that is not an option (the top level's only
    options, -h/--help and --version, take no value). None when there is none."""
    for word in argv:
        if word == "--":
            return None
        if not word.startswith("-"):
            return word
    return None


def top_level_help(argv: Sequence[str]) -> bool:
    """Does ``argv`` ask for the top level's help (``-h`` or ``--help`` before the subcommand's name),
    which lists every command."""
    for word in argv:
        if word in ("-h", "--help"):
            return True
        if word == "--" or not word.startswith("-"):
            return False
    return False


def build_parser(
    load: Sequence[str] | None = None, *, listed: Sequence[str] | None = None
) -> argparse.ArgumentParser:
    """The parser, with the arguments of the subcommands in ``load`` (every one when None).

    The others are listed with their help only: argparse dispatches on the name, so a subcommand that
    is not chosen never needs its arguments (nor its imports). ``listed`` (every command when None)
    limits the subcommands made at all: a start that names its command and asks no top-level help
    never shows the others, and each subparser argparse makes costs a formatter and a few message
    look-ups (gettext stats the locale directories for each), about 3 ms for the twenty (issue 28)."""
    parser = ArgumentParser(
        prog="flushtable",
        description="Table controller for High Card Flush Poker, Top Flush and Chase the Flush.",
    )
    parser.add_argument("--version", action="version", version=f"flushtable {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    wanted = set(COMMANDS) if load is None else set(load)
    shown = set(COMMANDS) if listed is None else set(listed)
    for name, (module_name, help_text) in COMMANDS.items():
        if name not in shown:
            continue
        sub = subparsers.add_parser(name, help=help_text, description=help_text)
        if name in wanted:
            module = importlib.import_module(module_name)
            module.add_arguments(sub)
            sub.set_defaults(handler=module.run)
    return parser


def parser_for(words: Sequence[str]) -> argparse.ArgumentParser:
    """The parser a start with these words needs: the chosen command's arguments, and no other
    command's subparser unless the top level's help (or an unknown command's error) lists them."""
    chosen = chosen_command(words)
    if chosen in COMMANDS and not top_level_help(words):
        return build_parser([chosen], listed=[chosen])
    return build_parser([chosen] if chosen in COMMANDS else [])


def main(argv: Sequence[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    chosen = chosen_command(words)
    verified = None
    if chosen == "run":
        # The software is verified before the run command, the configuration and the engine are even
        # imported, so a changed module never runs (controller/software/, docs/operations.md).
        from controller.software import verify_before_import  # noqa: PLC0415 - only `run` verifies

        try:
            verified = verify_before_import(words[words.index("run") + 1 :])
        except UserError as error:
            print(f"flushtable run: {error}", file=sys.stderr)
            return 2
        except OSError as error:  # --dev-release's directory: one line naming it, never a traceback
            print(f"flushtable run: {os_error_line(error)}", file=sys.stderr)
            return 2
    parser = parser_for(words)
    args = parser.parse_args(words)
    if chosen == "run":
        args.software_verified = verified
    if "structlog" in sys.modules:
        # Logs go to standard error (JSON lines unless a terminal), so command output stays clean.
        from controller.logs import configure_logging  # noqa: PLC0415 - only for commands that log

        configure_logging()
    try:
        status: int = args.handler(args)
    except UserError as error:
        print(f"flushtable {args.command}: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # `flushtable ... | head`: the reader left; nothing to report.
        return 0
    except OSError as error:
        # A path the commands' own checks did not foresee (they check theirs up front): still one line
        # naming the file and why, never a traceback (issue 30 item 4).
        print(f"flushtable {args.command}: {os_error_line(error)}", file=sys.stderr)
        return 2
    return status


def os_error_line(error: OSError) -> str:
    """``PATH: reason`` for an OSError (both paths of a rename), or its text when it names no file."""
    reason = error.strerror or str(error)
    if error.filename is None:
        return reason
    names = str(error.filename)
    if error.filename2 is not None:
        names += f" -> {error.filename2}"
    return f"{names}: {reason}"


if __name__ == "__main__":
    sys.exit(main())
