"""Software verification (docs/operations.md "Software verification"): the release manifest, its Ed25519
signature, the check at every start, and the seeded verification a lab or the floor asks for.

**The release manifest** names every file of the product as installed (every file under the packages
controller, drivers, firmware_protocol, sim_devices and table_names, byte for byte, compiled caches
aside) with its SHA-256, and every dependency the product installs (the transitive closure of its
requirements, extras aside) with its exact version and the SHA-256 of its ``RECORD``: pip writes in
RECORD the digest of each of the distribution's files, so the RECORD's digest pins the digest of every
one of them, and the start checks each file against its RECORD (the RECORD's digest alone would let a
file be changed in place under an unchanged RECORD). The manifest is signed with the maker's
Ed25519 key; the table's configuration holds the public key (``[software] public_key``).

**At every start** (before the journal is opened) ``verify_release`` checks, in this order: the
signature against the configured key; the manifest's kind (a development manifest is refused unless the
configuration allows it); every dependency's version, RECORD digest and files; every product file's
digest; no product file beyond the manifest's; no compiled cache Python would run in place of a product
source that holds other code; and no module on the import path beside the packages that neither the
release nor an installed distribution owns. The first failure refuses the start in one line naming the
file (``SoftwareRefused``). The release's digest (the SHA-256 of the signed manifest's canonical bytes)
is then journaled in ``software_verified``.

**Seeded verification** (``seeded_digests``): HMAC-SHA256(seed, bytes) of each product file as it is on
disk, and one aggregate HMAC over the sorted (path, file HMAC) lines. The seed is the verifier's, so a
stored answer cannot be replayed; the floor computes the same from the approved release it holds.

Pure functions over a ``root`` (the directory holding the packages) and a ``search_path`` (where
distributions are looked up), so tests verify a copy of the product, never the checkout.

The package, by what the code is about: ``manifest`` (the product's files and dependencies, the
release's digest), ``signing`` (the maker's key, the signature, the development release), ``verify``
(the check at every start) and ``seeded`` (the seeded verification). Its names are imported from here.
"""

from __future__ import annotations

from controller.software.manifest import (
    MANIFEST_FORMAT,
    MAX_MANIFEST_BYTES,
    PRODUCT_DISTRIBUTION,
    PRODUCT_PACKAGES,
    SIGNED_FORMAT,
    SoftwareRefused,
    build_manifest,
    canonical,
    dependency_entry,
    dependency_names,
    product_files,
    product_root,
    release_digest,
    sha256_file,
)
from controller.software.seeded import (
    SeededDigest,
    check_release_files,
    parse_seed,
    release_files_from,
    seeded_digests,
    seeded_digests_of_root,
)
from controller.software.signing import (
    DEV_KEY,
    DEV_MANIFEST,
    check_signature,
    generate_key,
    key_id,
    load_private_key,
    make_dev_release,
    parse_public_key,
    public_key_hex,
    read_signed,
    sign_manifest,
)
from controller.software.verify import (
    VerifiedRelease,
    archive_on_path,
    cache_not_of_its_source,
    changed_dependency_file,
    distribution_not_in_release,
    import_directories,
    owned_top_level,
    read_software_section,
    unowned_modules,
    verify_before_import,
    verify_release,
)

__all__ = [
    "DEV_KEY",
    "DEV_MANIFEST",
    "MANIFEST_FORMAT",
    "MAX_MANIFEST_BYTES",
    "PRODUCT_DISTRIBUTION",
    "PRODUCT_PACKAGES",
    "SIGNED_FORMAT",
    "SeededDigest",
    "SoftwareRefused",
    "VerifiedRelease",
    "archive_on_path",
    "build_manifest",
    "cache_not_of_its_source",
    "canonical",
    "changed_dependency_file",
    "check_release_files",
    "check_signature",
    "dependency_entry",
    "dependency_names",
    "distribution_not_in_release",
    "generate_key",
    "import_directories",
    "key_id",
    "load_private_key",
    "make_dev_release",
    "owned_top_level",
    "parse_public_key",
    "parse_seed",
    "product_files",
    "product_root",
    "public_key_hex",
    "read_signed",
    "read_software_section",
    "release_digest",
    "release_files_from",
    "seeded_digests",
    "seeded_digests_of_root",
    "sha256_file",
    "sign_manifest",
    "unowned_modules",
    "verify_before_import",
    "verify_release",
]
