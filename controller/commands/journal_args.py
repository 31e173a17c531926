"""The journal's location for every command that reads or writes it: --journal, else --config's
journal.path, else the embedded default's (var/journal.sqlite)."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_journal_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--journal", metavar="PATH", help="the journal file (default: the configuration's)")
    parser.add_argument(
        "--config", metavar="FILE", help="the table configuration (default: the embedded one)"
    )


def journal_path(args: argparse.Namespace) -> Path:
    if args.journal:
        return Path(args.journal)
    # Only here: a command given --journal reads no configuration, so it loads none of its checks.
    from controller.config import load_config  # noqa: PLC0415

    return load_config(args.config).journal_path
