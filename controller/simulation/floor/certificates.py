"""The floor's certificates on this machine: a CA of its own and a server certificate it signs
(the openssl CLI). A site uses its own PKI instead (docs/floor.md "Security")."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from controller.errors import ServerError


@dataclass(frozen=True, slots=True)
class TlsFiles:
    ca_cert: Path
    server_cert: Path
    server_key: Path


def make_ca(directory: Path, *, hosts: Sequence[str] = ("127.0.0.1", "localhost")) -> TlsFiles:
    """A certificate authority of our own and a server certificate it signs for ``hosts`` (openssl CLI).

    A site uses its own PKI instead; this is the demo's and the tests' (the CA key stays in
    ``directory``, mode 0600)."""
    if shutil.which("openssl") is None:
        raise ServerError("openssl is not installed (apt-get install openssl)")
    directory.mkdir(parents=True, exist_ok=True)
    ca_key, ca_cert = directory / "ca.key", directory / "ca.pem"
    key, csr, cert = directory / "server.key", directory / "server.csr", directory / "server.pem"
    ext = directory / "server.ext"
    alt = ",".join(f"IP:{h}" if h[0].isdigit() else f"DNS:{h}" for h in hosts)
    ext.write_text(
        f"subjectAltName={alt}\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\n"
    )

    def openssl(*args: str) -> None:
        result = subprocess.run(["openssl", *args], capture_output=True, text=True, check=False, timeout=60)
        if result.returncode != 0:
            raise ServerError(f"openssl {args[0]}: {result.stderr.strip().splitlines()[-1:]}")

    ec = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes")
    openssl(
        "req",
        "-x509",
        *ec,
        "-keyout",
        str(ca_key),
        "-out",
        str(ca_cert),
        "-days",
        "3650",
        "-subj",
        "/CN=flushtable floor CA",
    )
    openssl("req", *ec, "-keyout", str(key), "-out", str(csr), "-subj", "/CN=flushtable floor")
    openssl(
        "x509",
        "-req",
        "-in",
        str(csr),
        "-CA",
        str(ca_cert),
        "-CAkey",
        str(ca_key),
        "-CAcreateserial",
        "-out",
        str(cert),
        "-days",
        "825",
        "-extfile",
        str(ext),
    )
    for private in (ca_key, key):
        private.chmod(0o600)
    return TlsFiles(ca_cert, cert, key)
