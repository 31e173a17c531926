"""The simulation harness: the production daemon wrapped with simulated devices (sim_devices/) and the
simulated people at the table (autoplay, scenarios, a supervisor). docs/engine.md, "Daemon and
simulation harness"."""
