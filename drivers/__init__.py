"""Device transports and drivers: bytes on a wire in, typed domain events out. Knows no game."""
