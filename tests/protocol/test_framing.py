"""Framing: any cut of a stream decodes the same; garbage never raises and never becomes a frame."""

from __future__ import annotations

import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from firmware_protocol.constants import (
    KIND_DATA,
    MAX_ENCODED_FRAME_LEN,
    MAX_FRAME_LEN,
    SENDER_CONTROLLER,
    SENDER_DEVICE,
)
from firmware_protocol.errors import FrameError
from firmware_protocol.framing import DecodedFrame, FrameDecoder, RefusedFrame, encode_frame, parse_frame
from firmware_protocol.messages import ShowText, decode_message
from tests.protocol.helpers import DEVICE_KEY
from tests.protocol.strategies import any_message

frames = st.builds(
    lambda message, sender, seq, device_id: encode_frame(
        KIND_DATA, sender, device_id, seq, message.encode(), key=DEVICE_KEY
    ),
    any_message,
    st.sampled_from((SENDER_CONTROLLER, SENDER_DEVICE)),
    st.integers(0, 0xFFFF_FFFF),
    st.integers(0, 0xFFFF_FFFF),
)


def decode_all(pieces: list[bytes]) -> list[DecodedFrame | RefusedFrame]:
    decoder = FrameDecoder()
    results: list[DecodedFrame | RefusedFrame] = []
    for piece in pieces:
        results += decoder.feed(piece)
        assert decoder.buffered <= MAX_ENCODED_FRAME_LEN
    return results


def split(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({cut % (len(data) + 1) for cut in cuts})
    return [data[start:end] for start, end in zip([0, *points], [*points, len(data)], strict=True)]


@settings(max_examples=200, deadline=None)
@given(
    stream_frames=st.lists(frames, min_size=1, max_size=8), cuts=st.lists(st.integers(0, 10_000), max_size=20)
)
def test_a_stream_cut_anywhere_decodes_the_same(stream_frames: list[bytes], cuts: list[int]) -> None:
    stream = b"".join(stream_frames)
    whole = decode_all([stream])
    assert all(isinstance(item, DecodedFrame) for item in whole)
    assert len(whole) == len(stream_frames)
    assert decode_all(split(stream, cuts)) == whole
    assert decode_all([bytes([byte]) for byte in stream]) == whole
    # and what was framed is what was sent
    for item, wire in zip(whole, stream_frames, strict=True):
        assert isinstance(item, DecodedFrame)
        assert (
            encode_frame(
                item.frame.kind,
                item.frame.sender,
                item.frame.device_id,
                item.frame.seq,
                item.frame.payload,
                key=DEVICE_KEY,
            )
            == wire
        )
        decode_message(item.frame.payload)


@settings(max_examples=300, deadline=None)
@given(garbage=st.binary(max_size=600), cuts=st.lists(st.integers(0, 10_000), max_size=10))
def test_garbage_alone_never_raises_and_never_yields_a_frame(garbage: bytes, cuts: list[int]) -> None:
    results = decode_all(split(garbage, cuts))
    assert all(isinstance(item, RefusedFrame) for item in results)


@st.composite
def garbled_stream(draw: st.DrawFn) -> tuple[bytes, list[bytes], int]:
    """(stream, the frames in it, which one took garbage inside it)."""
    stream_frames = draw(st.lists(frames, min_size=2, max_size=5))
    victim = draw(st.integers(0, len(stream_frames) - 1))
    hit = stream_frames[victim]
    position = draw(st.integers(2, len(hit) - 2))  # after the first COBS byte, before the last delimiter
    damaged = hit[:position] + draw(st.binary(min_size=1, max_size=40)) + hit[position:]
    before, after = draw(st.binary(max_size=300)), draw(st.binary(max_size=300))
    middle = b"".join(stream_frames[:victim]) + damaged + b"".join(stream_frames[victim + 1 :])
    return before + middle + after, stream_frames, victim


@settings(max_examples=300, deadline=None)
@given(garbled=garbled_stream())
def test_garbage_before_inside_and_after_frames_costs_only_the_frame_it_hits(
    garbled: tuple[bytes, list[bytes], int],
) -> None:
    stream, stream_frames, victim = garbled
    decoded = [item.frame for item in decode_all([stream]) if isinstance(item, DecodedFrame)]
    originals = [
        item.frame for wire in stream_frames for item in decode_all([wire]) if isinstance(item, DecodedFrame)
    ]
    untouched = [frame for i, frame in enumerate(originals) if i != victim]
    # Every untouched frame survives, in order, and nothing decodes that was not sent. (Garbage may
    # rebuild a copy of a frame that was sent - a delimiter and the start of a highly regular frame's
    # COBS bytes, say - which is why this is a subsequence check: a copy is a duplicate, for the Link.)
    remaining = iter(decoded)
    assert all(any(frame == seen for seen in remaining) for frame in untouched)
    assert all(frame in originals for frame in decoded)


def test_a_stream_without_delimiters_is_held_to_the_bound_and_reported_once() -> None:
    decoder = FrameDecoder()
    results = []
    for _ in range(100):
        results += decoder.feed(b"\x41" * 97)
        assert decoder.buffered <= MAX_ENCODED_FRAME_LEN
    assert [item.code for item in results if isinstance(item, RefusedFrame)] == ["frame_too_long"]
    # the next delimiter resynchronises: a good frame after it decodes
    wire = encode_frame(KIND_DATA, SENDER_CONTROLLER, 7, 1, ShowText(text="ok").encode(), key=DEVICE_KEY)
    after = decoder.feed(wire)
    assert [type(item) for item in after] == [DecodedFrame]


def test_the_largest_frame_fits_and_one_more_byte_does_not() -> None:
    largest_text = "x" * 120
    wire = encode_frame(
        KIND_DATA, SENDER_CONTROLLER, 7, 1, ShowText(text=largest_text).encode(), key=DEVICE_KEY
    )
    assert len(wire) - 2 <= MAX_ENCODED_FRAME_LEN
    body = bytes(range(1, 200)) * 2
    body = body[: MAX_FRAME_LEN + 1 - 4]
    body += zlib.crc32(body).to_bytes(4, "big")
    [item] = FrameDecoder().feed(b"\x00" + b"\x01" + body + b"\x00")
    assert isinstance(item, RefusedFrame)
    with pytest.raises(FrameError, match="bad_length"):
        parse_frame(body)


def test_offsets_point_at_each_frame() -> None:
    wire = encode_frame(KIND_DATA, SENDER_CONTROLLER, 7, 1, ShowText(text="a").encode(), key=DEVICE_KEY)
    results = FrameDecoder().feed(b"junk" + wire + wire)
    assert [(type(item).__name__, item.offset) for item in results] == [
        ("RefusedFrame", 0),
        ("DecodedFrame", 5),
        ("DecodedFrame", 5 + len(wire)),
    ]


@settings(max_examples=100, deadline=None)
@given(cuts=st.lists(st.integers(0, 100_000), max_size=30), junk=st.binary(max_size=50))
def test_a_capture_cut_anywhere_gives_the_same_reports(cuts: list[int], junk: bytes) -> None:
    from firmware_protocol.capture import CaptureDecoder
    from firmware_protocol.vector_inputs import VECTOR_DEVICE_KEY
    from firmware_protocol.vectors import build_vectors

    stream = junk.join(bytes.fromhex(vector["frame"]) for vector in build_vectors())
    whole = CaptureDecoder([VECTOR_DEVICE_KEY])
    expected = whole.feed(stream) + whole.finish()
    pieces = CaptureDecoder([VECTOR_DEVICE_KEY])
    got = [report for piece in split(stream, cuts) for report in pieces.feed(piece)] + pieces.finish()
    assert got == expected
    assert sum(1 for report in expected if report["ok"] and report["verified"]) >= 37
