"""A child process for the leak test: on each line of standard input (``{"round_id": ...}``) it runs the
journal and recall commands on the journal named by its argument, through ``controller.cli.main`` (the
``flushtable`` script's entry point), and answers one JSON line: each command, its exit status, its
standard output and how to read it.

    python -m tests.privacy.cli_batch JOURNAL
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
from typing import Any

from controller.cli import main as flushtable


def commands(journal: str, round_id: str | None, *, round_only: bool = False) -> list[tuple[list[str], str]]:
    """(arguments, format) of each command: format says how its output reads (capture.Format).
    ``round_only``: only the commands naming ``round_id`` (a caller that has read the whole journal's
    commands once need not run them again for each round)."""
    where = ["--journal", journal]
    listed: list[tuple[list[str], str]] = []
    if not round_only:
        listed += [
            (["journal", "show", *where], "journal_text"),
            (["journal", "show", "--json", *where], "jsonlines"),
            (["journal", "tail", "-n", "100", *where], "journal_text"),
            (["journal", "tail", "-n", "100", "--json", *where], "jsonlines"),
            (["recall", "--last", "50", *where], "text"),
            (["recall", "--last", "50", "--json", *where], "json"),
            (["recall", "--last", "50", "--csv", *where], "text"),
            (["meters", "--csv", *where], "text"),
        ]
    if round_id is not None:
        listed += [
            (["journal", "show", "--round", round_id, *where], "journal_text"),
            (["recall", "--round", round_id, *where], "text"),
            (["recall", "--round", round_id, "--json", *where], "json"),
            (["recall", "--round", round_id, "--csv", *where], "text"),
        ]
    return listed


def run_batch(
    journal: str, round_id: str | None, *, json_only: bool = False, round_only: bool = False
) -> list[dict[str, Any]]:
    results: list[dict[str, Any]] = []
    for arguments, format_ in commands(journal, round_id, round_only=round_only):
        if json_only and "--json" not in arguments:
            continue
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = flushtable(arguments)
        results.append(
            {
                "command": "flushtable " + " ".join(a for a in arguments if a != journal),
                "status": status,
                "stdout": out.getvalue(),
                "stderr": err.getvalue(),
                "format": format_,
            }
        )
    return results


def main() -> int:
    journal = sys.argv[1]
    for line in sys.stdin:
        request = json.loads(line)
        print(json.dumps(run_batch(journal, request.get("round_id"))), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
