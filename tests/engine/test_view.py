"""The outside reads the engine through one door, ``TableEngine.view()`` (docs/engine.md "What the
outside reads"): no property that only forwards to a part, no public method production never calls, and
a view is a reading taken once (it does not change under its reader)."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

from controller.engine import TableConfig, TableEngine
from tests.engine.table import Table, stack
from tests.engine.test_rounds import HCF_DEALER, HCF_SEAT1, HCF_SEAT3

ROOT = Path(__file__).resolve().parents[2]


def test_the_engine_has_no_pass_through_property() -> None:
    properties = sorted(name for name, value in vars(TableEngine).items() if isinstance(value, property))
    assert properties == [], f"TableEngine forwards through properties: {properties}"


def production_calls() -> set[str]:
    """Every attribute called somewhere in the product outside the engine's own package."""
    engine_dir = ROOT / "controller" / "engine"
    called: set[str] = set()
    for path in [*(ROOT / "controller").rglob("*.py"), *(ROOT / "drivers").rglob("*.py")]:
        if path.is_relative_to(engine_dir):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                called.add(node.func.attr)
    return called


def test_every_public_method_of_the_engine_is_called_in_production() -> None:
    public = {
        name
        for name, value in vars(TableEngine).items()
        if not name.startswith("_") and inspect.isfunction(value)
    }
    assert "handle" in public  # the walk found the engine's one entry point (not vacuous)
    unused = sorted(public - production_calls())
    assert unused == [], f"TableEngine's methods only tests call: {unused}"


def test_a_view_is_one_reading_that_does_not_change_under_its_reader() -> None:
    table = Table(TableConfig(), stack(HCF_SEAT1, HCF_SEAT3, HCF_DEALER))
    table.start()
    before = table.engine.view()
    table.bet(1, "ante", 500)
    after = table.engine.view()
    assert before.spots.get((1, 0), 0) == 0  # taken before the bet: a copy, not the bets' own dict
    assert after.spots[(1, 0)] == 500
    assert before.state == after.state == "betting"
