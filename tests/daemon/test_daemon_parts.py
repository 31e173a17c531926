"""The daemon in parts (docs/engine.md "What the outside reads", docs/operations.md): ``TableDaemon``
keeps the queue and the run's lifecycle, under 450 lines; what a commit leads to, the uplink and the
panel's start are modules of their own, each given what it acts on."""

from __future__ import annotations

import ast
from pathlib import Path

CONTROLLER = Path(__file__).resolve().parents[2] / "controller"


def daemon_class_sizes() -> dict[str, int]:
    sizes: dict[str, int] = {}
    for path in sorted(CONTROLLER.glob("daemon*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                assert node.end_lineno is not None
                sizes[f"{path.name}:{node.name}"] = node.end_lineno - node.lineno + 1
    return sizes


def test_the_daemon_class_is_under_450_lines() -> None:
    sizes = daemon_class_sizes()
    assert "daemon.py:TableDaemon" in sizes  # the walk found the daemon (the check is not vacuous)
    assert sizes["daemon.py:TableDaemon"] < 450, f"TableDaemon has {sizes['daemon.py:TableDaemon']} lines"
