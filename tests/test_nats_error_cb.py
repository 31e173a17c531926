"""Every NATS client the product makes says its connection errors in one structured line: nats-py's
default ``error_cb`` logs each with its traceback through the logging module, which reached the
operator's console (`flushtable floor demo` whose database died: a TLS close racing the server's last
bytes printed "nats: encountered error" and a traceback). Read from the code: every call that connects
a NATS client (a ``connect`` call given ``servers=``) passes ``error_cb``."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def connects_without_error_cb(paths: list[Path]) -> list[str]:
    missing = []
    for path in paths:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            names = {keyword.arg for keyword in node.keywords}
            if node.func.attr == "connect" and "servers" in names and "error_cb" not in names:
                where = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path.name
                missing.append(f"{where}:{node.lineno}")
    return missing


def test_every_nats_client_of_the_product_logs_its_errors_in_one_line() -> None:
    paths = sorted((ROOT / "controller").rglob("*.py"))
    assert len(paths) > 100
    assert connects_without_error_cb(paths) == []


def test_the_check_sees_a_connect_without_error_cb(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text("async def f(nats):\n    return await nats.connect(servers=['nats://x'])\n")
    assert connects_without_error_cb([probe]) == ["probe.py:2"]
