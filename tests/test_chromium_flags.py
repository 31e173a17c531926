"""Every Chromium a test or a bench starts has the full flag list: it is started by tests/chromium.py.

A launch written out by hand drifts (tests/floor/test_floor_panel.py once lacked
``--disable-component-update`` and ``--disable-sync``), so none is allowed outside the helper.
"""

from __future__ import annotations

import re
from pathlib import Path

from tests.chromium import CHROMIUM_ARGS

ROOT = Path(__file__).resolve().parents[1]
HELPER = ROOT / "tests" / "chromium.py"
# ``playwright.chromium.launch(`` or ``p.chromium.launch_persistent_context(`` — any direct start.
DIRECT_LAUNCH = re.compile(r"\.chromium\.launch")


def test_the_helper_has_every_flag() -> None:
    assert set(CHROMIUM_ARGS) == {
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
    }


def test_no_test_or_bench_starts_chromium_but_through_the_helper() -> None:
    direct = [
        f"{path.relative_to(ROOT)}:{number}"
        for folder in ("tests", "bench")
        for path in sorted((ROOT / folder).rglob("*.py"))
        if path not in (HELPER, Path(__file__).resolve())
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if DIRECT_LAUNCH.search(line)
    ]
    assert direct == [], f"start Chromium with tests.chromium.launch_chromium: {direct}"
