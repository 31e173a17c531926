from tests.device_harness.fixtures import no_leaks

__all__ = ["no_leaks"]
