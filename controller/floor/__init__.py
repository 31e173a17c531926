"""The floor: the service that takes the tables' journals from NATS into PostgreSQL, its panel, its
reports (docs/floor.md). Its harness (the servers it runs on, in the tests and the demo) is
controller/simulation/floor/."""
