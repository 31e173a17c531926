"""Start-up time of each `flushtable` command beside a bare interpreter's (`python -c pass`).

Each command is started N times (a small N: this is a start-up figure, not a soak) in a fresh
interpreter, with the same interpreter and environment as the bare run; the median wall time of each
is printed with its ratio to the bare median, and the median CPU (user + system) a start costs with
its ratio to the bare start's (what a loaded machine changes least). Targets (issue 28): `settle`,
`--version`, `recall` and `config` each at most 3x a bare interpreter. A journal for `recall` and
`journal verify` is made first by `flushtable run` (not timed). Each checkout's packages are
byte-compiled first (as an installed product's are), so no start pays the compiler. Prints one JSON
object.

Usage: python bench/bench_cli.py [--runs N] [--root DIR] [--before DIR]
       --root: the checkout whose `controller` is timed (default: this one).
       --before: a second checkout (an export of an older commit) timed in the same run, its starts
       interleaved with the root's, so "before" and "after" meet the same load on a shared machine.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
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


def _time_s(argv: list[str], env: dict[str, str], stdin: str, cwd: Path) -> tuple[float, float] | str:
    """Wall seconds and CPU seconds (user + system) of one start, or the command's error (an older
    checkout may lack a command). The starts run one at a time, so the children's CPU before and after
    differ by this one's."""
    cpu_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started_s = time.perf_counter()
    done = subprocess.run(
        argv, input=stdin, capture_output=True, text=True, env=env, cwd=cwd, timeout=120, check=False
    )
    elapsed_s = time.perf_counter() - started_s
    cpu_after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_s = (cpu_after.ru_utime - cpu_before.ru_utime) + (cpu_after.ru_stime - cpu_before.ru_stime)
    if done.returncode not in (0, 1):  # 1: recall/verify verdicts are not start-up failures
        return f"exit {done.returncode}: {done.stderr.strip().splitlines()[-1][:200]}"
    return elapsed_s, cpu_s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="starts per command (median taken)")
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent)
    parser.add_argument("--before", type=Path, default=None, help="a second checkout timed side by side")
    args = parser.parse_args()
    roots = {"root": args.root.resolve()}
    if args.before is not None:
        roots["before"] = args.before.resolve()
    python = sys.executable
    round_text = json.dumps(_ROUND)
    for root in roots.values():
        _compile(python, root)
    with tempfile.TemporaryDirectory() as work_dir:
        work = Path(work_dir)
        journal = work / "journal.sqlite"
        run_args = ["run", "--rounds", "3", "--seed", "1", "--no-panel", "--time-scale", "50"]
        made = subprocess.run(
            [python, "-m", "controller.cli", *run_args, "--log-level", "error", "--journal", str(journal)],
            capture_output=True,
            text=True,
            env=_env(roots["root"]),
            cwd=work,
            timeout=300,
            check=False,
        )
        if made.returncode != 0:
            raise SystemExit(f"could not make a journal to recall: {made.stderr.strip()[-500:]}")
        # (label, root or None for the bare interpreter) -> (argv, stdin)
        commands: dict[tuple[str, str], tuple[list[str], str, Path]] = {
            ("bare", "python -c pass"): ([python, "-c", "pass"], "", roots["root"])
        }
        for label, root in roots.items():
            cli = [python, "-m", "controller.cli"]
            for name, (words, stdin) in {
                "--version": (["--version"], ""),
                "--help": (["--help"], ""),
                "settle": (["settle"], round_text),
                "settle --text": (["settle", "--text"], round_text),
                "config": (["config"], ""),
                "recall": (["recall", "--journal", str(journal)], ""),
                "journal verify": (["journal", "verify", "--journal", str(journal)], ""),
                "journal show": (["journal", "show", "--journal", str(journal)], ""),
            }.items():
                commands[(label, name)] = ([*cli, *words], stdin, root)
        times_s: dict[tuple[str, str], list[float]] = {key: [] for key in commands}
        cpus_s: dict[tuple[str, str], list[float]] = {key: [] for key in commands}
        failed: dict[tuple[str, str], str] = {}
        # Interleaved rounds, so a busy moment on the machine falls on every command and root alike.
        for _ in range(args.runs):
            for key, (argv, stdin, root) in commands.items():
                if key in failed:
                    continue
                sample = _time_s(argv, _env(root), stdin, work)
                if isinstance(sample, str):
                    failed[key] = sample
                else:
                    times_s[key].append(sample[0])
                    cpus_s[key].append(sample[1])
    bare_s = statistics.median(times_s[("bare", "python -c pass")])
    # The fastest start too: under a shared machine's load the median moves with the neighbours' work,
    # the fastest of N starts much less (both ratios are printed; the target is the median's).
    bare_min_s = min(times_s[("bare", "python -c pass")])
    # And the CPU a start costs: what the machine's load changes least (a busy neighbour delays a
    # start's wall time, not the work it does).
    bare_cpu_s = statistics.median(cpus_s[("bare", "python -c pass")])
    figures: dict[str, dict[str, object]] = {label: {} for label in roots}
    for (label, name), samples in times_s.items():
        if label == "bare":
            continue
        if (label, name) in failed:
            figures[label][name] = {"error": failed[(label, name)]}
            continue
        figures[label][name] = {
            "median_ms": round(statistics.median(samples) * 1000, 1),
            "min_ms": round(min(samples) * 1000, 1),
            "ratio_to_bare": round(statistics.median(samples) / bare_s, 2),
            "min_ratio_to_bare_min": round(min(samples) / bare_min_s, 2),
            "cpu_median_ms": round(statistics.median(cpus_s[(label, name)]) * 1000, 1),
            "cpu_ratio_to_bare": round(statistics.median(cpus_s[(label, name)]) / bare_cpu_s, 2),
        }
    result = {
        "roots": {label: str(root) for label, root in roots.items()},
        "python": sys.version.split()[0],
        "runs": args.runs,
        "load_average_1m": round(os.getloadavg()[0], 2),
        "bare_interpreter_ms": round(bare_s * 1000, 1),
        "bare_interpreter_min_ms": round(bare_min_s * 1000, 1),
        "bare_interpreter_cpu_ms": round(bare_cpu_s * 1000, 1),
        "commands": figures,
        "targets": {
            "settle": "at most 3x",
            "--version": "at most 3x",
            "recall": "at most 3x",
            "config": "at most 3x",
        },
    }
    print(json.dumps(result, indent=2))


def _compile(python: str, root: Path) -> None:
    """Write each package's bytecode first, as `pip install` does for an installed product: with
    PYTHONDONTWRITEBYTECODE set (or a fresh export for --before) every start would otherwise compile
    each module it imports from source, and the figure would be the compiler's, not the start's."""
    packages = [str(path.parent) for path in sorted(root.glob("*/__init__.py"))]
    subprocess.run(
        [python, "-m", "compileall", "-q", *packages],
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": ""},
        capture_output=True,
        timeout=300,
        check=True,
    )


def _env(root: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(root), "NOTIFY_SOCKET": ""}


if __name__ == "__main__":
    main()
