"""The product's files name only files in the product.

The team's rule texts and style notes live beside the product, not in it: a dealer, an auditor or a
firmware engineer reading a docstring or a page of docs/ has docs/rules.md (the product's rules), never
the team's files. This test reads every text file of the product and refuses a name of theirs.
"""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PRODUCT_DIRS = (
    "controller",
    "drivers",
    "firmware_protocol",
    "sim_devices",
    "table_names",
    "docs",
    "bench",
    "tests",
)
PRODUCT_FILES = ("README.md", "pyproject.toml", "Makefile", ".ci/run")
TEXT_SUFFIXES = {
    ".py",
    ".md",
    ".toml",
    ".html",
    ".js",
    ".css",
    ".json",
    ".jsonl",
    ".txt",
    ".sh",
    ".cfg",
    ".ini",
}
# Spelled in pieces so that this file does not name them itself.
OUTSIDE_NAMES = ("RULES" + ".md", "STYLE" + ".md", "../" + "shared")


def product_text_files() -> list[Path]:
    files = [ROOT / name for name in PRODUCT_FILES if (ROOT / name).is_file()]
    for directory in PRODUCT_DIRS:
        for path in sorted((ROOT / directory).rglob("*")):
            if path.is_file() and path.suffix in TEXT_SUFFIXES and "__pycache__" not in path.parts:
                files.append(path)
    return files


def test_the_product_has_text_files_to_read() -> None:
    # A test that reads nothing passes for nothing: the walk must find the product.
    names = {path.relative_to(ROOT).as_posix() for path in product_text_files()}
    assert {"README.md", "docs/rules.md", "controller/rules/settle.py"} <= names


@pytest.mark.parametrize("outside", OUTSIDE_NAMES)
def test_no_product_file_names_a_file_outside_the_product(outside: str) -> None:
    offenders = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in product_text_files()
        for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1)
        if outside in line
    ]
    assert not offenders, f"{outside} named in: {', '.join(offenders[:20])}"
