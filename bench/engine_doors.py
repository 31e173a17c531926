"""How the engine's parts reach each other (issue 29 item 1), counted from the code: prints one JSON object.

- ``ctx_reaches_into_parts``: by file, each ``ctx.<part>`` (``self.ctx.<part>`` too), a part reached
  through the shared ``TableContext`` rather than given as a door;
- ``ctx_uses``: by file, every use of a ``ctx`` at all (the context's reach);
- ``round_writes_outside_round_py``: by file, each assignment to a field of ``LiveRound``, ``SeatPlay`` or
  ``DealStep`` (or into one of their collections, or a change of one in place: ``.add``, ``.append``, ...)
  outside controller/engine/round.py, on anything but ``self``;
- ``facade_pass_through_properties``: ``TableEngine``'s properties whose body only returns another
  object's attribute (``return self._ctx.bank.dp_seat``);
- ``import_cycles``: the circles among controller/engine's modules, TYPE_CHECKING imports included;
- ``functions_over_80_lines`` and ``modules_over_700_lines`` in controller/engine/.

Usage: python bench/engine_doors.py [--root DIR]   (default: this checkout).
"""

from __future__ import annotations

import argparse
import ast
import json
from pathlib import Path

PARTS = frozenset({"flow", "deal", "bets", "decisions", "bank", "faults", "settings", "progressive"})
MUTATORS = frozenset(
    {"add", "append", "clear", "discard", "extend", "pop", "popitem", "remove", "setdefault", "update"}
)
LONG_FUNCTION_LINES = 80
LONG_MODULE_LINES = 700


def round_fields(round_py: Path) -> frozenset[str]:
    """The fields of the dataclasses in round.py (annotated class attributes)."""
    names: set[str] = set()
    for node in ast.parse(round_py.read_text()).body:
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    names.add(item.target.id)
    return frozenset(names)


def _root(node: ast.expr) -> ast.expr:
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node


def _is_self(node: ast.expr) -> bool:
    root = _root(node)
    return isinstance(root, ast.Name) and root.id == "self"


def _field_attribute(node: ast.expr, fields: frozenset[str]) -> bool:
    """``x.<field>`` or ``x.<field>[...]`` on anything but ``self``."""
    if isinstance(node, ast.Subscript):
        node = node.value
    return isinstance(node, ast.Attribute) and node.attr in fields and not _is_self(node)


def round_writes(tree: ast.AST, fields: frozenset[str]) -> int:
    count = 0
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
            targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
            count += sum(_field_attribute(target, fields) for target in targets)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in MUTATORS and _field_attribute(node.func.value, fields):
                count += 1
            elif (
                node.func.attr in MUTATORS
                and isinstance(node.func.value, ast.Call)
                and isinstance(node.func.value.func, ast.Name)
                and node.func.value.func.id == "_hand_of"
            ):
                count += 1  # a hand reached through a helper and changed in place
    return count


def ctx_counts(tree: ast.AST) -> tuple[int, int]:
    """(reaches into a part through the context, uses of a context at all)."""
    into_parts = uses = 0
    for node in ast.walk(tree):
        is_ctx = (isinstance(node, ast.Name) and node.id == "ctx") or (
            isinstance(node, ast.Attribute) and node.attr == "ctx"
        )
        uses += is_ctx
        if isinstance(node, ast.Attribute) and node.attr in PARTS:
            value = node.value
            if (isinstance(value, ast.Name) and value.id == "ctx") or (
                isinstance(value, ast.Attribute) and value.attr == "ctx"
            ):
                into_parts += 1
    return into_parts, uses


def pass_through_properties(tree: ast.AST) -> list[str]:
    found: list[str] = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.ClassDef) and node.name == "TableEngine"):
            continue
        for item in node.body:
            if not isinstance(item, ast.FunctionDef):
                continue
            if not any(isinstance(d, ast.Name) and d.id == "property" for d in item.decorator_list):
                continue
            body = [
                s for s in item.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))
            ]
            if (
                len(body) == 1
                and isinstance(body[0], ast.Return)
                and isinstance(body[0].value, ast.Attribute)
                and _is_self(body[0].value)
            ):
                found.append(item.name)
    return found


def engine_imports(path: Path, modules: set[str]) -> set[str]:
    """The controller.engine modules ``path`` imports, TYPE_CHECKING blocks and ``from . import x`` too."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module is not None:
            if node.module == "controller.engine":
                found.update(alias.name for alias in node.names if alias.name in modules)
            elif node.module.startswith("controller.engine."):
                found.add(node.module.rsplit(".", 1)[1])
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("controller.engine."):
                    found.add(alias.name.rsplit(".", 1)[1])
    return found & modules


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's, iterative enough here)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component: list[str] = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def figures(root: Path) -> dict[str, object]:
    engine_dir = root / "controller" / "engine"
    paths = sorted(engine_dir.glob("*.py"))
    modules = {path.stem for path in paths} - {"__init__"}
    fields = round_fields(engine_dir / "round.py")
    reaches: dict[str, int] = {}
    uses: dict[str, int] = {}
    writes: dict[str, int] = {}
    long_functions: dict[str, int] = {}
    long_modules: dict[str, int] = {}
    graph: dict[str, set[str]] = {}
    facade: list[str] = []
    for path in paths:
        text = path.read_text()
        tree = ast.parse(text)
        into_parts, ctx_uses = ctx_counts(tree)
        if into_parts:
            reaches[path.name] = into_parts
        if ctx_uses:
            uses[path.name] = ctx_uses
        if path.name != "round.py":
            written = round_writes(tree, fields)
            if written:
                writes[path.name] = written
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno is not None:
                lines = node.end_lineno - node.lineno + 1
                if lines > LONG_FUNCTION_LINES:
                    long_functions[f"{path.name}:{node.name}"] = lines
        lines_in_module = len(text.splitlines())
        if lines_in_module > LONG_MODULE_LINES:
            long_modules[path.name] = lines_in_module
        if path.stem in modules:
            graph[path.stem] = engine_imports(path, modules)
        if path.name == "engine.py":
            facade = pass_through_properties(tree)
    return {
        "ctx_reaches_into_parts": {"total": sum(reaches.values()), "by_file": reaches},
        "ctx_uses": {"total": sum(uses.values()), "by_file": uses},
        "round_writes_outside_round_py": {"total": sum(writes.values()), "by_file": writes},
        "facade_pass_through_properties": {"count": len(facade), "names": facade},
        "import_cycles": cycles(graph),
        "functions_over_80_lines": long_functions,
        "modules_over_700_lines": long_modules,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[1])
    args = parser.parse_args()
    print(json.dumps(figures(args.root), indent=2, sort_keys=True))


if __name__ == "__main__":
    main()
