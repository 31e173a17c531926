"""docs/protocol.md agrees with the code: constants, message type codes and enumerations."""

from __future__ import annotations

import re
from pathlib import Path

from firmware_protocol import constants
from firmware_protocol.messages import ALL_MESSAGE_CLASSES
from firmware_protocol.vector_inputs import VECTOR_SESSION_KEY
from firmware_protocol.vocabulary import (
    DEALER_KEYS,
    DEVICE_KINDS,
    DEVICE_STATES,
    ERROR_CODES,
    LAMP_COLOURS,
    SEAT_RESULTS,
    SHUFFLER_FAULTS,
    SPOT_LAMP_COLOURS,
)

DOC = (Path(__file__).resolve().parents[2] / "docs" / "protocol.md").read_text(encoding="utf-8")


def test_every_constant_in_the_table_matches_the_code() -> None:
    rows = dict(re.findall(r"^\| `([A-Z_0-9]+)` \| ([0-9.]+) \|", DOC, flags=re.MULTILINE))
    assert len(rows) >= 20
    for name, text in rows.items():
        value = getattr(constants, name)
        assert float(text) == value, name
    documented = set(rows)
    public = {
        name for name in vars(constants) if name.isupper() and not name.startswith(("KIND_", "SENDER_"))
    }
    assert public - documented <= {"FRAME_DELIMITER", "ANY_DEVICE_ID", "KDF_INFO_PREFIX"}


def test_every_message_type_is_in_the_table_with_its_code() -> None:
    for cls in ALL_MESSAGE_CLASSES:
        assert f"| 0x{cls.TYPE:02X} | {cls.NAME} |" in DOC, cls.NAME
        assert f"**{cls.NAME}** (0x{cls.TYPE:02X})" in DOC, cls.NAME


def test_enumerations_are_listed_in_wire_order() -> None:
    for label, names in (
        ("device_kind", DEVICE_KINDS),
        ("state", DEVICE_STATES),
        ("lamp", LAMP_COLOURS),
        ("fault (shuffler)", SHUFFLER_FAULTS),
        ("spot lamp colour", SPOT_LAMP_COLOURS),
        ("seat result", SEAT_RESULTS),
        ("dealer key", DEALER_KEYS),
    ):
        listed = ", ".join(f"{index} {name}" for index, name in enumerate(names))
        assert f"| {label} | {listed} |" in DOC, label


def test_error_codes_and_worked_values_match() -> None:
    for code, name in ERROR_CODES.items():
        assert f"| {code} | {name} |" in DOC
    assert VECTOR_SESSION_KEY.hex() in DOC
    assert constants.KDF_INFO_PREFIX.decode() in DOC
