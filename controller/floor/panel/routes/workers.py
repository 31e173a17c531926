"""The Workers page (docs/floor.md "Partitioned floor workers")."""

# No `from __future__ import annotations`: FastAPI reads the routes' annotations at run time.
from fastapi import APIRouter
from fastapi.responses import HTMLResponse, Response

from controller.floor.panel.context import FloorDep, PageSession

router = APIRouter(include_in_schema=False)


@router.get("/workers", response_class=HTMLResponse)
async def workers_page(floor: FloorDep, session: PageSession) -> Response:
    """Which worker holds which partition and the NATS nodes as the workers last saw them: from
    PostgreSQL, so it reads on through a node's or a worker's loss. Empty on a one-worker floor."""
    leases = await floor.queries.partition_leases()
    nodes = await floor.queries.nats_nodes()
    return await floor.page("workers.html", session, leases=leases, nodes=nodes)
