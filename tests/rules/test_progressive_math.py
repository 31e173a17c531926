"""The Progressive wager's par sheet (controller/gamemath/progressive.py, `flushtable math`), checked
against an independent exact enumeration, and the configuration's [progressive] section.

The reference shares nothing with the engine's tables: it finds each suit's longest run of ranks by
walking the 13 ranks (the ace also below the 2), for every one of the 8,192 rank sets of a suit, and
convolves the four suits over (cards, longest run) to count all C(52,7) hands.
"""

from __future__ import annotations

import json
from collections import Counter
from fractions import Fraction
from math import comb
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.config import DEFAULT_CONFIG_TOML, load_config
from controller.gamemath.progressive import line_counts, progressive_par_sheet, render_progressive
from controller.rules.cards import rank_of, suit_of
from controller.rules.progressive import parse_progressive_settings
from tests.rules.reference import naive_run
from tests.rules.test_settle_cli import run_cli

PARAMETERS = {
    "unit_cents": 100,
    "base_cents": 1_000_000,
    "reset_cents": 1_000_000,
    "increment_percent": 15,
    "hidden_percent": 2,
}
DEFAULT = parse_progressive_settings(PARAMETERS)
HANDS = comb(52, 7)
ACE = 12


def run_of_ranks(mask: int) -> int:
    """The longest run of consecutive ranks in a suit's rank set, the ace playing high or low."""
    present = [bool(mask >> rank & 1) for rank in range(13)]
    ladder = [present[ACE], *present]  # the ace again below the 2
    best = current = 0
    for here in ladder:
        current = current + 1 if here else 0
        best = max(best, current)
    return best


def reference_run_counts() -> dict[int, int]:
    """Hands by their longest straight-flush run over all C(52,7), by enumeration and convolution."""
    per_suit: Counter[tuple[int, int]] = Counter()
    for mask in range(1 << 13):
        size = bin(mask).count("1")
        if size <= 7:
            per_suit[(size, run_of_ranks(mask))] += 1
    states: Counter[tuple[int, int]] = Counter({(0, 0): 1})
    for _suit in range(4):
        combined: Counter[tuple[int, int]] = Counter()
        for (cards, run), ways in states.items():
            for (size, suit_run), suit_ways in per_suit.items():
                if cards + size <= 7:
                    combined[(cards + size, max(run, suit_run))] += ways * suit_ways
        states = combined
    return {run: ways for (cards, run), ways in states.items() if cards == 7}


REFERENCE = reference_run_counts()


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 51), min_size=1, max_size=7, unique=True))
def test_the_references_run_agrees_with_rules_mds_words(cards: list[int]) -> None:
    masks = [0, 0, 0, 0]
    for card in cards:
        masks[suit_of(card)] |= 1 << rank_of(card)
    assert max(run_of_ranks(mask) for mask in masks) == naive_run(cards)[0]


def test_the_reference_counts_every_hand_and_matches_rules_md() -> None:
    assert sum(REFERENCE.values()) == HANDS
    # docs/rules.md "Progressive wager": 7: 32 · 6: 1,592 · 5: 39,960 · 4: 676,196 · 3: 8,642,932.
    assert {run: REFERENCE[run] for run in (7, 6, 5, 4, 3)} == {
        7: 32,
        6: 1_592,
        5: 39_960,
        4: 676_196,
        3: 8_642_932,
    }


def test_each_levels_hit_count_is_the_exact_enumerations() -> None:
    assert line_counts(DEFAULT) == [(run, REFERENCE[run]) for run in (7, 6, 5, 4, 3)]
    # A configured table whose top line is 6 cards: the 7-card hands reach it too.
    custom = parse_progressive_settings(
        {**PARAMETERS, "paytable": {"6": {"meter_share_percent": 100}, "4": 80}}
    )
    assert line_counts(custom) == [(6, REFERENCE[7] + REFERENCE[6]), (4, REFERENCE[5] + REFERENCE[4])]


def test_the_default_paytables_figures_exactly() -> None:
    sheet = progressive_par_sheet(DEFAULT, meter_cents=2_500_000)
    exact = sheet["exact"]
    fixed = Fraction(REFERENCE[5] * 500 + REFERENCE[4] * 50 + REFERENCE[3] * 5, HANDS)
    per_unit = Fraction(REFERENCE[7], HANDS) + Fraction(REFERENCE[6], HANDS) / 10
    assert Fraction(exact["fixed_return"]) == fixed == Fraction(97_004_460, HANDS)
    assert Fraction(exact["return_per_unit_of_meter"]) == per_unit == Fraction(1_912, 10 * HANDS)
    assert Fraction(exact["return_at_reset"]) == fixed + per_unit * 10_000
    assert Fraction(exact["return_at_meter"]) == fixed + per_unit * 25_000
    break_even = (1 - fixed) / per_unit * 100
    assert Fraction(exact["break_even_meter_cents"]) == break_even
    assert sheet["break_even_meter_cents"] == 19_236_454  # 192,364.54, rounded up to the cent
    long_run = fixed + Fraction(15, 100) + Fraction(REFERENCE[7], HANDS) * 10_000
    assert Fraction(exact["long_run_return"]) == long_run
    assert (
        Fraction(exact["reserve_gain_per_unit"]) == Fraction(2, 100) - Fraction(REFERENCE[7], HANDS) * 10_000
    )
    assert Fraction(exact["hit_frequency"]) == Fraction(sum(REFERENCE[run] for run in (3, 4, 5, 6, 7)), HANDS)
    # The figures docs/math.md quotes.
    assert f"{float(fixed):.6%}" == "72.507964%"
    assert f"{float(fixed + per_unit * 10_000):.4%}" == "73.9371%"
    assert f"{float(long_run):.4%}" == "87.7472%"
    assert sheet["hands_per_jackpot"] == HANDS / 32


def test_without_a_share_line_there_is_no_break_even_meter() -> None:
    fixed_only = parse_progressive_settings({**PARAMETERS, "paytable": {"5": 500, "4": 50, "3": 5}})
    sheet = progressive_par_sheet(fixed_only)
    assert sheet["break_even_meter_cents"] is None
    assert sheet["hands_per_jackpot"] is None
    assert "break-even meter:                  none" in render_progressive(sheet)


# --- the command --------------------------------------------------------------------------------------
def test_flushtable_math_prints_the_progressives_par_sheet() -> None:
    done = run_cli(
        [
            "math",
            "--game",
            "tf",
            "--progressive-only",
            "--progressive",
            json.dumps(PARAMETERS),
            "--meter",
            "2500000",
        ]
    )
    assert done.returncode == 0, done.stderr
    assert "       7    100% of the meter             32" in done.stdout
    assert "return of the fixed awards:        72.5080%" in done.stdout
    assert "return at the reset 10,000.00:     73.9371%" in done.stdout
    assert "return at the meter 25,000.00:     76.0809%" in done.stdout
    assert "break-even meter:                  192,364.54" in done.stdout
    assert "long-run return:                   87.7472%" in done.stdout
    as_json = run_cli(
        ["math", "--game", "hcf", "--progressive-only", "--json", "--progressive", json.dumps(PARAMETERS)]
    )
    assert as_json.returncode == 0, as_json.stderr
    assert json.loads(as_json.stdout)["lines"][0]["hands"] == 32


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (
            ["--game", "ctf", "--progressive", json.dumps(PARAMETERS)],
            "flushtable math: --progressive: Chase the Flush has no Progressive wager",
        ),
        (["--game", "tf", "--progressive", "{"], "flushtable math: --progressive: not valid JSON"),
        (
            ["--game", "tf", "--progressive", json.dumps({**PARAMETERS, "hidden_percent": 90})],
            "flushtable math: --progressive.hidden_percent: increment 15% + hidden 90% is over 100% "
            "of the wager",
        ),
        (
            [
                "--game",
                "tf",
                "--progressive",
                json.dumps({**PARAMETERS, "limit_cents": 2_000_000}),
                "--meter",
                "3000000",
            ],
            "flushtable math: --meter: 3000000 is above the limit (2000000)",
        ),
        (["--game", "tf", "--meter", "100"], "flushtable math: --meter: the meter of which progressive?"),
        (["--game", "tf"], "flushtable math: --progressive-only: which progressive?"),
    ],
)
def test_flushtable_math_refuses_a_bad_progressive_in_one_line(args: list[str], line: str) -> None:
    done = run_cli(["math", "--progressive-only", *args])
    assert done.returncode == 2
    assert done.stderr.startswith(line)
    assert done.stderr.count("\n") == 1
    assert done.stdout == ""


# --- the configuration ---------------------------------------------------------------------------------
PROGRESSIVE_SECTION = """
[progressive]
unit_cents = 200
base_cents = 1000000
reset_cents = 1000000
increment_percent = 15
hidden_percent = 2.5
limit_cents = 5000000
paytable = "progressive"
"""


def configured(tmp_path: Path, extra: str = PROGRESSIVE_SECTION, toml: str = DEFAULT_CONFIG_TOML) -> Path:
    path = tmp_path / "table.toml"
    path.write_text(toml + extra)
    return path


def test_a_table_may_declare_the_progressive_and_flushtable_config_shows_it(tmp_path: Path) -> None:
    path = configured(tmp_path)
    config = load_config(path)
    assert config.progressive is not None
    assert config.progressive.hidden_bp == 250
    done = run_cli(["config", "--config", str(path)])
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["config"]["progressive"]["hidden_percent"] == 2.5
    # A configuration without one keeps its digest: the key is shown only when set.
    assert "progressive" not in load_config(configured(tmp_path, extra="")).to_json()


def test_flushtable_math_reads_the_tables_progressive(tmp_path: Path) -> None:
    done = run_cli(["math", "--config", str(configured(tmp_path)), "--progressive-only"])
    assert done.returncode == 0, done.stderr
    assert "hidden 2.5%, limit 50,000.00" in done.stdout


def test_the_live_table_takes_a_configured_progressive_with_the_controllers_parameters(
    tmp_path: Path,
) -> None:
    """The live table offers it now (tests/progressive/test_simulated_table.py plays one): its file gives
    the controller's own parameters too, at their defaults when left out."""
    config = load_config(configured(tmp_path, PROGRESSIVE_SECTION + "signoff_cents = 250000\n"))
    assert config.progressive_parameters is not None
    assert config.progressive_parameters.settings == config.progressive
    assert config.progressive_parameters.signoff_cents == 250_000
    assert config.progressive_parameters.max_round_wagers == 7
    assert config.to_json()["progressive"]["signoff_cents"] == 250_000


@pytest.mark.parametrize(
    ("extra", "line"),
    [
        (
            PROGRESSIVE_SECTION.replace("reset_cents = 1000000", "reset_cents = 10"),
            "progressive.reset_cents: 10 is below the base",
        ),
        (
            PROGRESSIVE_SECTION.replace("unit_cents = 200", "unit_cents = 0"),
            "progressive.unit_cents: a unit of 0 is no wager",
        ),
        (PROGRESSIVE_SECTION + "colour = 1\n", "progressive.colour: unknown field"),
        (
            PROGRESSIVE_SECTION + "signoff_cents = 0\n",
            "progressive.signoff_cents: 0 would make every award wait",
        ),
        (PROGRESSIVE_SECTION + "max_round_wagers = 9\n", "progressive.max_round_wagers: a round's wagers"),
    ],
)
def test_a_bad_progressive_section_is_refused_naming_the_key(tmp_path: Path, extra: str, line: str) -> None:
    done = run_cli(["config", "--config", str(configured(tmp_path, extra=extra))])
    assert done.returncode == 2
    assert done.stderr.startswith(f"flushtable config: table.toml: {line}")


def test_chase_the_flush_refuses_a_progressive_section(tmp_path: Path) -> None:
    toml = DEFAULT_CONFIG_TOML.replace('game = "high-card-flush"', 'game = "chase-the-flush"').replace(
        "seats = 6", "seats = 7"
    )
    done = run_cli(["config", "--config", str(configured(tmp_path, toml=toml))])
    assert done.returncode == 2
    assert (
        done.stderr
        == "flushtable config: table.toml: progressive: Chase the Flush has no Progressive wager\n"
    )


def test_docs_math_md_shows_the_command_as_it_prints() -> None:
    text = (Path(__file__).resolve().parents[2] / "docs" / "math.md").read_text()
    block = text.split("$ flushtable math --game tf --progressive-only --meter 2500000 \\\n", 1)[1]
    arguments, _, rest = block.partition("\n")
    shown = rest.split("\n```", 1)[0]
    given = json.loads(arguments.strip().removeprefix("--progressive ").strip("'"))
    done = run_cli(
        [
            "math",
            "--game",
            "tf",
            "--progressive-only",
            "--meter",
            "2500000",
            "--progressive",
            json.dumps(given),
        ]
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.rstrip("\n") == shown


def test_the_games_par_sheet_carries_the_progressive_after_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from controller.cli import main

    argv = [
        "math",
        "--game",
        "tf",
        "--quiet",
        "--cache-dir",
        str(tmp_path),
        "--progressive",
        json.dumps(PARAMETERS),
    ]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert text.index("Base game, optimal strategy") < text.index("Progressive wager (progressive paytable)")
    assert "long-run return:                   87.7472%" in text
    assert main([*argv, "--json"]) == 0  # the game's sheet from the cache; the progressive computed again
    sheet = json.loads(capsys.readouterr().out)
    assert sheet["game"] == "top-flush"
    assert sheet["progressive"]["exact"]["fixed_return"] == "692889/955604"
