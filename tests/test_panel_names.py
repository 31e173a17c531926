"""The two panels keep their names in README.md and docs/: the table panel (one table, docs/panel.md,
served by the daemon or `flushtable panel`) and the floor panel (the casino floor, docs/floor.md).

Older text called the table's panel "the floor panel"; a reader then looks for it in docs/floor.md.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# What only the table panel is: its document, its port, its commands.
TABLE_PANEL_MARKS = re.compile(
    r"docs/panel\.md\)|127\.0\.0\.1:8080|`flushtable panel |`flushtable user |docs/img/panel\.png"
)


def _product_texts() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def test_the_table_panel_s_document_is_titled_the_table_panel() -> None:
    first_line = (ROOT / "docs" / "panel.md").read_text(encoding="utf-8").splitlines()[0]
    assert first_line == "# The table panel"


def test_readme_s_section_on_the_table_s_panel_is_titled_the_table_panel() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n## ")
    titles = {part.splitlines()[0] for part in section[1:]}
    assert "The table panel" in titles
    # The one section showing the table's screenshot is that one.
    shot = next(part for part in section if "docs/img/panel.png" in part)
    assert shot.splitlines()[0] == "The table panel"


def test_no_line_about_the_table_s_panel_calls_it_the_floor_panel() -> None:
    misnamed = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()[:100]}"
        for path in _product_texts()
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if TABLE_PANEL_MARKS.search(line) and re.search(r"floor panel", line, re.IGNORECASE)
    ]
    assert misnamed == []
