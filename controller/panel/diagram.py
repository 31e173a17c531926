"""The round machine's states as the panel draws them: one row per game, the current state lit.

The round engine's own definition draws the full machine (`flushtable diagram`); the panel shows the
path a round walks plus the two states reachable from anywhere, so a supervisor sees at a glance where
the round is. A phase the list does not know is still shown, in words, above the diagram.
"""

from __future__ import annotations

from dataclasses import dataclass

_BASE_PATH = (
    "idle",
    "betting",
    "bets_locked",
    "dealing",
    "decisions",
    "reveal",
    "settling",
    "paying",
    "complete",
)
_CHASE_PATH = (
    "idle",
    "betting",
    "bets_locked",
    "dealing",
    "preflop",
    "flop",
    "river",
    "reveal",
    "settling",
    "paying",
    "complete",
)
OFF_PATH = ("held", "dead")
BOX_W = 104
BOX_H = 44
GAP = 18


@dataclass(frozen=True, slots=True)
class DiagramBox:
    state: str
    label: str
    x: int
    y: int
    lit: bool
    off_path: bool


@dataclass(frozen=True, slots=True)
class Diagram:
    boxes: tuple[DiagramBox, ...]
    arrows: tuple[tuple[int, int, int, int], ...]
    width: int
    height: int
    phase: str
    known: bool


def state_path(game: str) -> tuple[str, ...]:
    return _CHASE_PATH if "chase" in game.lower() else _BASE_PATH


def state_diagram(game: str, phase: str) -> Diagram:
    path = state_path(game)
    per_row = 6
    boxes = []
    arrows = []
    for index, state in enumerate(path):
        row, col = divmod(index, per_row)
        x = GAP + col * (BOX_W + GAP)
        y = GAP + row * (BOX_H + GAP * 2)
        boxes.append(DiagramBox(state, state.replace("_", " "), x, y, state == phase, False))
        if index:
            prev = boxes[index - 1]
            if prev.y == y:
                arrows.append((prev.x + BOX_W, y + BOX_H // 2, x, y + BOX_H // 2))
            else:
                arrows.append((prev.x + BOX_W // 2, prev.y + BOX_H, x + BOX_W // 2, y))
    rows = (len(path) + per_row - 1) // per_row
    y_off = GAP + rows * (BOX_H + GAP * 2)
    for col, state in enumerate(OFF_PATH):
        x = GAP + (per_row - len(OFF_PATH) + col) * (BOX_W + GAP)
        boxes.append(DiagramBox(state, state, x, y_off, state == phase, True))
    width = GAP + per_row * (BOX_W + GAP)
    height = y_off + BOX_H + GAP
    return Diagram(tuple(boxes), tuple(arrows), width, height, phase, phase in path or phase in OFF_PATH)
