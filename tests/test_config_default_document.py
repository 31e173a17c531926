"""The embedded default's document, written out in controller/config/sections.py so `flushtable config`
loads no TOML parser (issue 28), is what ``tomllib`` reads from ``DEFAULT_CONFIG_TOML``: an edit of one
without the other fails here, a value's type (30 against 30.0 or true) and the keys' order included."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

from controller.config import DEFAULT_CONFIG_TOML, default_config_document, load_config, parse_config


def test_the_written_out_document_is_the_embedded_toml() -> None:
    written, parsed = default_config_document(), tomllib.loads(DEFAULT_CONFIG_TOML)
    assert written == parsed
    # == holds 1 == 1.0 == True: the JSON text tells them apart, and the order of the keys.
    assert json.dumps(written) == json.dumps(parsed)


def test_the_comparison_sees_a_type_changed() -> None:
    written = default_config_document()
    written["timeouts"]["decision_s"] = 30.0
    parsed = tomllib.loads(DEFAULT_CONFIG_TOML)
    assert written == parsed
    assert json.dumps(written) != json.dumps(parsed)


def test_the_default_checked_from_either_is_the_same_configuration() -> None:
    from_text = parse_config(DEFAULT_CONFIG_TOML, source="<default>", base_dir=Path.cwd())
    assert load_config() == from_text
    assert load_config().digest == from_text.digest


def test_each_call_is_a_fresh_document() -> None:
    # The checks may not alter a shared literal: the next load would read what the last one changed.
    first = default_config_document()
    first["table"]["seats"] = 2
    assert default_config_document()["table"]["seats"] == 6
