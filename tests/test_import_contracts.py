"""The layers as import contracts (pyproject.toml [tool.importlinter]; docs/engine.md "Layers"), checked
by import-linter's own command, `lint-imports`, on the source tree: the packages' layers, the
controller's layers, the table's side never importing the floor or psycopg, the floor never importing
the daemon, the uplink's client or the harness, and no import circle between sibling modules.

The second test shows the check can fail: a copy of the tree with one upward import and one circle
added is refused, each broken contract named."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("controller", "drivers", "firmware_protocol", "sim_devices", "table_names")
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    """`lint-imports` on the tree at ``root`` (its packages first on the path, no cache)."""
    assert LINT_IMPORTS.exists(), f"{LINT_IMPORTS} missing: make install-test installs import-linter"
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", "--config", str(root / "pyproject.toml")],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(root)},
    )


def test_the_import_contracts_are_kept() -> None:
    done = lint_imports(REPO)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "0 broken" in done.stdout, done.stdout[-2000:]


def test_an_upward_import_and_a_circle_break_the_contracts(tmp_path: Path) -> None:
    for package in PACKAGES:
        shutil.copytree(REPO / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    # The journal reaching up to the daemon, lazily; the uplink's client reaching the floor; and two
    # rules modules importing each other.
    (tmp_path / "controller" / "journal" / "probe_up.py").write_text(
        "def f() -> object:\n    from controller.daemon import TableDaemon\n\n    return TableDaemon\n"
    )
    (tmp_path / "controller" / "uplink" / "probe_floor.py").write_text("import controller.floor.schema\n")
    (tmp_path / "controller" / "rules" / "probe_a.py").write_text("import controller.rules.probe_b\n")
    (tmp_path / "controller" / "rules" / "probe_b.py").write_text("import controller.rules.probe_a\n")
    done = lint_imports(tmp_path)
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
    report = done.stdout
    assert "controller.journal.probe_up -> controller.daemon" in report
    assert "controller.uplink.probe_floor -> controller.floor.schema" in report
    assert "probe_a" in report
    assert "probe_b" in report
    assert "3 broken" in report, report[-3000:]
