"""The floor's harness: the floor's servers (nats-server, PostgreSQL, a CA by openssl) started as child
processes, the embedded floor the tests and `flushtable floor demo` run, the leaf sites and the
three-node NATS cluster. Never imported by the floor service or the table's process (docs/floor.md
"Where the harness lives")."""
