"""The store proxy's HPACK reader (keyramp/targets/_hpack.py) against the ``hpack`` package's own
encoder and decoder: it follows the client's dynamic table exactly, and any bytes it cannot follow
raise ``HpackError`` alone (the relay then forwards blind), never anything else."""

from __future__ import annotations

import hpack
from hypothesis import given, settings
from hypothesis import strategies as st

from keyramp.targets._hpack import HeaderReader, HpackError

_NAMES = st.sampled_from([":path", "grpc-timeout", "x-goog-request-params", "authorization", "content-type",
                          "user-agent", "x-a", "x-b"])
_FIELD = st.tuples(_NAMES, st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=300),
                   st.booleans())  # the third: sensitive (never indexed)
Block = tuple[list[tuple[str, str, bool]], bool, int | None]
_BLOCK = st.tuples(st.lists(_FIELD, max_size=8), st.booleans(), st.sampled_from([None, None, 0, 64, 256, 4096]))


@settings(max_examples=80, deadline=None)
@given(blocks=st.lists(_BLOCK, min_size=1, max_size=12))
def test_the_reader_follows_the_encoders_table_through_any_sequence_of_blocks(blocks: list[Block]) -> None:
    encoder, decoder, reader = hpack.Encoder(), hpack.Decoder(), HeaderReader()
    for fields, huffman, resize in blocks:
        if resize is not None:
            encoder.header_table_size = resize  # a dynamic table size update opens the next block
        block = encoder.encode([hpack.NeverIndexedHeaderTuple(n, v) if s else (n, v) for n, v, s in fields],
                               huffman=huffman)
        decoded = decoder.decode(block)
        path, timeout = reader.read(block)
        expected = {n: v for n, v in decoded if n in (":path", "grpc-timeout")}  # the last of each wins
        assert (path, timeout) == tuple(expected[k].encode() if k in expected else None
                                        for k in (":path", "grpc-timeout"))
        # the same dynamic table, entry by entry (the reference: the hpack package's decoder)
        assert list(reader._dynamic) == list(decoder.header_table.dynamic_entries)


@settings(max_examples=150, deadline=None)
@given(prefix=st.lists(_BLOCK, max_size=3), junk=st.binary(max_size=64))
def test_bytes_it_cannot_follow_raise_hpack_error_only(prefix: list[Block], junk: bytes) -> None:
    encoder, reader = hpack.Encoder(), HeaderReader()
    for fields, huffman, _ in prefix:  # a table with entries, then anything
        reader.read(encoder.encode([(n, v) for n, v, _ in fields], huffman=huffman))
    try:
        reader.read(junk)
    except HpackError:
        pass
