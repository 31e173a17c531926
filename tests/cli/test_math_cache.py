"""`flushtable math`: progress while it computes, each par sheet kept by what it was computed from, and
game names in their short forms with one refusal format (diagram and math alike)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from controller.cli import main
from controller.errors import UserError
from controller.gamemath.cache import cache_key, cached_par_sheet, key_material
from controller.gamemath.chase import solve_chase
from controller.gamemath.parsheet import build_request
from controller.gamemath.progress import ProgressPrinter
from controller.rules.games import parse_game_name
from controller.rules.paytables import parse_paytable

REFUSAL = "unknown game 'x' (one of: high-card-flush (hcf), top-flush (tf), chase-the-flush (ctf))"


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now_s = 100.0

    def __call__(self) -> float:
        return self.now_s


def test_progress_lines_at_start_every_few_seconds_and_at_the_end() -> None:
    out = io.StringIO()
    clock = Clock()
    printer = ProgressPrinter("math ctf", out, every_s=5.0, clock=clock)
    printer("hole-hand classes", 0, 1000)
    clock.now_s += 1
    printer("hole-hand classes", 100, 1000)  # within 5 s of the last line: quiet
    clock.now_s += 9
    printer("hole-hand classes", 250, 1000)
    clock.now_s += 80
    printer("hole-hand classes", 1000, 1000)
    assert out.getvalue().splitlines() == [
        "math ctf: hole-hand classes: 1,000 steps",
        "math ctf: hole-hand classes 250/1,000 (25%), 10 s so far, about 30 s left",
        "math ctf: hole-hand classes: done in 1 min 30 s",
    ]


def test_chase_reports_each_hole_class_as_it_is_solved() -> None:
    calls: list[tuple[str, int, int]] = []
    solve_chase(workers=1, only=3, progress=lambda stage, done, total: calls.append((stage, done, total)))
    assert calls == [("hole-hand classes", done, 3) for done in range(4)]


def test_a_par_sheet_is_computed_once_then_read_from_the_cache(tmp_path: Path) -> None:
    request = build_request("high-card-flush", "house", {})
    steps: list[int] = []
    first = cached_par_sheet(request, tmp_path, lambda _stage, done, _total: steps.append(done))
    assert not first.from_cache
    assert steps[-1] == 11  # computed: every suit-size pattern reported
    assert first.path is not None
    assert first.path.parent == tmp_path
    steps.clear()
    second = cached_par_sheet(request, tmp_path, lambda _stage, done, _total: steps.append(done))
    assert second.from_cache
    assert steps == []  # nothing computed
    assert second.sheet == first.sheet
    # Another paytable is another sheet, in another file.
    other = build_request("high-card-flush", "house", {"flush": parse_paytable({"4": 2}, field="t")})
    assert cache_key(key_material(other)) != cache_key(key_material(request))
    # A damaged file is computed again and replaced, not believed.
    first.path.write_text(json.dumps({"key": key_material(request), "sheet": "cut"}))
    again = cached_par_sheet(request, tmp_path, lambda _stage, done, _total: steps.append(done))
    assert not again.from_cache
    assert steps[-1] == 11
    assert {**again.sheet, "runtime_s": 0} == {**first.sheet, "runtime_s": 0}


def test_an_unwritable_cache_is_reported_and_the_sheet_still_printed(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    found = cached_par_sheet(build_request("top-flush", "house", {}), blocker / "cache")
    assert found.sheet["game"] == "top-flush"
    assert found.note is not None
    assert found.note.startswith(f"cannot keep the par sheet in {blocker / 'cache'}")


def test_the_command_prints_progress_and_answers_the_second_time_from_the_cache(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["math", "--game", "TF", "--json", "--cache-dir", str(tmp_path)]
    assert main(argv) == 0
    first = capsys.readouterr()
    assert "math top-flush: player hands by suit sizes: 11 steps" in first.err
    assert "math top-flush: kept in the cache" in first.err
    assert main(argv) == 0
    second = capsys.readouterr()
    assert json.loads(second.out) == json.loads(first.out)
    assert second.err.splitlines() == [
        f"math top-flush: from the cache {next(tmp_path.iterdir())}",
    ]
    assert main(["math", "--game", "tf", "--quiet", "--cache-dir", str(tmp_path)]) == 0
    text = capsys.readouterr()
    assert text.err == ""
    assert text.out.rstrip().endswith(
        f"(when first asked; read now from the cache {next(tmp_path.iterdir())})"
    )


@pytest.mark.parametrize(
    ("text", "game"),
    [
        ("hcf", "high-card-flush"),
        ("TF", "top-flush"),
        ("ctf", "chase-the-flush"),
        ("chase-the-flush", "chase-the-flush"),
    ],
)
def test_short_and_full_game_names(text: str, game: str) -> None:
    assert parse_game_name(text) == game


def test_one_refusal_format(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(UserError) as refused:
        parse_game_name("x")
    assert str(refused.value) == f"--game: {REFUSAL}"
    assert main(["math", "--game", "x"]) == 2
    assert capsys.readouterr().err == f"flushtable math: --game: {REFUSAL}\n"
    assert main(["diagram", "--game", "x"]) == 2
    assert capsys.readouterr().err == f"flushtable diagram: --game: {REFUSAL}\n"
    assert main(["diagram", "--game", "ctf"]) == 0
    assert "chase-the-flush round" in capsys.readouterr().out
