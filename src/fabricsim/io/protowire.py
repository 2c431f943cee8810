"""The protobuf wire format, just enough to read and write Chakra traces (layer L10).

Wire types (protobuf encoding guide): 0 varint, 1 fixed64, 2 length-delimited, 5 fixed32. Proto3
packs repeated scalars into one length-delimited field; readers must also accept them unpacked.
Signed ``int32``/``int64`` are two's complement varints (10 bytes when negative), ``sint*`` are
zigzag-coded. Written by hand so that fabricsim needs no protobuf runtime or generated code.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

from fabricsim.errors import FabricsimError

VARINT, FIXED64, LENGTH, FIXED32 = 0, 1, 2, 5
WIRE_NAMES = {VARINT: "varint", FIXED64: "fixed64", LENGTH: "length-delimited", FIXED32: "fixed32"}
_MASK64 = (1 << 64) - 1


def _bad(problem: str) -> FabricsimError:
    return FabricsimError("trace", f"malformed protobuf: {problem}", "give a Chakra .et file (ChakraProtoMsg)")


def read_varint(data: bytes, pos: int) -> tuple[int, int]:
    """(unsigned value, next position) of the varint at ``pos``; at most 10 bytes and 64 bits."""
    result, shift = 0, 0
    while True:
        if pos >= len(data):
            raise _bad("truncated varint")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if result >> 64:  # the tenth byte may carry one bit only
            raise _bad("varint over 64 bits")
        if not byte & 0x80:
            return result, pos
        shift += 7
        if shift >= 70:
            raise _bad("varint longer than 10 bytes")


def fields(data: bytes) -> Iterator[tuple[int, int, int | bytes]]:
    """(field number, wire type, value) of each field of one message: ints for varint/fixed
    (fixed as raw unsigned), bytes for length-delimited."""
    pos = 0
    while pos < len(data):
        key, pos = read_varint(data, pos)
        number, wire = key >> 3, key & 7
        if number == 0:  # field numbers start at 1; a zero key is not a field
            raise _bad("field number 0")
        if wire == VARINT:
            value, pos = read_varint(data, pos)
        elif wire == FIXED64:
            if pos + 8 > len(data):
                raise _bad("truncated fixed64")
            value, pos = int.from_bytes(data[pos : pos + 8], "little"), pos + 8
        elif wire == FIXED32:
            if pos + 4 > len(data):
                raise _bad("truncated fixed32")
            value, pos = int.from_bytes(data[pos : pos + 4], "little"), pos + 4
        elif wire == LENGTH:
            size, pos = read_varint(data, pos)
            if pos + size > len(data):
                raise _bad("length-delimited field runs past the message")
            value, pos = data[pos : pos + size], pos + size
        else:
            raise _bad(f"unsupported wire type {wire}")
        yield number, wire, value


def expect(wire: int, wanted: int, what: str) -> None:
    """Refuse a field sent with another wire type than its declared type uses (a length where a
    number belongs would be read as a byte count, or a number as a huge allocation)."""
    if wire != wanted:
        raise _bad(f"{what} has wire type {WIRE_NAMES.get(wire, wire)}, expected {WIRE_NAMES[wanted]}")


def packed_varints(data: bytes) -> list[int]:
    out, pos = [], 0
    while pos < len(data):
        value, pos = read_varint(data, pos)
        out.append(value)
    return out


def signed64(value: int) -> int:
    """A varint read as int64 (two's complement)."""
    value &= _MASK64
    return value - (1 << 64) if value >> 63 else value


def signed32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >> 31 else value


def unzigzag(value: int) -> int:
    return (value >> 1) ^ -(value & 1)


def as_double(raw: int) -> float:
    return struct.unpack("<d", raw.to_bytes(8, "little"))[0]


def as_float(raw: int) -> float:
    return struct.unpack("<f", raw.to_bytes(4, "little"))[0]


def write_varint(value: int) -> bytes:
    value &= _MASK64  # negative int32/int64 are written as 10-byte two's complement
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def key(number: int, wire: int) -> bytes:
    return write_varint(number << 3 | wire)


def varint_field(number: int, value: int) -> bytes:
    return key(number, VARINT) + write_varint(value)


def bytes_field(number: int, value: bytes) -> bytes:
    return key(number, LENGTH) + write_varint(len(value)) + value


def zigzag(value: int) -> int:
    return (value << 1) ^ (value >> 63)
