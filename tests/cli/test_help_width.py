"""The CLI's help formatter reads the terminal's width itself (issue 28: argparse's own imports shutil on
every command's start): the width it reads must be the one ``shutil.get_terminal_size`` gives, so that
every command's help wraps as it did."""

from __future__ import annotations

import argparse
import shutil

import pytest

from controller.cli import COMMANDS, build_parser, parser_for, terminal_columns


@pytest.mark.parametrize("columns", [None, "60", "200", "0", "-3", "wide", ""])
def test_the_width_is_the_one_shutil_reads(columns: str | None, monkeypatch: pytest.MonkeyPatch) -> None:
    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    assert terminal_columns() == shutil.get_terminal_size().columns


@pytest.mark.parametrize("columns", ["50", "80", "132"])
def test_the_help_wraps_as_argparse_wraps_it(columns: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", columns)
    ours = build_parser(["settle", "recall"])
    theirs = build_parser(["settle", "recall"])
    theirs.formatter_class = argparse.HelpFormatter
    assert ours.format_help() == theirs.format_help()
    assert "  settle " in ours.format_help()


def test_a_named_command_builds_only_its_own_subparser() -> None:
    """Issue 28: each subparser argparse makes costs a formatter and a few gettext look-ups (each stats
    the locale directories); a start that names its command shows no other, so makes no other. The top
    level's help, asked before the command's name, and an unknown command still list every command."""

    def listed(words: list[str]) -> list[str]:
        parser = parser_for(words)
        subparsers = parser._subparsers
        assert subparsers is not None
        choices = subparsers._group_actions[0].choices
        assert choices is not None
        return list(choices)

    assert listed(["settle"]) == ["settle"]
    assert listed(["recall", "--journal", "j.sqlite"]) == ["recall"]
    assert listed(["settle", "--help"]) == ["settle"]
    assert listed(["-h", "settle"]) == list(COMMANDS)
    assert listed(["--help"]) == list(COMMANDS)
    assert listed(["nosuch"]) == list(COMMANDS)
    assert listed([]) == list(COMMANDS)
