"""Turns of several checkouts side by side, for the benches that time a part of the product in a child
process per turn (bench_floor_intake.py, bench_floor_batch_rows.py): each ``--code`` directory in turn,
``repeat`` times, alternating, so that the machine's load falls on each alike."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

THIS_CHECKOUT = Path(__file__).resolve().parent.parent


def alternate_codes(
    code_dirs: list[str], repeat: int, turn: Callable[[Path], float]
) -> dict[str, list[float]]:
    """Each checkout's figures, by its resolved path (this checkout when none is given)."""
    codes = [Path(c).resolve() for c in code_dirs] or [THIS_CHECKOUT]
    figures: dict[str, list[float]] = {str(code): [] for code in codes}
    for _ in range(repeat):
        for code in codes:
            figures[str(code)].append(turn(code))
    return figures
