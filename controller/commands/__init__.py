"""One module per `flushtable` subcommand.

Each module defines NAME, HELP, `add_arguments(parser)` and `run(args) -> int`; controller.cli lists
the modules in COMMAND_MODULES.
"""
