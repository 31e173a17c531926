"""`flushtable settle [FILE] [--jsonl]`: JSON in, JSON out; bad input exits 2 with one line on standard
error naming the field and the reason; never a traceback."""

from __future__ import annotations

import copy
import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller.cli import main
from controller.commands.settle import settle_lines, settle_text
from controller.errors import UserError
from tests.rules.test_settle_input import GOOD


def flushtable_command() -> list[str]:
    """The installed console script when there is one (make test installs it), else the module."""
    script = Path(sys.executable).parent / "flushtable"
    return [str(script)] if script.exists() else [sys.executable, "-m", "controller.cli"]


def run_cli(args: list[str], stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*flushtable_command(), *args], input=stdin, capture_output=True, text=True, timeout=60, check=False
    )


def test_settle_reads_a_file_and_prints_the_settlement(tmp_path: Path) -> None:
    path = tmp_path / "round.json"
    path.write_text(json.dumps(GOOD))
    done = run_cli(["settle", str(path)])
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert [seat["net"] for seat in out["seats"]] == [1000, -500]
    assert out["banker_net"] == -500
    assert done.stderr == ""


def test_settle_reads_standard_input_without_a_file() -> None:
    done = run_cli(["settle"], stdin=json.dumps(GOOD))
    assert done.returncode == 0
    assert json.loads(done.stdout)["seats"][0]["wagers"]["ante"] == {
        "stake": 500,
        "result": "win",
        "net": 500,
    }


@pytest.mark.parametrize(
    ("stdin", "message"),
    [
        ("{", "input: not JSON: Expecting property name enclosed in double quotes at line 1 column 2"),
        ("", "input: not JSON: Expecting value at line 1 column 1"),
        ("[1, 2]", "input: a round is a JSON object, not list"),
        (
            '{"game": "high-card-flush", "game": "top-flush"}',
            "input: not acceptable JSON: field 'game' appears twice",
        ),
        ('{"x": NaN}', "input: not acceptable JSON: NaN is not a number JSON allows"),
        ('{"x": ' + "9" * 5000 + "}", "input: not acceptable JSON: Exceeds the limit"),
        ("[" * 100_000 + "]" * 100_000, "input: not acceptable JSON: maximum recursion depth exceeded"),
        (json.dumps({**GOOD, "game": "baccarat"}), "game: unknown game 'baccarat'"),
    ],
)
def test_bad_input_exits_2_with_one_line_and_no_traceback(stdin: str, message: str) -> None:
    done = run_cli(["settle"], stdin=stdin)
    assert done.returncode == 2
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(f"flushtable settle: {message}")
    assert "Traceback" not in done.stderr


def test_a_missing_file_is_a_one_line_error(tmp_path: Path) -> None:
    done = run_cli(["settle", str(tmp_path / "nope.json")])
    assert done.returncode == 2
    assert done.stderr.startswith("flushtable settle: FILE: cannot read ")
    assert len(done.stderr.splitlines()) == 1


def test_jsonl_answers_each_line_in_order_errors_in_place_and_exits_2_at_the_end() -> None:
    bad = copy.deepcopy(GOOD)
    bad["seats"][0]["wagers"]["raise"] = 1000
    lines = [json.dumps(GOOD), "not json", json.dumps(bad), "", json.dumps(GOOD)]
    done = run_cli(["settle", "--jsonl"], stdin="\n".join(lines) + "\n")
    assert done.returncode == 2
    out = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(out) == 4  # the blank line is skipped
    assert out[0] == out[3]
    assert out[0]["banker_net"] == -500
    assert out[1] == {"error": "line 2: input: not JSON: Expecting value at line 1 column 1"}
    assert out[2]["error"].startswith("line 3: seats[0].wagers.raise: 1000 is outside its limit")
    assert done.stderr.splitlines() == [
        "flushtable settle: 2 of 4 rounds refused "
        "(first: line 2: input: not JSON: Expecting value at line 1 column 1)"
    ]


def test_jsonl_with_every_line_good_exits_0() -> None:
    out, err = io.StringIO(), io.StringIO()
    assert settle_lines([json.dumps(GOOD)] * 3, out, err) == 0
    assert len(out.getvalue().splitlines()) == 3
    assert err.getvalue() == ""


def test_help_lists_the_subcommands(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    assert "settle" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["settle", "--help"])
    assert "--jsonl" in capsys.readouterr().out


def test_main_returns_2_and_prints_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "round.json"
    path.write_text(json.dumps({**GOOD, "seats": "none"}))
    assert main(["settle", str(path)]) == 2
    captured = capsys.readouterr()
    assert captured.err == "flushtable settle: seats: must be a list, not a string\n"


# --- never a traceback: arbitrary JSON, and valid rounds with one field replaced by arbitrary JSON ---------
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)


def paths_of(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix] if prefix else []
    if isinstance(value, dict):
        for key, child in value.items():
            found += paths_of(child, (*prefix, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            found += paths_of(child, (*prefix, index))
    return found


GOOD_PATHS = paths_of(GOOD)


def settle_or_refuse(text: str) -> None:
    try:
        result = settle_text(text)
    except UserError as error:
        message = str(error)
        assert message
        assert "\n" not in message
        assert len(message) < 400
    else:
        assert isinstance(result, dict)
        json.dumps(result)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(json_values)
def test_arbitrary_json_is_settled_or_refused_never_crashes(value: Any) -> None:
    settle_or_refuse(json.dumps(value))


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(GOOD_PATHS), json_values, st.booleans())
def test_a_round_with_any_field_replaced_is_settled_or_refused(
    path: tuple[Any, ...], value: Any, delete: bool
) -> None:
    obj = copy.deepcopy(GOOD)
    target: Any = obj
    for part in path[:-1]:
        target = target[part]
    if delete:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    settle_or_refuse(json.dumps(obj))
