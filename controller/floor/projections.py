"""The tables a floor service holds in memory (docs/floor.md "The floor service"): each table's
projection, read back from PostgreSQL the first time it is needed and kept while the service runs.
Shared by the service's parts that take messages (the batches, the idle sweep, the releases); dropped
whenever a transaction that changed them is rolled back, so the next need reads PostgreSQL again.
"""

from __future__ import annotations

from controller.floor.checks import TableProjection
from controller.floor.store import Connection, Tail, load_projection, load_projections, load_tails

__all__ = ["Projections", "ReadAhead"]

# Projections read before a service holds their partition, each with the tail it was read at
# (``store.load_projections``; controller/floor/partition_services.py reads them ahead of a takeover).
ReadAhead = dict[str, tuple[TableProjection, Tail | None]]


class Projections:
    def __init__(self) -> None:
        self._tables: dict[str, TableProjection] = {}
        self.read_back = 0  # tables read back from PostgreSQL (``of``, ``read_many``), since the start

    def held(self, table_id: str) -> TableProjection | None:
        """The table's projection if it is in memory (nearly always: no coroutine for it then)."""
        return self._tables.get(table_id)

    async def of(self, connection: Connection, table_id: str) -> TableProjection:
        """The table's projection, read back from PostgreSQL (in the caller's transaction) if it is not
        in memory."""
        projection = self._tables.get(table_id)
        if projection is None:
            projection = await load_projection(connection, table_id)
            self._tables[table_id] = projection
            self.read_back += 1
        return projection

    async def adopt(self, connection: Connection, read_ahead: ReadAhead) -> int:
        """The projections read ahead whose tail is still the floor's (read now, in one statement) are
        taken as this service's; the others are read back at their need. Called once the partition's
        epoch is this service's in PostgreSQL: its claim waited for any commit of the previous holder
        in flight (the fence's row lock), so a tail unchanged since the read ahead is the table's last.
        Returns how many were taken."""
        tails = await load_tails(connection, list(read_ahead))
        taken = 0
        for table_id, (projection, tail) in read_ahead.items():
            if tails.get(table_id) == tail and table_id not in self._tables:
                self._tables[table_id] = projection
                taken += 1
        return taken

    async def read_many(self, connection: Connection, table_ids: list[str]) -> None:
        """Those of ``table_ids`` not in memory read back from PostgreSQL together (in the caller's
        transaction, as ``of``)."""
        missing = sorted({t for t in table_ids if t not in self._tables})
        if not missing:
            return
        for table_id, (projection, _) in (await load_projections(connection, missing)).items():
            self._tables[table_id] = projection
        self.read_back += len(missing)

    def forget(self, table_id: str) -> None:
        """The table read back from PostgreSQL at its next need."""
        self._tables.pop(table_id, None)

    def forget_all(self) -> None:
        """Every table read back from PostgreSQL at its next need (a transaction rolled back)."""
        self._tables.clear()
