"""``settings_as_given``: what [uplink] and [floor] hand their records by name (config/reading.py)."""

from __future__ import annotations

import dataclasses

from controller.config import settings_as_given
from controller.config.resolved import UplinkConfig
from controller.config.sections import UplinkSection
from controller.floor.config import FloorSection
from controller.floor.service_settings import FloorConfig
from table_names import records


@dataclasses.dataclass(frozen=True)
class _Record:
    servers: tuple[str, ...]
    user: str
    timeout_s: float
    held_here: int = 7  # a field the section does not have: left to its default


def test_the_record_s_fields_the_section_has_but_those_set_here() -> None:
    section = UplinkSection.model_validate(
        {
            "servers": ["tls://127.0.0.1:4222"],
            "site": "S1",
            "user": "table-T1",
            "password": "pw",
            "ca_file": "ca",
        }
    )
    given = settings_as_given(section, UplinkConfig, set_here=("servers", "password", "ca_file"))
    assert given == {
        "site": "S1",
        "user": "table-T1",
        "connect_timeout_s": 5.0,
        "ack_timeout_s": 5.0,
        "poll_interval_s": 0.1,
        "backoff_initial_s": 0.2,
        "backoff_max_s": 5.0,
        "stream": "FLUSHTABLE",
    }
    # A field named in both but set by the caller is never taken from the section; one the record
    # has and the section does not is left to the record's default.
    assert settings_as_given(section, _Record, set_here=("servers",)) == {"user": "table-T1"}


def test_every_setting_of_both_sections_reaches_its_record_or_is_set_by_the_reader() -> None:
    # What the readers set themselves (controller/config/reading.py ``_uplink``, controller/floor/
    # config.py ``_assemble``); every other setting a section and its record share is passed as given.
    for section, record, set_here, read_elsewhere in (
        (UplinkSection, UplinkConfig, {"servers", "password", "ca_file"}, {"password_file"}),
        (
            FloorSection,
            FloorConfig,
            {"servers", "ca_file"},
            {"password_file", "dsn_file", "gaming_day_start_hour"},
        ),
    ):
        fields = set(records.field_names(record))
        unread = set(section.model_fields) - fields - read_elsewhere
        assert not unread, f"{section.__name__}: settings no record field holds: {sorted(unread)}"
        assert set_here <= fields
