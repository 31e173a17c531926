"""Every command, every path it takes, every bad file: one line on standard error, exit 2 (issue 30 item 4).

The commands are enumerated from the CLI's own parser (controller.cli.build_parser), down to the actions
of `journal`, `user`, `floor`..., so a command or a path option added later is covered without editing
this file. A path option is one typed ``Path`` or shown as PATH/FILE/DIR/DEST, or named like one
(``--config``, ``--journal``, ``*_file``, ``*_dir``...). Each is given, in turn:

- a path through a regular file (``plain.txt/x``), a directory, ``/dev/zero``, a FIFO, a path under
  /proc where nothing can be created;
- for a file that is read: a TOML file nested 3,000 deep, and a 2 MiB file of text.

Every path option meets /dev/zero and a FIFO (what hung a command or filled memory), and one of the
other bad files in turn (so each kind meets many commands); FLUSHTABLE_BAD_PATHS_FULL=1 gives every
option every bad file (about 350 processes, several minutes on 2 cores; the default is about 170).

Each runs in a real `flushtable` process, bounded by a timeout and an address-space limit (set with
setrlimit before exec), so a command that reads /dev/zero to the end or waits on a FIFO fails its case
instead of hanging or exhausting the machine. The answer must be exactly one line, ``flushtable
COMMAND: ...``, no traceback, exit status 2.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from controller.cli import build_parser

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_S = 30.0  # generous on a loaded machine; a refusal takes well under a second
MEMORY_LIMIT_BYTES = 2 * 1024**3  # /dev/zero read whole would pass this in seconds
WORKERS = 3
FULL = os.environ.get("FLUSHTABLE_BAD_PATHS_FULL") == "1"
ALWAYS = ("/dev/zero", "a FIFO")  # the kinds every path option meets

PATH_METAVARS = {"PATH", "FILE", "F", "DEST", "DIR"}
PATH_DESTS = {"config", "journal", "dir", "output", "file", "destination", "scenario", "records"}
# Paths a command writes (made if missing): a regular file there is no fault, so no text file is tried.
# `run --log-file` appends; `release manifest --out` writes its manifest (given a file, it overwrites it).
WRITTEN_DESTS = {"output", "out", "destination", "run_dir", "cache_dir", "dir", "log_file"}
# Values for required arguments that are not paths, by their dest: a new required argument without one
# fails test_every_required_argument_has_a_value, which says which to add.
FILLERS = {
    "name": "bob",
    "table": "T001",
    "reason": "testing",
    "by": "tester",
    "game": "high-card-flush",
    "dsn": "postgresql://flushtable@127.0.0.1:1/flushtable",
    "user": "bob",  # flushtable change --user
    "kind": "limits",  # flushtable change propose KIND
    "change_id": "CT1-0001",  # flushtable change approve|reject CHANGE_ID
    "public_key": "00" * 32,
    "seed": "00" * 16,
    "day": "2026-12-01",
}
# Arguments that keep a command short if a bad path were taken (one round, no panel on a fixed port, no
# serving for ever): a command that took a bad path would then exit 0 and fail its case, not hang.
EXTRA = {
    ("run",): ["--no-panel", "--rounds", "1", "--time-scale", "50"],
    ("panel",): ["--panel", "127.0.0.1:0"],
    ("sim",): ["--duration", "0"],
    ("floor", "demo"): ["--tables", "1", "--rounds", "1", "--port", "0"],
}
PASSWORD_ON_STDIN = "a long enough password 123\n"  # `user add` would save it if the path were taken
DEVICE_KEY_HEX = "5a" * 31 + "a5"


@dataclass(frozen=True)
class Level:
    word: str
    parser: argparse.ArgumentParser


@dataclass(frozen=True)
class Leaf:
    levels: tuple[Level, ...]

    @property
    def words(self) -> tuple[str, ...]:
        return tuple(level.word for level in self.levels)

    @property
    def name(self) -> str:
        return " ".join(self.words)


def _own_actions(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [
        action
        for action in parser._actions
        if not isinstance(action, argparse._HelpAction | argparse._SubParsersAction | argparse._VersionAction)
    ]


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def leaves() -> list[Leaf]:
    """Every command and action the parser knows, as the chain of parsers that leads to it."""
    found: list[Leaf] = []
    stack: list[tuple[Level, ...]] = [
        (Level(name, sub),) for name, sub in _subcommands(build_parser()).items()
    ]
    while stack:  # bounded: the parser tree is finite
        chain = stack.pop()
        children = _subcommands(chain[-1].parser)
        if not children:
            found.append(Leaf(chain))
        stack.extend((*chain, Level(name, sub)) for name, sub in children.items())
    return sorted(found, key=lambda leaf: leaf.words)


def takes_path(action: argparse.Action) -> bool:
    return (
        action.type is Path
        or action.metavar in PATH_METAVARS
        or action.dest in PATH_DESTS
        or action.dest.endswith(("_file", "_dir"))
    )


def path_actions(leaf: Leaf) -> list[tuple[int, argparse.Action]]:
    return [
        (index, action)
        for index, level in enumerate(leaf.levels)
        for action in _own_actions(level.parser)
        if takes_path(action) and action.nargs in (None, "?")
    ]


def _good_path(action: argparse.Action, files: Path) -> str:
    if action.dest == "destination":
        return str(files / "backup.sqlite")
    if action.dest == "key_file":
        return str(files / "device.key")
    return str(files / "password.txt")


def _required_value(action: argparse.Action) -> str:
    if action.choices:
        return str(next(iter(action.choices)))
    return FILLERS[action.dest]


def command_line(leaf: Leaf, bad: argparse.Action, bad_value: str, files: Path) -> list[str]:
    """The words that run ``leaf`` with ``bad`` set to ``bad_value`` and every required argument set."""
    words: list[str] = []
    for level in leaf.levels:
        words.append(level.word)
        positionals: list[str] = []
        for action in _own_actions(level.parser):
            if action is bad:
                value = bad_value
            elif action.option_strings and not action.required:
                continue
            elif takes_path(action):
                value = _good_path(action, files)
            else:
                value = _required_value(action)
            if action.option_strings:
                words.extend([action.option_strings[0], value])
            else:
                positionals.append(value)
        words.extend(positionals)
    words.extend(EXTRA.get(leaf.words, []))
    return words


def _bad_values(action: argparse.Action, files: Path) -> dict[str, str]:
    values = {
        "through a file": str(files / "plain.txt" / "x"),
        "/dev/zero": "/dev/zero",
        "a FIFO": str(files / "fifo"),
        "under /proc": "/proc/flushtable-test/x",
    }
    if action.dest not in ("run_dir", "cache_dir", "dir"):
        values["a directory"] = str(files)
    if action.dest not in WRITTEN_DESTS:
        values["TOML nested 3,000 deep"] = str(files / "deep.toml")
        values["2 MiB of text"] = str(files / "big.txt")
    return values


def _limits() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT_BYTES, MEMORY_LIMIT_BYTES))


def flushtable(words: list[str], cwd: Path) -> tuple[int | None, str]:
    """(exit status, standard error); status None when it did not end within TIMEOUT_S."""
    try:
        done = subprocess.run(
            [sys.executable, "-m", "controller.cli", *words],
            cwd=cwd,
            input=PASSWORD_ON_STDIN,
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
            check=False,
            env={**os.environ, "PYTHONPATH": str(ROOT), "NOTIFY_SOCKET": "", "FLUSHTABLE_USERS_FILE": ""},
            preexec_fn=_limits,  # only setrlimit, before exec
        )
    except subprocess.TimeoutExpired as expired:
        stderr = expired.stderr.decode(errors="replace") if isinstance(expired.stderr, bytes) else ""
        return None, stderr
    return done.returncode, done.stderr


def problem(status: int | None, stderr: str, leaf: Leaf) -> str | None:
    """Why this answer is not one line and exit 2, or None."""
    lines = stderr.strip().splitlines()
    if status is None:
        return f"did not end within {TIMEOUT_S:g} s"
    if "Traceback" in stderr:
        return f"a traceback ({len(lines)} lines): {lines[-1] if lines else ''}"
    if status != 2:
        return f"exit {status}, not 2: {stderr.strip()[-300:]!r}"
    if len(lines) != 1:
        return f"{len(lines)} lines on stderr, not 1: {stderr.strip()[-300:]!r}"
    if not lines[0].startswith(f"flushtable {leaf.words[0]}: "):
        return f"not a flushtable line: {lines[0]!r}"
    return None


@pytest.fixture
def files(tmp_path: Path) -> Path:
    (tmp_path / "plain.txt").write_text("plain\n")
    (tmp_path / "password.txt").write_text("a password\n")
    (tmp_path / "device.key").write_text(DEVICE_KEY_HEX + "\n")
    (tmp_path / "deep.toml").write_text("a = " + "[" * 3000 + "]" * 3000 + "\n")
    (tmp_path / "big.txt").write_text(("# " + "x" * 1022 + "\n") * 2048)
    os.mkfifo(tmp_path / "fifo")
    return tmp_path


def test_the_commands_are_found_from_the_parser() -> None:
    names = {leaf.name for leaf in leaves()}
    # A few known ones, so that a broken walk cannot pass by finding nothing.
    assert {"run", "config", "journal verify", "user add", "floor demo", "settle"} <= names
    with_paths = [leaf for leaf in leaves() if path_actions(leaf)]
    assert len(with_paths) >= 25


def test_every_required_argument_has_a_value() -> None:
    for leaf in leaves():
        for level in leaf.levels:
            for action in _own_actions(level.parser):
                needed = action.required or not action.option_strings
                if needed and not takes_path(action) and not action.choices:
                    assert action.dest in FILLERS, f"{leaf.name}: add a value for {action.dest} to FILLERS"


def test_every_command_refuses_every_bad_path_in_one_line(files: Path) -> None:
    cases: list[tuple[str, Leaf, list[str]]] = []
    turn = 0
    for leaf in leaves():
        for _, action in path_actions(leaf):
            option = action.option_strings[0] if action.option_strings else action.dest.upper()
            values = _bad_values(action, files)
            others = [kind for kind in values if kind not in ALWAYS]
            chosen = list(values) if FULL else [*ALWAYS, others[turn % len(others)]]
            turn += 1
            for kind in chosen:
                words = command_line(leaf, action, values[kind], files)
                cases.append((f"{leaf.name} {option} {kind}", leaf, words))
    cwd = files / "cwd"
    cwd.mkdir()

    def one(case: tuple[str, Leaf, list[str]]) -> str | None:
        label, leaf, words = case
        status, stderr = flushtable(words, cwd)
        why = problem(status, stderr, leaf)
        return None if why is None else f"{label}: {why}\n    flushtable {' '.join(words)}"

    with ThreadPoolExecutor(WORKERS) as pool:
        failures = [answer for answer in pool.map(one, cases) if answer is not None]
    assert not failures, f"{len(failures)} of {len(cases)} cases:\n" + "\n".join(failures)
