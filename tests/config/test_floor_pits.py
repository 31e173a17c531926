"""The floor file's ``[[pits]]`` (controller/floor/config.py ``PitSection``): the floor panel's map laid out
as the pits are. What the panel is given, every refusal in one line naming the file and the key (through
the real CLI, `flushtable floor release` reads the file), and ``write_floor_config`` writing what the
loader reads back. Real files in a temporary directory."""

from __future__ import annotations

from pathlib import Path

import pytest

from controller.cli import main
from controller.floor.config import FloorConfigError, load_floor_config, load_floor_panel_config
from controller.floor.config import write_floor_config as write_config
from controller.floor.tiles import PitLayout
from tests.config.test_floor_section import FLOOR, NO_POSTGRES_DSN

PANEL = '\n[panel]\nreporting_dsn_file = "floor-reporting.dsn"\n'
PITS = """
[[pits]]
name = "Pit A"
rows = [["T1", "T2", "T3"], ["T6", "", "T4"]]

[[pits]]
name = "Poker room"
rows = [["P1"]]
"""


@pytest.fixture
def floor_dir(tmp_path: Path) -> Path:
    (tmp_path / "nats-floor.pw").write_text("s3cret-floor-password\n")
    (tmp_path / "floor-ca.pem").write_text("-----BEGIN CERTIFICATE-----\n")
    (tmp_path / "floor-writer.dsn").write_text(NO_POSTGRES_DSN + "\n")
    (tmp_path / "floor-reporting.dsn").write_text(NO_POSTGRES_DSN + "\n")
    return tmp_path


def test_the_pits_as_the_panel_reads_them(floor_dir: Path) -> None:
    path = floor_dir / "floor.toml"
    path.write_text(FLOOR + PANEL + PITS)
    pits = load_floor_panel_config(path).pits
    assert pits == (
        PitLayout("Pit A", (("T1", "T2", "T3"), ("T6", "", "T4"))),
        PitLayout("Poker room", (("P1",),)),
    )
    assert list(pits[0].places()) == [
        ("T1", 1, 1), ("T2", 1, 2), ("T3", 1, 3), ("T6", 2, 1), ("T4", 2, 3),
    ]  # fmt: skip
    # No [[pits]]: the map is one grid, as before.
    path.write_text(FLOOR + PANEL)
    assert load_floor_panel_config(path).pits == ()


def test_write_floor_config_writes_the_pits_it_is_given(floor_dir: Path) -> None:
    path = floor_dir / "floor.toml"
    path.write_text(FLOOR)
    config = load_floor_config(path)
    pits = (PitLayout('Pit "B"', (("T1", ""), ("", "T2"))),)
    written = write_config(floor_dir / "out", config, reporting_dsn=NO_POSTGRES_DSN, pits=pits)
    assert load_floor_panel_config(written).pits == pits


REFUSED = [
    # (the [[pits]] text, the exact error after "flushtable floor: FILE: ")
    ('[[pits]]\nname = "A"\nrows = [["T1"]]\ncolumns = 3\n',
     "pits[0].columns: unknown key (known: name, rows)"),
    ('[[pits]]\nname = "A"\n', "pits[0].rows: missing (the tables as seen from the pit stand, like "
     '[["T1", "T2"], ["T4", "", "T3"]])'),
    ('[[pits]]\nrows = [["T1"]]\n', "pits[0].name: missing (the pit's name, as the floor calls it)"),
    ('[[pits]]\nname = ""\nrows = [["T1"]]\n', "pits[0].name: must be the pit's name, 1 to 64 characters, "
     "not ''"),
    ('[[pits]]\nname = "A"\nrows = ["T1", "T2"]\n', "pits[0].rows: row 1: must be an array of table ids "
     "like [\"T1\", \"\", \"T2\"], not 'T1'"),
    ('[[pits]]\nname = "A"\nrows = [["T1", "T 2"]]\n', "pits[0].rows: row 1: 'T 2' is not a table id (1 to "
     "32 letters, digits, '_' or '.') nor \"\" for an empty place"),
    ('[[pits]]\nname = "A"\nrows = [["T1", "T2\\n"]]\n', "pits[0].rows: row 1: 'T2\\n' is not a table id (1 "
     "to 32 letters, digits, '_' or '.') nor \"\" for an empty place"),  # a final line break is no letter
    ('[[pits]]\nname = "A"\nrows = [["T1", 2]]\n', "pits[0].rows: row 1: 2 is not a table id (1 to 32 "
     "letters, digits, '_' or '.') nor \"\" for an empty place"),
    ('[[pits]]\nname = "A"\nrows = []\n', "pits[0].rows: must be an array of rows like "
     '[["T1", "T2"], ["T4", "", "T3"]], not []'),
    ('[[pits]]\nname = "A"\nrows = [["T1"]]\n[[pits]]\nname = "A"\nrows = [["T2"]]\n',
     "pits[1].name: pit 'A' is already pits[0]"),
    ('[[pits]]\nname = "A"\nrows = [["T1"]]\n[[pits]]\nname = "B"\nrows = [["T2", "T1"]]\n',
     "pits[1].rows: table T1 (row 1, place 2) is already at pit 'A', row 1, place 1"),
    ('[[pits]]\nname = "A"\nrows = [[' + ", ".join(['"T1"'] + ['""'] * 20) + "]]\n",
     "pits[0].rows: row 1: 21 places: at most 20"),
    ("pits = 3\n", "pits: must be an array, not an integer"),
]  # fmt: skip


@pytest.mark.parametrize(("pits", "expected"), REFUSED)
def test_every_bad_pit_is_refused_in_one_line(
    floor_dir: Path, capsys: pytest.CaptureFixture[str], pits: str, expected: str
) -> None:
    path = floor_dir / "floor.toml"
    # "pits = 3" must come before [floor] (a top-level key); the arrays of tables after it.
    path.write_text(pits + FLOOR if not pits.startswith("[[") else FLOOR + pits)
    code = main(["floor", "release", "T1", "--reason", "test", "--by", "maria", "--config", str(path)])
    out, err = capsys.readouterr()
    assert (code, out, err) == (2, "", f"flushtable floor: {path}: {expected}\n")
    with pytest.raises(FloorConfigError) as refused:
        load_floor_config(path)
    assert str(refused.value) == f"{path}: {expected}"
