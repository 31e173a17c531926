"""The table's configuration: TOML (tomllib), validated whole at start by checked models
(controller/checked.py: pydantic's model API in plain Python, so `flushtable config` loads no pydantic).

Every refusal is one line that names the file and the key: ``table.toml: devices.shuffler.url: ...``.
Unknown keys are refused, so a typo is never silently ignored. docs/configuration.md documents every
key with a complete example (which the test suite loads).

The file's shape is the models in ``sections`` (``ConfigFile`` and its sections); checks that span sections (a
seat count that depends on the banking, paytables that depend on the game, keys shared between devices)
run once every field is valid. ``TableConfig`` is what the rest of the controller reads.

The package, by what the code is about: ``sections`` (the file's shape: the checked models and the
embedded default), ``resolved`` (what the controller reads: ``TableConfig`` and its parts) and
``reading`` (``load_config``/``parse_config``: the checks across sections that make a TableConfig).
The names below are the configuration's public door (what the rest of the product reads); a
module that needs a section's own model imports it from ``sections``.
"""

from controller.config.reading import (
    ConfigError,
    check_config,
    checked_ca_file,
    load_config,
    parse_config,
    settings_as_given,
)
from controller.config.resolved import TableConfig, UplinkConfig
from controller.config.sections import (
    DEFAULT_CONFIG_TOML,
    ClockSection,
    SegmentPolicy,
    default_config_document,
    split_ntp_server,
    tls_servers,
    whole_number,
)

__all__ = [
    "DEFAULT_CONFIG_TOML",
    "ClockSection",
    "ConfigError",
    "SegmentPolicy",
    "TableConfig",
    "UplinkConfig",
    "check_config",
    "checked_ca_file",
    "default_config_document",
    "load_config",
    "parse_config",
    "settings_as_given",
    "split_ntp_server",
    "tls_servers",
    "whole_number",
]
