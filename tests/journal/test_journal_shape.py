"""The journal package in parts (issue 29; docs/journal.md "The code"): no module of controller/journal/
over 700 lines, no class over 450, no function over 80, counted as bench/structure_figures.py counts them
(a definition from its first decorator to its last line). A part that grows past them is split again,
not allowed to become the next 1,500-line store."""

from __future__ import annotations

import ast
from pathlib import Path

JOURNAL = Path(__file__).resolve().parents[2] / "controller" / "journal"
MODULE_LINES_MAX = 700
CLASS_LINES_MAX = 450
FUNCTION_LINES_MAX = 80


def span_lines(node: ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    first = min([node.lineno, *(decorator.lineno for decorator in node.decorator_list)])
    return int(node.end_lineno or node.lineno) - first + 1


def oversized() -> list[str]:
    found: list[str] = []
    for path in sorted(JOURNAL.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        name = str(path.relative_to(JOURNAL.parent.parent))
        if text.count("\n") > MODULE_LINES_MAX:
            found.append(f"{name}: {text.count(chr(10))} lines")
        for node in ast.walk(ast.parse(text, filename=name)):
            if isinstance(node, ast.ClassDef) and span_lines(node) > CLASS_LINES_MAX:
                found.append(f"{name}: class {node.name} {span_lines(node)} lines")
            elif (
                isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
                and span_lines(node) > FUNCTION_LINES_MAX
            ):
                found.append(f"{name}:{node.lineno} {node.name} {span_lines(node)} lines")
    return found


def test_no_journal_module_class_or_function_over_its_bound() -> None:
    assert oversized() == []
