"""A scenario file named on the command line (`run --scenario`, `sim --scenario`): read bounded, its TOML
nesting limited, and every step checked against the table's devices before anything starts (issue 30
item 4). The format is sim_devices/scenario.py's (docs/devices.md)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from controller.errors import UserError
from controller.files import MAX_TOML_BYTES, FileRefused, TomlRefused, load_toml, read_bounded_text
from sim_devices.firmware import SimulatedDevice
from sim_devices.scenario import Scenario, ScenarioError, scenario_from_document


def sensor_spots(banking_mode: str, *, progressive: bool = False) -> int:
    """The betting spots of a seat on a simulated sensor array: a designated-player table's has a bank
    spot per seat (spot 7, after the wagers'); a table with the Progressive wager its spot (spot 4)."""
    if banking_mode == "designated-player":
        return 8
    return 5 if progressive else 4


def load_scenario(
    path: Path, device_kinds: Mapping[str, type[SimulatedDevice]], *, seats: int, spots: int
) -> Scenario:
    """The scenario in ``path``, checked whole against the table; UserError ``--scenario: ...``."""
    try:
        text = read_bounded_text(path, limit_bytes=MAX_TOML_BYTES)
        document = load_toml(text)
        return scenario_from_document(
            document, source=str(path), device_kinds=device_kinds, seats=seats, spots=spots
        )
    except FileRefused as refused:
        raise UserError(f"--scenario: {refused}") from None
    except TomlRefused as error:
        raise UserError(f"--scenario: {path}: not TOML: {error}") from None
    except ScenarioError as error:
        raise UserError(f"--scenario: {error}") from None
