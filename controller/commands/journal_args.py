"""The journal's location for every command that reads or writes it: --journal, else --config's
journal.path, else the embedded default's (var/journal.sqlite)."""

from __future__ import annotations

import argparse
from pathlib import Path

from controller.files import check_no_special_file
from controller.locale import DEFAULT_PROPERTY, PropertySettings


def add_journal_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--journal", metavar="PATH", help="the journal file (default: the configuration's)")
    parser.add_argument(
        "--config", metavar="FILE", help="the table configuration (default: the embedded one)"
    )


def journal_path(args: argparse.Namespace) -> Path:
    """The journal to read. A FIFO, a device or a directory is refused in one line before SQLite is
    given it (SQLite would wait on a FIFO: issue 30 item 4); a missing file or one that is no journal
    is the journal's own to refuse, in its words (docs/journal.md)."""
    if args.journal:
        path = Path(args.journal)
    else:
        # Only here: a command given --journal reads no configuration, so it loads none of its checks
        # (pydantic, the configuration's models: issue 28, a command line that answers at once).
        from controller.config import load_config  # noqa: PLC0415

        path = load_config(args.config).journal_path
    check_no_special_file(path, "journal")
    return path


def property_of(args: argparse.Namespace) -> PropertySettings:
    """The property's time and money (docs/configuration.md "[property]"): --config's, else the defaults
    (UTC, 06:00, the amounts alone). Read only when --config is given, as ``journal_path``."""
    if not getattr(args, "config", None):
        return DEFAULT_PROPERTY
    from controller.config import load_config  # noqa: PLC0415

    return load_config(args.config).property_settings
