"""The release key refused in the same words by the configuration's check ([software] public_key) and by
controller/software/ (`floor verify-software --public-key`, the start's check): one check,
controller/release_key.py."""

from __future__ import annotations

import pytest

from controller.checked import ValidationError
from controller.config.sections import SoftwareSection
from controller.errors import UserError
from controller.software import parse_public_key

KEY_HEX = "ab" * 32


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("zz", "not hex: the release key's public half is 64 hex digits"),
        ("ab" * 31, "an Ed25519 public key is 32 bytes (64 hex digits), not 31"),
        ("ab" * 33, "an Ed25519 public key is 32 bytes (64 hex digits), not 33"),
    ],
)
def test_a_bad_key_is_refused_alike_by_both_readers(text: str, words: str) -> None:
    with pytest.raises(UserError) as refused:
        parse_public_key(text)
    assert str(refused.value) == words
    with pytest.raises(ValidationError) as invalid:
        SoftwareSection.model_validate({"manifest": "release.json", "public_key": text})
    assert [error["msg"] for error in invalid.value.errors()] == [words]


def test_a_good_key_is_read_by_both() -> None:
    assert parse_public_key(f"  {KEY_HEX.upper()}\n") == bytes.fromhex(KEY_HEX)
    section = SoftwareSection.model_validate(
        {"manifest": "release.json", "public_key": f" {KEY_HEX.upper()} "}
    )
    assert section.public_key == KEY_HEX
