"""The precomputed-state HMAC equals the standard library's, and the KDF is RFC 5869's HKDF."""

from __future__ import annotations

import hashlib
import hmac

from hypothesis import given, settings
from hypothesis import strategies as st

from firmware_protocol.constants import TAG_LEN
from firmware_protocol.crypto import compute_tag, derive_session_key, hmac_sha256, tag_matches


@settings(max_examples=300, deadline=None)
@given(key=st.binary(max_size=100), data=st.binary(max_size=300))
def test_hmac_matches_the_standard_library(key: bytes, data: bytes) -> None:
    assert hmac_sha256(key, data) == hmac.digest(key, data, "sha256")
    assert compute_tag(key, data) == hmac.digest(key, data, "sha256")[:TAG_LEN]
    assert tag_matches(key, data, compute_tag(key, data))
    assert not tag_matches(key, data + b"x", compute_tag(key, data))


def test_session_key_is_hkdf_sha256_rfc_5869() -> None:
    # RFC 5869 test case 1's construction, recomputed with plain hmac, for our inputs.
    device_key, nc, nd, device_id = bytes(range(32)), b"\xa0" * 16, b"\xb0" * 16, 0x1234
    prk = hmac.new(nc + nd, device_key, hashlib.sha256).digest()
    okm = hmac.new(
        prk, b"flushtable/1 session key" + device_id.to_bytes(4, "big") + b"\x01", hashlib.sha256
    ).digest()
    assert derive_session_key(device_key, nc, nd, device_id) == okm
    assert derive_session_key(device_key, nc, nd[:-1] + b"\x00", device_id) != okm
    assert derive_session_key(device_key, nc, nd, device_id + 1) != okm


def test_rfc_5869_test_case_1_with_our_extract_and_expand_steps() -> None:
    ikm = bytes.fromhex("0b" * 22)
    salt = bytes.fromhex("000102030405060708090a0b0c")
    info = bytes.fromhex("f0f1f2f3f4f5f6f7f8f9")
    prk = hmac_sha256(salt, ikm)
    assert prk.hex() == "077709362c2e32df0ddc3f0dc47bba6390b6c73bb50f9c3122ec844ad7c2b3e5"
    okm_first_block = hmac_sha256(prk, info + b"\x01")
    assert okm_first_block.hex().startswith(
        "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf"
    )
