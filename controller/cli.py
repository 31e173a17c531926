"""`flushtable`: the one command-line entry point. Subcommands live in controller.commands."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from types import ModuleType

from controller import __version__
from controller.errors import UserError
from controller.logs import configure_logging

# Subcommand modules in the order `flushtable --help` lists them.
COMMAND_MODULES: tuple[str, ...] = (
    "controller.commands.run",
    "controller.commands.demo",
    "controller.commands.settle",
    "controller.commands.protocol",
    "controller.commands.config",
    "controller.commands.journal",
    "controller.commands.recall",
    "controller.commands.meters",
    "controller.commands.clear",
    "controller.commands.sim",
    "controller.commands.diagram",
    "controller.commands.math_report",
    "controller.commands.integrity",
    "controller.commands.user",
    "controller.commands.panel",
    "controller.commands.uplink",
    "controller.commands.floor",
)


def _load_commands() -> list[ModuleType]:
    return [importlib.import_module(name) for name in COMMAND_MODULES]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="flushtable",
        description="Table controller for High Card Flush Poker, Top Flush and Chase the Flush.",
    )
    parser.add_argument("--version", action="version", version=f"flushtable {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module in _load_commands():
        sub = subparsers.add_parser(module.NAME, help=module.HELP, description=module.HELP)
        module.add_arguments(sub)
        sub.set_defaults(handler=module.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    # Logs go to standard error (JSON lines unless a terminal), so command output stays clean.
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
    return status


if __name__ == "__main__":
    sys.exit(main())
