"""The uplink: a table's journal published, in order, to the floor's NATS JetStream (docs/floor.md)."""
