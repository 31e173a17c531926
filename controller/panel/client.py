"""Who is asking: the real peer of a connection, and what a trusted proxy says the client was.

``X-Forwarded-For`` is believed only from a peer listed in ``[panel] trusted_proxies`` (empty by
default: the panel listens on loopback and nobody's header counts). From anyone else it is ignored, so
a client cannot pick the address its failed logins are counted and journaled under. The journal keeps
both: ``remote`` is the peer the socket saw, ``forwarded_for`` what a trusted proxy said.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass

from starlette.requests import HTTPConnection

from controller.errors import UserError

MAX_FORWARDED_CHARS = 64  # an IPv6 address with a zone is under this; anything longer is not an address

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


@dataclass(frozen=True, slots=True)
class ClientAddress:
    peer: str  # the connection's peer, as the socket saw it
    forwarded_for: str | None = None  # the client a trusted proxy named (X-Forwarded-For), else None

    @property
    def address(self) -> str:
        """The address a login budget is kept under: the forwarded client's behind a trusted proxy."""
        return self.forwarded_for or self.peer

    def journal_fields(self) -> dict[str, str]:
        fields = {"remote": self.peer}
        if self.forwarded_for is not None:
            fields["forwarded_for"] = self.forwarded_for
        return fields


@dataclass(frozen=True, slots=True)
class TrustedProxies:
    networks: tuple[IPNetwork, ...] = ()

    @classmethod
    def parse(cls, entries: Iterable[str], *, field: str = "panel.trusted_proxies") -> TrustedProxies:
        networks = []
        for index, entry in enumerate(entries):
            try:
                networks.append(ipaddress.ip_network(str(entry).strip(), strict=False))
            except ValueError:
                example = "e.g. 10.0.0.5, 10.0.0.0/24"
                raise UserError(
                    f"{field}[{index}]: {entry!r} is not an IP address or network ({example})"
                ) from None
        return cls(tuple(networks))

    def trusts(self, peer: str) -> bool:
        if not self.networks:
            return False
        try:
            address = ipaddress.ip_address(peer)
        except ValueError:
            return False
        return any(address in network for network in self.networks)

    def client(self, connection: HTTPConnection) -> ClientAddress:
        peer = connection.client.host if connection.client else "?"
        if not self.trusts(peer):
            return ClientAddress(peer)
        # The nearest proxy appends the address it saw last; take that one, the only one it vouches for.
        header = connection.headers.get("x-forwarded-for", "")
        named = header.rsplit(",", 1)[-1].strip()[:MAX_FORWARDED_CHARS]
        try:
            forwarded = str(ipaddress.ip_address(named))
        except ValueError:
            return ClientAddress(peer)  # a trusted proxy that said nothing usable: the peer it is
        return ClientAddress(peer, forwarded)
