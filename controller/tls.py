"""The TLS context every client of the floor's NATS servers connects with: the floor CA's certificate
trusted, TLS 1.2 at the least (Python's default context also checks the host name and requires the
server's certificate). One module below every layer, so the table's uplink, its progressive link and the
floor's harness connect alike without the link importing the uplink (controller/progressive/ sits below
controller/uplink/ in the import contracts, pyproject.toml)."""

from __future__ import annotations

import ssl
from pathlib import Path


def ssl_context(ca_file: Path) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(ca_file))
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    return context
