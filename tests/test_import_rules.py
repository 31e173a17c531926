"""Imports point down the chain only (STYLE.md "The shape of the house"), read from the source files
with ast (every import statement, at any depth: a lazy import inside a function counts too):

- table_names (the names the wire and the controller share) imports nothing at all;
- firmware_protocol imports nothing of ours but table_names;
- drivers and sim_devices import only firmware_protocol and table_names (and themselves): neither knows
  the controller, and neither knows the other;
- no production module of controller imports sim_devices or the simulated players: simulation wraps
  the daemon from the harness (controller/simulation/), and only the commands that start a simulation
  may reach it (the named exceptions below).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
OURS = ("table_names", "firmware_protocol", "drivers", "sim_devices", "controller", "tests", "bench")
SIMULATION = ("sim_devices", "controller.simulated_players", "controller.simulation")

# The controller modules that may import the simulation, and why.
SIMULATION_ALLOWED: dict[str, str] = {
    "controller.simulation": "the simulation harness itself",
    "controller.commands.run": "`flushtable run` starts the harness on a table with simulated devices",
    "controller.commands.sim": "`flushtable sim` serves simulated devices",
    "controller.commands.demo": "`flushtable demo` deals rounds with the simulated players",
    "controller.floor.demo": "`flushtable floor demo` plays simulated tables into the floor",
}


def module_name(path: Path, root: Path = REPO) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported(path: Path, root: Path = REPO) -> set[str]:
    """Every module ``path`` imports (absolute names; relative imports resolved)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    name = module_name(path, root)
    package = name.rsplit(".", 1)[0] if path.name != "__init__.py" else name
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            module = node.module
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                module = ".".join([*base, node.module] if node.module else base)
            if module is not None:
                names.add(module)
                # `from controller import simulation` imports the submodule: count it.
                names.update(f"{module}.{alias.name}" for alias in node.names)
    return names


def sources(package: str, root: Path = REPO) -> list[Path]:
    return sorted((root / package).rglob("*.py"))


def ours(name: str) -> str | None:
    top = name.split(".", maxsplit=1)[0]
    return top if top in OURS else None


def within(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == prefix or name.startswith(prefix + ".") for prefix in prefixes)


@pytest.mark.parametrize(
    ("package", "may_import"),
    [
        ("table_names", ("table_names",)),
        ("firmware_protocol", ("firmware_protocol", "table_names")),
        ("drivers", ("drivers", "firmware_protocol", "table_names")),
        ("sim_devices", ("sim_devices", "firmware_protocol", "table_names")),
    ],
)
def test_the_lower_layers_import_only_what_is_below_them(package: str, may_import: tuple[str, ...]) -> None:
    wrong = sorted(
        f"{module_name(path)} imports {name}"
        for path in sources(package)
        for name in imported(path)
        if ours(name) is not None and ours(name) not in may_import
    )
    assert sources(package), f"no sources found for {package}"
    assert wrong == []


def simulation_imports(root: Path) -> list[str]:
    """The controller's modules under ``root`` that import the simulation, outside the exceptions."""
    return sorted(
        f"{module_name(path, root)} imports {name}"
        for path in sources("controller", root)
        if not within(module_name(path, root), tuple(SIMULATION_ALLOWED))
        for name in imported(path, root)
        if within(name, SIMULATION)
    )


def test_no_production_module_of_the_controller_imports_the_simulation() -> None:
    assert simulation_imports(REPO) == []


def test_the_daemon_and_the_engine_know_no_simulation_at_all() -> None:
    """Not even through the exceptions: the daemon (with its parts, controller/daemon_*.py) and the
    engine import nothing that does."""
    daemon = sorted((REPO / "controller").glob("daemon*.py"))
    assert len(daemon) >= 4, daemon  # daemon.py, daemon_journal.py, daemon_devices.py, daemon_watches.py
    for path in [*daemon, *sources("controller/engine")]:
        assert not [name for name in imported(path) if within(name, (*SIMULATION, "controller.commands"))]


def test_the_rule_sees_a_lazy_import_inside_a_function(tmp_path: Path) -> None:
    """The check can fail: an import inside a function body is found like one at the top, and so is a
    relative one; the named exceptions stay exceptions."""
    (tmp_path / "controller" / "commands").mkdir(parents=True)
    (tmp_path / "controller" / "probe.py").write_text(
        "def f():\n    from sim_devices.table import SimTable\n    return SimTable\n"
    )
    (tmp_path / "controller" / "relative.py").write_text("from . import simulated_players\n")
    (tmp_path / "controller" / "commands" / "sim.py").write_text("import sim_devices.runner\n")
    flagged = simulation_imports(tmp_path)
    assert "controller.probe imports sim_devices.table" in flagged
    assert "controller.relative imports controller.simulated_players" in flagged
    assert {line.split()[0] for line in flagged} == {"controller.probe", "controller.relative"}
