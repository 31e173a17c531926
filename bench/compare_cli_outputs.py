"""The readers' and settle's outputs of two checkouts, byte for byte (issue 28: a change to what a
command imports must change nothing it prints).

Journals are made first with the ``--before`` checkout's code (so the root reads what the older release
wrote): three by `flushtable run` (3 rounds seed 1; 12 rounds seed 7; 8 rounds seed 3 with
examples/progressive-table.toml) and, for each game, a faulted session (12 rounds, fault rate 0.2, as
tests/journal/test_entry_view.py makes them: settled rounds, dead hands, dead rounds, faults). Then each
command runs under both checkouts, the same interpreter, directory and environment, and its standard
output, standard error and exit status are compared. Prints one JSON object: the number of comparisons,
and each that differed (none expected).

Usage: python bench/compare_cli_outputs.py --before DIR [--root DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

_MAKE_SESSION = """
import sys
from pathlib import Path
from controller.journal import Journal
from tests.engine.test_autoplay import CONFIGS, play_session
name, seed, path = sys.argv[1], int(sys.argv[2]), Path(sys.argv[3])
table = play_session(CONFIGS[name], rounds=12, seed=seed, fault_rate=0.2)
with Journal.open(path, table.engine.view().config.table_id, synchronous="OFF") as journal:
    journal.append_many(table.journal())
print("games:", " ".join(sorted(CONFIGS)))
"""

_ROUNDS = [
    {
        "game": "high-card-flush",
        "dealer": ["Ts", "7s", "2s", "3d", "5d", "8c", "Jh"],
        "seats": [
            {
                "seat": 1,
                "cards": ["Ah", "Kh", "9h", "4h", "2c", "6c", "Qd"],
                "wagers": {"ante": 500, "raise": 500, "flush": 100},
            },
            {
                "seat": 2,
                "cards": ["9d", "6d", "4d", "Kc", "2h", "3h", "6s"],
                "wagers": {"ante": 500},
                "folded": True,
            },
        ],
    },
    {"game": "high-card-flush", "dealer": ["Ts"], "seats": []},  # refused: one line, exit 2
    "not json",
]


def _env(root: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(root), "NOTIFY_SOCKET": ""}


def _python(
    root: Path, args: list[str], stdin: str, cwd: Path, *, check: bool
) -> subprocess.CompletedProcess[str]:
    """``python ARGS`` with ``root``'s packages, its output captured (bounded: a hung child fails the run)."""
    return subprocess.run(
        [sys.executable, *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=_env(root),
        cwd=cwd,
        timeout=300,
        check=check,
    )


def _run(root: Path, argv: list[str], stdin: str, cwd: Path) -> tuple[int, str, str]:
    done = _python(root, ["-m", "controller.cli", *argv], stdin, cwd, check=False)
    return done.returncode, done.stdout, done.stderr


def _journals(before: Path, work: Path) -> list[Path]:
    made: list[Path] = []
    progressive = before / "examples" / "progressive-table.toml"
    for label, extra in (
        ("run-3-seed-1", ["--rounds", "3", "--seed", "1"]),
        ("run-12-seed-7", ["--rounds", "12", "--seed", "7"]),
        ("run-8-seed-3-progressive", ["--rounds", "8", "--seed", "3", "--config", str(progressive)]),
    ):
        path = work / f"{label}.sqlite"
        quiet = ["--no-panel", "--time-scale", "50", "--log-level", "error"]
        code, _, err = _run(before, ["run", *extra, *quiet, "--journal", str(path)], "", work)
        if code != 0:
            raise SystemExit(f"could not make {label}: {err.strip()[-400:]}")
        made.append(path)
    probe = ["-c", _MAKE_SESSION, "hcf-house", "1", str(work / "probe.sqlite")]
    games = _python(before, probe, "", before, check=True).stdout
    for name in games.split("games:")[-1].split():
        for seed in (2, 5):
            path = work / f"session-{name}-{seed}.sqlite"
            _python(before, ["-c", _MAKE_SESSION, name, str(seed), str(path)], "", before, check=True)
            made.append(path)
    return made


def _commands(journals: list[Path], root: Path) -> list[tuple[list[str], str]]:
    commands: list[tuple[list[str], str]] = [(["--version"], ""), (["config"], "")]
    commands.append((["config", "--config", str(root / "examples" / "progressive-table.toml")], ""))
    for round_ in _ROUNDS:
        text = round_ if isinstance(round_, str) else json.dumps(round_)
        commands += [(["settle"], text), (["settle", "--text"], text)]
    for journal in journals:
        where = ["--journal", str(journal)]
        for words in (
            ["recall", "--last", "50"],
            ["recall", "--last", "50", "--json"],
            ["recall", "--last", "50", "--jsonl"],
            ["recall", "--last", "50", "--csv"],
            ["recall", "--last", "50", "--private"],
            ["recall", "--last", "50", "--private", "--json"],
            ["recall", "--last", "50", "--seat", "2"],
            ["journal", "show"],
            ["journal", "show", "--private"],
            ["journal", "show", "--json"],
            ["journal", "tail", "-n", "40"],
            ["journal", "verify"],
            ["meters"],
        ):
            commands.append(([*words, *where], ""))
    return commands


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent)
    parser.add_argument("--before", type=Path, required=True)
    args = parser.parse_args()
    root, before = args.root.resolve(), args.before.resolve()
    with tempfile.TemporaryDirectory() as work_dir:
        work = Path(work_dir)
        journals = _journals(before, work)
        commands = _commands(journals, root)
        differed: list[dict[str, object]] = []
        for argv, stdin in commands:
            after_run = _run(root, argv, stdin, work)
            before_run = _run(before, argv, stdin, work)
            if after_run != before_run:
                shown = [word.replace(str(work), "<work>") for word in argv]
                differed.append(
                    {
                        "command": shown,
                        "exit": [before_run[0], after_run[0]],
                        "stdout_same": before_run[1] == after_run[1],
                        "stderr_same": before_run[2] == after_run[2],
                    }
                )
    print(
        json.dumps(
            {
                "root": str(root),
                "before": str(before),
                "journals": [path.name for path in journals],
                "comparisons": len(commands),
                "differed": differed,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
