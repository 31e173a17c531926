"""The embedded default's document, written out in controller/config.py so `flushtable config` loads no
TOML parser (issue 28), is what ``tomllib`` reads from ``DEFAULT_CONFIG_TOML``: an edit of one without
the other fails here."""

from __future__ import annotations

import tomllib
from pathlib import Path

from controller.config import DEFAULT_CONFIG_TOML, default_config_document, load_config, parse_config


def test_the_written_out_document_is_the_embedded_toml() -> None:
    assert default_config_document() == tomllib.loads(DEFAULT_CONFIG_TOML)


def test_the_default_checked_from_either_is_the_same_configuration() -> None:
    from_text = parse_config(DEFAULT_CONFIG_TOML, source="<default>", base_dir=Path.cwd())
    assert load_config() == from_text
    assert load_config().digest == from_text.digest


def test_each_call_is_a_fresh_document() -> None:
    # The checks may not alter a shared literal: the next load would read what the last one changed.
    first = default_config_document()
    first["table"]["seats"] = 2
    assert default_config_document()["table"]["seats"] == 6
