"""``[property]`` in the table's file and in the floor's (docs/configuration.md "[property]"): read into
the same settings, every refusal one line naming the file and the key (an unknown key named, with its
likely spelling), the floor's old ``gaming_day_start_hour`` still meaning what it meant, and the floor's
file written as it is read."""

from __future__ import annotations

import dataclasses
from datetime import date
from pathlib import Path

import pytest

from controller.config import DEFAULT_CONFIG_TOML, ConfigError, parse_config
from controller.floor.config import FloorConfigError, load_floor_config, write_floor_config
from controller.locale import DEFAULT_PROPERTY, legacy_property, property_settings, shift_bounds
from tests.config.test_floor_section import FLOOR, floor_dir  # noqa: F401  (the fixture)

BERLIN_TOML = """
[property]
time_zone = "Europe/Berlin"
gaming_day_start = "06:00"
currency = "EUR"
currency_symbol = "€"

[property.shifts]
day = "06:00"
swing = "14:00"
grave = "22:00"
"""


def table(extra: str) -> object:
    return parse_config(DEFAULT_CONFIG_TOML + extra, source="table.toml", base_dir=Path("/nonexistent"))


def test_the_table_reads_the_property_and_defaults_to_before() -> None:
    assert (
        parse_config(DEFAULT_CONFIG_TOML, source="t", base_dir=Path("/x")).property_settings
        == DEFAULT_PROPERTY
    )
    config = parse_config(DEFAULT_CONFIG_TOML + BERLIN_TOML, source="t", base_dir=Path("/x"))
    prop = config.property_settings
    assert prop.time_zone == "Europe/Berlin"
    assert prop.money(-123450) == "-€1,234.50"
    assert shift_bounds(date(2026, 12, 5), "day", prop)[0].hour == 5  # 06:00 CET
    # Not how the table plays: the configuration's digest (journaled) is the default's.
    assert config.digest == parse_config(DEFAULT_CONFIG_TOML, source="t", base_dir=Path("/x")).digest


@pytest.mark.parametrize(
    ("extra", "line"),
    [
        (
            '[property]\ntime_zon = "UTC"\n',
            "table.toml: property.time_zon: unknown key (did you mean 'time_zone'?)",
        ),
        (
            '[property]\ntime_zone = "Mars/Olympus"\n',
            "table.toml: property.time_zone: 'Mars/Olympus' is not a time zone",
        ),
        ("[property]\ntime_zone = 1\n", "table.toml: property.time_zone: must be a string, not an integer"),
        (
            '[property]\ngaming_day_start = "25:00"\n',
            "table.toml: property.gaming_day_start: '25:00' is not a local",
        ),
        (
            '[property]\ncurrency = "euro"\n',
            "table.toml: property.currency: 'euro' is not a three-letter ISO 4217",
        ),
        (
            '[property]\ncurrency = "EUR\\n"\n',
            "table.toml: property.currency: 'EUR\\n' is not a three-letter ISO 4217",
        ),
        (
            '[property]\ncurrency = "JPY"\ncurrency_decimals = 7\n',
            "table.toml: property.currency_decimals: from 0 to 3",
        ),
        ('[property.shifts]\nday = "06:00"\nnight = 18\n', "table.toml: property.shifts.night: "),
        (
            '[property.shifts]\nearly = "05:00"\nlate = "17:00"\n',
            "table.toml: property.shifts: no shift starts at",
        ),
    ],
)
def test_a_bad_table_property_is_one_line(extra: str, line: str) -> None:
    with pytest.raises(ConfigError) as refused:
        table(extra)
    assert str(refused.value).startswith(line), str(refused.value)
    assert "\n" not in str(refused.value)


def test_the_floor_reads_the_property_and_its_old_start_hour(floor_dir: Path) -> None:  # noqa: F811
    path = floor_dir / "floor.toml"
    path.write_text(FLOOR)
    assert load_floor_config(path).property_settings == DEFAULT_PROPERTY
    path.write_text(FLOOR + "gaming_day_start_hour = 8\n")
    assert load_floor_config(path).property_settings == legacy_property(8)
    path.write_text(FLOOR + BERLIN_TOML)
    config = load_floor_config(path)
    assert config.property_settings.time_zone == "Europe/Berlin"
    # What write_floor_config writes, the loader reads back the same.
    written = write_floor_config(floor_dir / "again", config)
    assert load_floor_config(written).property_settings == config.property_settings
    jpy = property_settings(time_zone="Asia/Tokyo", currency="JPY", shifts={"day": "06:00", "night": "18:00"})
    config2 = write_floor_config(floor_dir / "yen", dataclasses.replace(config, property_settings=jpy))
    assert load_floor_config(config2).property_settings == jpy


@pytest.mark.parametrize(
    ("extra", "line"),
    [
        ('[property]\ncurrancy = "EUR"\n', "property.currancy: unknown key (did you mean 'currency'?)"),
        ('[property]\ntime_zone = "Europe/Berlin"\n', None),
        (
            'gaming_day_start_hour = 7\n[property]\ntime_zone = "Europe/Berlin"\n',
            "floor.gaming_day_start_hour: give [property] gaming_day_start instead",
        ),
        ('[property]\ntime_zone = "CET/Nowhere"\n', "property.time_zone: 'CET/Nowhere' is not a time zone"),
    ],
)
def test_a_bad_floor_property_is_one_line(floor_dir: Path, extra: str, line: str | None) -> None:  # noqa: F811
    path = floor_dir / "floor.toml"
    path.write_text(FLOOR + extra)
    if line is None:
        assert load_floor_config(path).property_settings.time_zone == "Europe/Berlin"
        return
    with pytest.raises(FloorConfigError) as refused:
        load_floor_config(path)
    assert str(refused.value).startswith(f"{path}: {line}"), str(refused.value)
    assert "\n" not in str(refused.value)
