"""The tables a floor service holds in memory (docs/floor.md "The floor service"): each table's
projection, read back from PostgreSQL the first time it is needed and kept while the service runs.
Shared by the service's parts that take messages (the batches, the idle sweep, the releases); dropped
whenever a transaction that changed them is rolled back, so the next need reads PostgreSQL again.
"""

from __future__ import annotations

from controller.floor.checks import TableProjection
from controller.floor.store import Connection, load_projection

__all__ = ["Projections"]


class Projections:
    def __init__(self) -> None:
        self._tables: dict[str, TableProjection] = {}

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
        return projection

    def forget(self, table_id: str) -> None:
        """The table read back from PostgreSQL at its next need."""
        self._tables.pop(table_id, None)

    def forget_all(self) -> None:
        """Every table read back from PostgreSQL at its next need (a transaction rolled back)."""
        self._tables.clear()
