"""The table controller: rules engine, round machine, journal, panel and the `flushtable` command."""

__version__ = "0.1.0"
