"""The shape of the production code (issue 29 "Must show"): the largest class, the functions over 80
lines, the modules over 700 lines, and the `duplicates` pairs wholly in production code.

Production code: the packages the product ships (controller, drivers, firmware_protocol, sim_devices,
table_names); "without the harness" leaves out the simulation (controller/simulation/, sim_devices/)
and, in an older tree, the floor's harness where it stood (controller/floor/servers.py, embedded.py,
demo.py, site.py, cluster.py). Lines are a definition's own, from its first line (decorators included)
to its last. The duplicates figure comes from the `duplicates` command on a copy of those packages
alone, so every pair it counts is wholly in them (null where the command is not installed).

Usage: python bench/structure_figures.py [--root DIR]   (default: this checkout). Prints one JSON object.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

PACKAGES = ("controller", "drivers", "firmware_protocol", "sim_devices", "table_names")
HARNESS = (
    "controller/simulation/",
    "sim_devices/",
    "controller/floor/servers.py",
    "controller/floor/embedded.py",
    "controller/floor/demo.py",
    "controller/floor/site.py",
    "controller/floor/cluster.py",
)
LONG_FUNCTION_LINES = 80
LONG_MODULE_LINES = 700
DUPLICATES_TIMEOUT_S = 600


def span_lines(node: ast.AST) -> int:
    decorators: list[ast.expr] = getattr(node, "decorator_list", [])
    first = min([int(node.lineno), *(d.lineno for d in decorators)])  # type: ignore[attr-defined]
    last = int(node.end_lineno)  # type: ignore[attr-defined]
    return last - first + 1


def figures(root: Path, files: list[Path]) -> dict[str, Any]:
    largest: tuple[int, str] = (0, "")
    long_functions: list[tuple[int, str]] = []
    long_modules: list[tuple[int, str]] = []
    for path in files:
        text = path.read_text(encoding="utf-8")
        name = str(path.relative_to(root))
        lines = text.count("\n")
        if lines > LONG_MODULE_LINES:
            long_modules.append((lines, name))
        for node in ast.walk(ast.parse(text, filename=name)):
            if isinstance(node, ast.ClassDef):
                largest = max(largest, (span_lines(node), f"{name}:{node.name}"))
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                size = span_lines(node)
                if size > LONG_FUNCTION_LINES:
                    long_functions.append((size, f"{name}:{node.lineno} {node.name}"))
    return {
        "modules": len(files),
        "largest_class": {"lines": largest[0], "where": largest[1]},
        "functions_over_80_lines": len(long_functions),
        "functions_over_80": [f"{where} ({size})" for size, where in sorted(long_functions, reverse=True)],
        "modules_over_700_lines": len(long_modules),
        "modules_over_700": [f"{where} ({size})" for size, where in sorted(long_modules, reverse=True)],
    }


def duplicate_pairs(root: Path, *, harness: bool) -> dict[str, int] | None:
    """The pair counts `duplicates` reports for a copy of the production packages alone."""
    command = shutil.which("duplicates")
    if command is None:
        return None
    with tempfile.TemporaryDirectory() as scratch:
        copy = Path(scratch)
        for package in PACKAGES:
            shutil.copytree(root / package, copy / package, ignore=shutil.ignore_patterns("__pycache__"))
        if not harness:
            for part in HARNESS:
                target = copy / part
                if target.is_dir():
                    shutil.rmtree(target)
                elif target.exists():
                    target.unlink()
        done = subprocess.run(
            [command, "--repo", str(copy), "--most", "1", "--seconds", "300"],
            capture_output=True,
            text=True,
            timeout=DUPLICATES_TIMEOUT_S,
            check=False,
        )
    head = done.stdout.splitlines()[0] if done.stdout else ""
    match = re.match(
        r"(\d+) pairs of places .*?\((\d+) by shape alone, (\d+) of those marked boilerplate\)", head
    )
    if match is None:
        return {"pairs": 0} if head.startswith("no duplicates") else None
    pairs, _shape, boilerplate = (int(group) for group in match.groups())
    return {"pairs": pairs, "pairs_not_boilerplate": pairs - boilerplate}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[1])
    args = parser.parse_args()
    root: Path = args.root.resolve()
    files = sorted(path for package in PACKAGES for path in (root / package).rglob("*.py"))
    product = [path for path in files if not str(path.relative_to(root)).startswith(HARNESS)]
    print(
        json.dumps(
            {
                "root": str(root),
                "production": figures(root, files),
                "production_without_the_harness": figures(root, product),
                "duplicates_production": duplicate_pairs(root, harness=True),
                "duplicates_production_without_the_harness": duplicate_pairs(root, harness=False),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
