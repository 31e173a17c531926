"""The round machine drawn for the panel, from the engine's own definition, the current state lit.

controller.engine.machine.definition(game) is the definition the round machine runs (and
`flushtable diagram` draws); the panel lays its states out along the path a round walks, with the two
states reachable from anywhere (held, dead) beneath, so a supervisor sees at a glance where the round
is. A phase the definition does not know is still shown, in words, under the diagram.
"""

from __future__ import annotations

from dataclasses import dataclass

from controller.engine.machine import DEAD, GAME_NAMES, HELD, HIGH_CARD_FLUSH, definition

OFF_PATH = (HELD, DEAD)
BOX_W = 112
BOX_H = 44
GAP_X = 22
GAP_Y = 30
MAX_PER_ROW = 9


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
    arrows: tuple[str, ...]  # SVG polyline points, "x,y x,y ..."
    width: int
    height: int
    phase: str
    known: bool
    box_w: int = BOX_W
    box_h: int = BOX_H


def state_path(game: str) -> tuple[str, ...]:
    """The states a round walks, in order (held and dead left out), for ``game`` (a config name)."""
    name = game.replace("_", "-").lower()
    states = definition(name if name in GAME_NAMES else HIGH_CARD_FLUSH).states
    return tuple(state for state in states if state not in OFF_PATH)


def state_diagram(game: str, phase: str) -> Diagram:
    path = state_path(game)
    per_row = len(path) if len(path) <= MAX_PER_ROW else (len(path) + 1) // 2
    boxes: list[DiagramBox] = []
    arrows: list[str] = []
    for index, state in enumerate(path):
        row, col = divmod(index, per_row)
        x = GAP_X + col * (BOX_W + GAP_X)
        y = GAP_Y // 2 + row * (BOX_H + GAP_Y)
        boxes.append(DiagramBox(state, state.replace("_", " "), x, y, state == phase, False))
        if index:
            prev = boxes[index - 1]
            if prev.y == y:
                arrows.append(f"{prev.x + BOX_W},{y + BOX_H // 2} {x - 2},{y + BOX_H // 2}")
            else:  # down from the row's last box, back along the gap, down into the next row's first
                mid_y = prev.y + BOX_H + GAP_Y // 2
                arrows.append(
                    f"{prev.x + BOX_W // 2},{prev.y + BOX_H} {prev.x + BOX_W // 2},{mid_y} "
                    f"{x + BOX_W // 2},{mid_y} {x + BOX_W // 2},{y - 2}"
                )
    rows = (len(path) + per_row - 1) // per_row
    y_off = GAP_Y // 2 + rows * (BOX_H + GAP_Y)
    for col, state in enumerate(OFF_PATH):
        x = GAP_X + (per_row - len(OFF_PATH) + col) * (BOX_W + GAP_X)
        boxes.append(DiagramBox(state, state, x, y_off, state == phase, True))
    width = GAP_X + per_row * (BOX_W + GAP_X)
    height = y_off + BOX_H + GAP_Y // 2
    return Diagram(tuple(boxes), tuple(arrows), width, height, phase, phase in path or phase in OFF_PATH)
