"""A linked table's link to the floor's progressive (docs/floor.md "Linked progressive"), as the daemon
runs it: over [uplink]'s servers and credentials, the engine's claims go through it and its link state
refuses Progressive wagers when lost; a seal of the journal waits while a claim is unanswered.

The link's client is nats (controller/progressive/linked.py), loaded only here and only for a table
whose [progressive] names a link: a table without one never imports it.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

from controller.config import TableConfig
from controller.engine import TableEngine


class DaemonProgressiveLink:
    """The daemon's part for a linked progressive: it reads the configuration, the journal's file and the
    engine (a getter: the engine exists once the start has recovered the journal), nothing else."""

    def __init__(self, config: TableConfig, journal_path: Path, engine: Callable[[], TableEngine]) -> None:
        self._config = config
        self._journal_path = journal_path
        self._engine = engine
        self.client: Any = None  # the LinkClient once the link runs (the panel shows its meter)

    def unanswered_claims_wait(self) -> str | None:
        """Why a seal must wait for a linked table's claims (None: it need not): a claim sent and not
        answered, or a settled round's claim the journal shows unanswered. Only the open segment is read
        back for them at a start, so a seal never moves one into the sealed past."""
        from controller.progressive import linked  # noqa: PLC0415 (nats: floor only)

        client = self.client
        if client is not None and client.pending:
            return f"{len(client.pending)} progressive claim(s) wait for the floor's answer"
        try:
            unanswered = linked.unanswered_claims(self._journal_path)
        except sqlite3.Error as error:
            return f"the journal's progressive claims cannot be read: {error}"
        if unanswered:
            return f"{len(unanswered)} progressive claim(s) in the journal wait for the floor's answer"
        return None

    async def run(self, stop: asyncio.Event) -> None:
        """The link until ``stop``: the engine's claims go through it, its state gates the wager."""
        from controller.progressive import linked  # noqa: PLC0415 (nats: floor only)

        config = self._config
        uplink = config.uplink
        link = config.progressive_link
        parameters = config.progressive_parameters
        assert uplink is not None
        assert link is not None
        assert parameters is not None
        client = linked.LinkClient(
            linked.LinkConfig(link, config.table_id, uplink, config.progressive_link_timeout_s)
        )
        controller = linked.LinkedTableController(
            client, parameters, linked.journal_settled_seq(self._journal_path)
        )
        self.client = client
        engine = self._engine()
        engine.set_progressive_controller(controller)  # its link_state becomes the engine's link
        # A claim left unanswered by an earlier run (the link was down, then the table stopped) is asked
        # again from the journal: the floor answers a replay with its first answer (never paid twice).
        unanswered = await asyncio.to_thread(linked.unanswered_claims, self._journal_path)
        engine.resume_progressive_claims([(c.round_id, c.wagers, c.hits) for c in unanswered])
        await client.run(stop)

    def panel_view(self) -> dict[str, Any] | None:
        """A linked table's Progressive card from its link client; None (the journal's card) otherwise."""
        client = self.client
        return None if client is None else dict(client.panel_view())
