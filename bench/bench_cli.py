"""Start-up time of each `flushtable` command beside a bare interpreter's (`python -c pass`).

Each command is started N times (a small N: this is a start-up figure, not a soak) in a fresh
interpreter, with the same interpreter and environment as the bare run; the median wall time of each
is printed with its ratio to the bare median. Targets (issue 17): `--version` under 3x and `settle`
under 6x a bare interpreter. A journal for `recall` and `journal verify` is made first by
`flushtable run` (not timed). Prints one JSON object.

Usage: python bench/bench_cli.py [--runs N] [--root DIR]
       --root: the checkout whose `controller` is timed (default: this one); point it at an export of
       an older commit to measure "before".
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

_ROUND = {
    "game": "high-card-flush",
    "dealer": ["Ts", "7s", "2s", "3d", "5d", "8c", "Jh"],
    "seats": [
        {
            "seat": 1,
            "cards": ["Ah", "Kh", "9h", "4h", "2c", "6c", "Qd"],
            "wagers": {"ante": 500, "raise": 500},
        },
        {
            "seat": 2,
            "cards": ["9d", "6d", "4d", "Kc", "2h", "3h", "6s"],
            "wagers": {"ante": 500},
            "folded": True,
        },
    ],
}


def _time_s(argv: list[str], env: dict[str, str], stdin: str, cwd: Path) -> float | str:
    """Wall seconds of one start, or the command's error (an older checkout may lack a command)."""
    started_s = time.perf_counter()
    done = subprocess.run(
        argv, input=stdin, capture_output=True, text=True, env=env, cwd=cwd, timeout=120, check=False
    )
    elapsed_s = time.perf_counter() - started_s
    if done.returncode not in (0, 1):  # 1: recall/verify verdicts are not start-up failures
        return f"exit {done.returncode}: {done.stderr.strip().splitlines()[-1][:200]}"
    return elapsed_s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="starts per command (median taken)")
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent)
    args = parser.parse_args()
    root = args.root.resolve()
    env = {**os.environ, "PYTHONPATH": str(root), "NOTIFY_SOCKET": ""}
    python = sys.executable
    cli = [python, "-m", "controller.cli"]
    round_text = json.dumps(_ROUND)
    with tempfile.TemporaryDirectory() as work_dir:
        work = Path(work_dir)
        journal = work / "journal.sqlite"
        run_args = [
            "run",
            "--rounds",
            "3",
            "--seed",
            "1",
            "--no-panel",
            "--time-scale",
            "50",
            "--log-level",
            "error",
        ]
        made = subprocess.run(
            [*cli, *run_args, "--journal", str(journal)],
            capture_output=True,
            text=True,
            env=env,
            cwd=work,
            timeout=300,
            check=False,
        )
        if made.returncode != 0:
            raise SystemExit(f"could not make a journal to recall: {made.stderr.strip()[-500:]}")
        commands: dict[str, tuple[list[str], str]] = {
            "python -c pass": ([python, "-c", "pass"], ""),
            "--version": ([*cli, "--version"], ""),
            "--help": ([*cli, "--help"], ""),
            "settle": ([*cli, "settle"], round_text),
            "settle --text": ([*cli, "settle", "--text"], round_text),
            "config": ([*cli, "config"], ""),
            "recall": ([*cli, "recall", "--journal", str(journal)], ""),
            "journal verify": ([*cli, "journal", "verify", "--journal", str(journal)], ""),
            "journal show": ([*cli, "journal", "show", "--journal", str(journal)], ""),
        }
        times_s: dict[str, list[float]] = {name: [] for name in commands}
        failed: dict[str, str] = {}
        # Interleaved rounds, so a busy moment on the machine falls on every command alike.
        for _ in range(args.runs):
            for name, (argv, stdin) in commands.items():
                if name in failed:
                    continue
                sample = _time_s(argv, env, stdin, work)
                if isinstance(sample, str):
                    failed[name] = sample
                else:
                    times_s[name].append(sample)
    bare_s = statistics.median(times_s["python -c pass"])
    figures: dict[str, object] = {}
    for name, samples in times_s.items():
        if name == "python -c pass":
            continue
        if name in failed:
            figures[name] = {"error": failed[name]}
            continue
        figures[name] = {
            "median_ms": round(statistics.median(samples) * 1000, 1),
            "min_ms": round(min(samples) * 1000, 1),
            "ratio_to_bare": round(statistics.median(samples) / bare_s, 2),
        }
    result = {
        "root": str(root),
        "python": sys.version.split()[0],
        "runs": args.runs,
        "bare_interpreter_ms": round(bare_s * 1000, 1),
        "commands": figures,
        "targets": {"--version": "under 3x", "settle": "under 6x"},
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
