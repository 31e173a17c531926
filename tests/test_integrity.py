"""The integrity check flags a biased shuffler, passes a fair one, and keeps its false-alarm rate."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from controller.cli import main
from controller.integrity import check_records
from tests.integrity_sim import hcf_records

FAIR_RUNS = 120
ROUNDS_PER_RUN = 300
BIASED_ROUNDS = 200  # the stated detection horizon for a spade 1.5x as likely to come next


def test_fair_shuffler_passes() -> None:
    verdict = check_records(hcf_records(ROUNDS_PER_RUN, seed=7))
    assert verdict.status == "pass", verdict.summary
    names = {test.name for test in verdict.tests}
    assert {"card frequencies", "flush lengths", "cards at dealer[0]", "cards at seat 6[6]"} <= names
    assert any(name.startswith("return of high-card-flush/house/flush") for name in names)


@pytest.mark.parametrize("seed", range(5))
def test_suit_biased_shuffler_is_flagged_within_200_rounds(seed: int) -> None:
    verdict = check_records(hcf_records(BIASED_ROUNDS, seed=1000 + seed, heavy_suit=3, weight=1.5))
    assert verdict.alarm, verdict.summary


def test_false_alarm_rate_stays_at_or_below_alpha() -> None:
    alarms = sum(check_records(hcf_records(ROUNDS_PER_RUN, seed=seed)).alarm for seed in range(FAIR_RUNS))
    # Nominal alpha 0.01: 120 fair runs expect about 1 alarm; 5 or more would be p < 0.01.
    assert alarms <= 4


def test_false_alarm_rate_is_near_nominal_when_alpha_is_large() -> None:
    # The check is not dead: at alpha 0.25 fair runs do alarm, at close to (not above) that rate.
    runs = 60
    alarms = sum(
        check_records(hcf_records(ROUNDS_PER_RUN, seed=5000 + seed), alpha=0.25).alarm for seed in range(runs)
    )
    assert 5 <= alarms <= 24


def test_a_skewed_flush_bonus_return_is_flagged() -> None:
    records = hcf_records(ROUNDS_PER_RUN, seed=11)
    for record in records:  # the bonus is paid on every losing hand too: the house leaks money
        for seat in record["settlement"]["seats"]:
            line = seat["wagers"]["flush"]
            line["net"] = max(line["net"], 0)
    verdict = check_records(records)
    assert verdict.alarm
    assert any(test.flagged and test.name.startswith("return of") for test in verdict.tests)


def test_too_few_rounds_wait_for_data() -> None:
    verdict = check_records(hcf_records(3, seed=1))
    assert verdict.status in {"pass", "insufficient data"}
    assert any("cards per position" in item for item in verdict.waiting)


def test_dead_and_void_rounds_are_skipped() -> None:
    records = hcf_records(20, seed=2)
    records[0]["status"] = "dead"
    records[1]["status"] = "void"
    assert check_records(records).rounds_skipped == 2


def test_cli_records_json_lines_and_exit_status(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fair = tmp_path / "fair.jsonl"
    fair.write_text("\n".join(json.dumps(record) for record in hcf_records(ROUNDS_PER_RUN, seed=7)))
    assert main(["integrity", "--records", str(fair)]) == 0
    assert "Integrity: PASS" in capsys.readouterr().out
    biased = tmp_path / "biased.json"
    biased.write_text(json.dumps(hcf_records(BIASED_ROUNDS, seed=1000, weight=1.5)))
    assert main(["integrity", "--records", str(biased), "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["status"] == "alarm"


def test_cli_bad_inputs_are_one_line_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    assert main(["integrity", "--records", str(bad)]) == 2
    assert "--records" in capsys.readouterr().err
    card = tmp_path / "card.json"
    record = hcf_records(1, seed=1)[0]
    record["round"]["dealer"][0] = "10h"
    card.write_text(json.dumps([record]))
    assert main(["integrity", "--records", str(card)]) == 2
    err = capsys.readouterr().err
    assert "round.dealer[0]" in err
    assert err.count("\n") == 1
    assert main(["integrity", "--records", str(tmp_path / "missing.json")]) == 2
    capsys.readouterr()
    assert main(["integrity", "--journal", str(tmp_path / "j.db")]) == 2
    err = capsys.readouterr().err
    assert "no such file" in err
    assert err.count("\n") == 1
