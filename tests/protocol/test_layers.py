"""firmware_protocol imports nothing of ours above it (controller, drivers, sim_devices), and only its
I/O edge (runner) imports asyncio: the link's parts are sans-I/O (docs/protocol.md §16)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "firmware_protocol"
OURS_ABOVE = ("controller", "drivers", "sim_devices", "panel", "tests", "bench")
IO_MODULES = ("asyncio", "socket", "serial", "usb", "threading", "time")


def imported_roots(path: Path) -> set[str]:
    roots: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module is not None and node.level == 0:
            roots.add(node.module.split(".")[0])
    return roots


def test_the_package_is_where_this_test_looks() -> None:
    names = {path.stem for path in PACKAGE.glob("*.py")}
    assert {"link", "handshake", "session", "send_window", "receive_window", "resume"} <= names


def test_firmware_protocol_imports_nothing_of_ours_above_it() -> None:
    for path in sorted(PACKAGE.glob("*.py")):
        assert not imported_roots(path) & set(OURS_ABOVE), path.name


def test_only_the_runner_does_io() -> None:
    for path in sorted(PACKAGE.glob("*.py")):
        if path.stem != "runner":
            assert not imported_roots(path) & set(IO_MODULES), path.name
