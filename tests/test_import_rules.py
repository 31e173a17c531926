"""Imports point down the chain only, read from the source files
with ast (every import statement, at any depth: a lazy import inside a function counts too):

- table_names (the names the wire and the controller share) imports nothing at all;
- firmware_protocol imports nothing of ours but table_names;
- drivers and sim_devices import only firmware_protocol and table_names (and themselves): neither knows
  the controller, and neither knows the other;
- no production module of controller imports sim_devices or the simulated players: simulation wraps
  the daemon from the harness (controller/simulation/), and only the commands that start a simulation
  may reach it (the named exceptions below).

The layers inside the controller (rules < journal < engine < daemon and panel < floor < harness) are
import contracts, run by tests/test_import_contracts.py (docs/engine.md "Layers").
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
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
    "controller.commands.floor": "`flushtable floor demo` starts the floor's harness and simulated tables",
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


# --- the rules' layer, by what a fresh interpreter actually loads ---------------------------------------
# The rules (cards, hands, paytables, games, settle) are the bottom of the controller: pure, no I/O. They
# may load the standard library (but none of its I/O and concurrency) and, of ours, only the controller's
# package, its errors and names, and table_names (issue 28: `flushtable settle` starts in about a bare
# interpreter's time, and the rules do not depend on the wire). The check runs in a fresh interpreter, so it
# sees what the imports really load, through any chain, not only what the source files name.
RULES_LAYER = ("controller.rules", "controller.errors", "controller.names", "table_names")
RULES_STDLIB_REFUSED = ("asyncio", "sqlite3", "socket", "ssl", "selectors", "subprocess", "multiprocessing")

_LOADED = """
import json, sys
before = set(sys.modules)
for name in sys.argv[1:]:
    __import__(name)
print(json.dumps(sorted(set(sys.modules) - before)))
"""


def in_rules_layer(name: str) -> bool:
    if within(name, RULES_STDLIB_REFUSED):
        return False
    return (
        name == "controller"
        or within(name, RULES_LAYER)
        or name.split(".", maxsplit=1)[0] in sys.stdlib_module_names
    )


def rules_layer_leaks(root: Path) -> list[str]:
    """The modules a fresh interpreter loads for every module of ``root``'s controller/rules that lie
    outside the rules' layer."""
    modules = [module_name(path, root) for path in sources("controller/rules", root)]
    env = {**os.environ, "PYTHONPATH": str(root)}
    done = subprocess.run(
        [sys.executable, "-c", _LOADED, *modules],
        capture_output=True,
        text=True,
        env=env,
        cwd=root,
        timeout=120,
        check=True,
    )
    loaded: list[str] = json.loads(done.stdout)
    return [name for name in loaded if not in_rules_layer(name)]


def test_the_rules_load_nothing_outside_their_layer() -> None:
    """Not the protocol, the drivers, the panel, the floor, the journal, pydantic or any other package."""
    assert rules_layer_leaks(REPO) == []


def test_the_rules_layer_check_sees_a_chain_of_imports(tmp_path: Path) -> None:
    """The check can fail: a rules module that reaches pydantic through another module of ours, and one
    that imports the protocol, are both found."""
    for part in ("controller/rules", "table_names"):
        shutil.copytree(REPO / part, tmp_path / part)
    for part in ("controller/__init__.py", "controller/errors.py", "controller/names.py"):
        shutil.copy(REPO / part, tmp_path / part)
    (tmp_path / "controller" / "helper.py").write_text("import pydantic\n")
    (tmp_path / "controller" / "rules" / "probe.py").write_text(
        "import controller.helper\nimport firmware_protocol.framing\n"
    )
    shutil.copytree(REPO / "firmware_protocol", tmp_path / "firmware_protocol")
    leaks = rules_layer_leaks(tmp_path)
    assert "controller.helper" in leaks
    assert "pydantic" in leaks
    assert "firmware_protocol.framing" in leaks
