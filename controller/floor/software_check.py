"""The floor's seeded software verification of a table (docs/operations.md "Software verification").

``flushtable floor verify-software TABLE`` (or a test) holds the **approved release**: the maker's signed
manifest, checked against the casino's public key, and the release's files (a wheel, or a directory
holding the packages), checked file for file against that manifest before use. It chooses a fresh
random seed, computes HMAC-SHA256(seed, file) over the approved files and their aggregate
(controller/software/seeded.py ``seeded_digests``, the same code the table runs), asks the table over NATS
(request/reply on ``flushtable_verify.<site>.<table>``: only that table may listen there, and it may only
answer), and records the outcome in ``floor_software_checks`` (append-only): **match**, **mismatch** or
**no_answer**. A mismatch or no answer raises a floor alert (``software_mismatch``,
``software_no_answer``). The table journals each answer (``software_checked``), so the floor's record and
the table's can be compared entry for entry.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import nats
import nats.errors
import psycopg

from controller import software
from controller.errors import UserError
from controller.floor.service_settings import FloorNatsSettings, floor_nats_options
from controller.uplink.wire import verify_subject

DEFAULT_TIMEOUT_S = 60.0  # a table hashes its ~200 files in well under a second, even loaded
SEED_BYTES = 32

Outcome = Literal["match", "mismatch", "no_answer"]


@dataclass(frozen=True, slots=True)
class ApprovedRelease:
    release: str
    digest: str  # the signed manifest's release digest
    files: dict[str, bytes]

    def expected(self, seed: bytes) -> software.SeededDigest:
        return software.seeded_digests(seed, self.files.items())


def load_approved_release(release: Path, manifest: Path, public_key: bytes) -> ApprovedRelease:
    """The approved release the floor holds, refused in one line unless its manifest's signature
    verifies under the casino's key and every file is the manifest's."""
    signed = software.read_signed(manifest)
    checked = software.check_signature(signed, public_key, manifest)
    try:
        files = software.release_files_from(release)
    except OSError as error:
        raise UserError(f"{release}: cannot read the approved release: {error.strerror or error}") from None
    software.check_release_files(files, checked, release)
    return ApprovedRelease(str(checked.get("release", "")), software.release_digest(checked), files)


@dataclass(frozen=True, slots=True)
class CheckRecord:
    check_id: int
    table_id: str
    outcome: Outcome
    expected: str
    answered: str | None
    detail: str

    def summary(self) -> str:
        text = f"table {self.table_id}: software check {self.check_id}: {self.outcome}"
        return f"{text} ({self.detail})" if self.detail else text


async def ask_table(
    settings: FloorNatsSettings,
    *,
    site: str,
    table_id: str,
    seed: bytes,
    requested_by: str,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> dict[str, Any] | None:
    """The table's answer to one seeded request, or None when it gave none in time (or none at all).
    Connected as every floor process connects (``floor_nats_options``)."""
    client = await nats.connect(**floor_nats_options(settings, "flushtable-floor-verify"))
    try:
        body = json.dumps({"seed": seed.hex(), "requested_by": requested_by}).encode()
        try:
            reply = await client.request(verify_subject(site, table_id), body, timeout=timeout_s)
        except (nats.errors.TimeoutError, nats.errors.NoRespondersError):
            return None
        try:
            answer = json.loads(reply.data)
        except ValueError:
            return {"error": "the answer is not JSON"}
        return answer if isinstance(answer, dict) else {"error": "the answer is not an object"}
    finally:
        await client.close()


def judge(
    expected: software.SeededDigest, seed: bytes, answer: Mapping[str, Any] | None
) -> tuple[Outcome, str]:
    if answer is None:
        return "no_answer", "the table did not answer"
    if "error" in answer:
        return "mismatch", f"the table answered an error: {str(answer['error'])[:200]}"
    if answer.get("seed") != seed.hex():
        return "mismatch", "the table answered another seed"
    if answer.get("aggregate") != expected.aggregate:
        files = answer.get("files")
        return (
            "mismatch",
            f"aggregate differs (the table hashed {files} files, the release has {len(expected.files)})",
        )
    return "match", ""


def record_check(  # noqa: PLR0913 - keyword-only fields of one check's row
    connection: psycopg.Connection[Any],
    *,
    table_id: str,
    requested_by: str,
    seed: bytes,
    approved: ApprovedRelease,
    expected: software.SeededDigest,
    answer: Mapping[str, Any] | None,
) -> CheckRecord:
    """The outcome in ``floor_software_checks``, and an alert unless it matched, in one transaction."""
    outcome, detail = judge(expected, seed, answer)
    answered = None if answer is None else answer.get("aggregate")
    table_digest = None if answer is None else answer.get("release_digest")
    with connection.transaction():
        row = connection.execute(
            "INSERT INTO floor_software_checks (table_id, requested_by, seed, approved_release, "
            "approved_digest, expected, answered, table_release_digest, outcome, detail) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s) RETURNING check_id",
            (
                table_id,
                requested_by,
                seed.hex(),
                approved.release,
                approved.digest,
                expected.aggregate,
                answered if isinstance(answered, str) else None,
                table_digest if isinstance(table_digest, str) else None,
                outcome,
                detail,
            ),
        ).fetchone()
        assert row is not None
        check_id = int(row[0])
        if outcome != "match":
            connection.execute(
                "INSERT INTO floor_alerts (table_id, origin, kind, message) VALUES (%s, 'floor', %s, %s)",
                (
                    table_id,
                    f"software_{outcome}",
                    f"software check {check_id}: {detail} (approved release {approved.release}, "
                    f"{approved.digest[:16]})",
                ),
            )
    return CheckRecord(check_id, table_id, outcome, expected.aggregate, answered, detail)


def new_seed() -> bytes:
    return secrets.token_bytes(SEED_BYTES)
