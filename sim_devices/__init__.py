"""Simulated twins of the table's devices, speaking the real firmware protocol."""
