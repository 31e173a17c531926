"""The production code's shape (docs/engine.md "Layers", the code's shape): no module over 700 lines,
no function over 80 lines but the protocol vectors' builders, no class of 450 lines or more.

Counted as bench/structure_figures.py counts (a definition from its first decorator to its last line; a
module by its newlines) over the packages the product ships. The vectors' builders
(firmware_protocol/vectors.py) are one literal table each, written out so a reader sees every vector.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("controller", "drivers", "firmware_protocol", "sim_devices", "table_names")
MAX_MODULE_LINES = 700
MAX_FUNCTION_LINES = 80
MAX_CLASS_LINES = 449  # "under 450"
# The functions allowed over MAX_FUNCTION_LINES, and why: the generated vectors' builders.
LONG_FUNCTIONS_ALLOWED = frozenset(
    {
        "firmware_protocol/vectors.py:build_vectors",
        "firmware_protocol/vectors.py:build_vectors_v2",
    }
)


def _span_lines(node: ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
    last = node.end_lineno if node.end_lineno is not None else node.lineno
    return last - first + 1


def _production_files() -> list[Path]:
    return sorted(path for package in PACKAGES for path in (ROOT / package).rglob("*.py"))


def _over_limits() -> list[str]:
    found: list[str] = []
    for path in _production_files():
        text = path.read_text(encoding="utf-8")
        name = path.relative_to(ROOT).as_posix()
        module_lines = text.count("\n")
        if module_lines > MAX_MODULE_LINES:
            found.append(f"module {name}: {module_lines} lines (at most {MAX_MODULE_LINES})")
        for node in ast.walk(ast.parse(text, filename=name)):
            if isinstance(node, ast.ClassDef) and _span_lines(node) > MAX_CLASS_LINES:
                found.append(
                    f"class {name}:{node.name}: {_span_lines(node)} lines (at most {MAX_CLASS_LINES})"
                )
            elif (
                isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
                and _span_lines(node) > MAX_FUNCTION_LINES
                and f"{name}:{node.name}" not in LONG_FUNCTIONS_ALLOWED
            ):
                found.append(
                    f"function {name}:{node.lineno} {node.name}: {_span_lines(node)} lines "
                    f"(at most {MAX_FUNCTION_LINES})"
                )
    return found


def test_production_code_within_its_size_limits() -> None:
    assert len(_production_files()) > 100  # the packages were found (a wrong ROOT would pass vacuously)
    assert _over_limits() == []
