"""The firmware protocol between the table controller and its devices (sans-I/O; imports nothing of ours)."""
