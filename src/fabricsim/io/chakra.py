"""Read and write Chakra execution traces (layer L10): ``ChakraProtoMsg`` protobuf, one file per rank.

File layout (mlcommons/chakra ``src/third_party/utils/protolib.py``): a sequence of messages, each
prefixed by its length as a varint; the first is a ``GlobalMetadata`` (version 1, attr 2), then
``Node`` messages (``schema/protobuf/et_def.proto``: id 1, name 2, type 3, ctrl_deps 4, data_deps 5,
start_time_micros 6, duration_micros 7, attr 10). A file may be gzip-compressed. An
``AttributeProto`` holds its name (1) and one value of a oneof of scalar (odd numbers 3..31) and
list (even numbers 4..32) types; producers use different integer widths for the same attribute, so
every width is accepted. Files named ``<prefix>.<rank>.et`` give their rank; otherwise the order
of the arguments does.
"""

from __future__ import annotations

import gzip
import re
import struct
from collections.abc import Mapping
from pathlib import Path

from fabricsim.errors import FabricsimError
from fabricsim.io import protowire as pw
from fabricsim.workload.chakra import ChakraNode, ChakraRank

MAX_TRACE_BYTES = 2 * 2**30
_RANK_RE = re.compile(r"\.(\d+)\.et(?:\.gz)?$")
_SCALAR = {
    3: "double",
    5: "float",
    7: "int",
    9: "int",
    11: "uint",
    13: "uint",
    15: "sint",
    17: "sint",
    19: "fixed32",
    21: "fixed64",
    23: "sfixed32",
    25: "sfixed64",
    27: "bool",
    29: "string",
    31: "bytes",
}
_WRITE_NUMBER = {
    "double": 3,
    "int32": 7,
    "int64": 9,
    "uint32": 11,
    "uint64": 13,
    "sint64": 17,
    "bool": 27,
    "string": 29,
    "bool_list": 28,
    "int64_list": 10,
    "uint64_list": 14,
    "string_list": 30,
}


def _element(kind: str, wire: int, raw: int | bytes) -> object:
    if kind == "string":
        return bytes(raw).decode("utf-8", errors="replace")
    if kind == "bytes":
        return bytes(raw)
    if not isinstance(raw, int):
        raise FabricsimError("trace", f"malformed protobuf: a {kind} attribute is length-delimited", "")
    decoders = {
        "int": pw.signed64,
        "uint": int,
        "sint": pw.unzigzag,
        "bool": bool,
        "fixed32": int,
        "fixed64": int,
        "sfixed32": pw.signed32,
        "sfixed64": pw.signed64,
        "double": pw.as_double,
        "float": pw.as_float,
    }
    return decoders[kind](raw)


def _packed(kind: str, data: bytes) -> list[object]:
    if kind in ("fixed32", "sfixed32", "float"):
        return [_element(kind, pw.FIXED32, int.from_bytes(data[i : i + 4], "little")) for i in range(0, len(data), 4)]
    if kind in ("fixed64", "sfixed64", "double"):
        return [_element(kind, pw.FIXED64, int.from_bytes(data[i : i + 8], "little")) for i in range(0, len(data), 8)]
    return [_element(kind, pw.VARINT, v) for v in pw.packed_varints(data)]


def _list(kind: str, data: bytes) -> list[object]:
    out: list[object] = []
    for number, wire, value in pw.fields(data):
        if number != 1:
            continue
        if wire == pw.LENGTH and kind not in ("string", "bytes"):
            out.extend(_packed(kind, bytes(value)))
        else:
            out.append(_element(kind, wire, value))
    return out


def decode_attribute(data: bytes) -> tuple[str, object]:
    """(name, value) of one AttributeProto; a list attribute's value is a list."""
    name, value = "", None
    for number, wire, raw in pw.fields(data):
        if number == 1:
            name = bytes(raw).decode("utf-8", errors="replace")
        elif number in _SCALAR:
            value = _element(_SCALAR[number], wire, raw)
        elif 4 <= number <= 32 and number % 2 == 0:
            value = _list(_SCALAR[number - 1], bytes(raw))
    return name, value


def _ids(wire: int, raw: int | bytes) -> list[int]:
    return pw.packed_varints(bytes(raw)) if wire == pw.LENGTH else [int(raw)]


def decode_node(data: bytes) -> ChakraNode:
    """One Node message (inputs, outputs, start time and storage are not needed and skipped)."""
    values: dict[str, object] = {"id": 0, "name": "", "type": 0, "duration": 0}
    ctrl: list[int] = []
    deps: list[int] = []
    attrs: dict[str, object] = {}
    for number, wire, raw in pw.fields(data):
        if number == 1:
            values["id"] = int(raw)
        elif number == 2:
            values["name"] = bytes(raw).decode("utf-8", errors="replace")
        elif number == 3:
            values["type"] = int(raw)
        elif number == 4:
            ctrl.extend(_ids(wire, raw))
        elif number == 5:
            deps.extend(_ids(wire, raw))
        elif number == 7:
            values["duration"] = int(raw)
        elif number == 10:
            key, value = decode_attribute(bytes(raw))
            attrs[key] = value
    return ChakraNode(
        int(values["id"]),
        str(values["name"]),
        int(values["type"]),
        tuple(ctrl),
        tuple(deps),
        int(values["duration"]),
        attrs,
    )


def _messages(data: bytes) -> list[bytes]:
    out, pos = [], 0
    while pos < len(data):
        size, pos = pw.read_varint(data, pos)
        if pos + size > len(data):
            raise FabricsimError("trace", "malformed Chakra file: a message runs past the end", "give a whole .et file")
        out.append(data[pos : pos + size])
        pos += size
    return out


def parse_chakra(data: bytes, rank: int) -> ChakraRank:
    """One rank's file contents (gzip or not) as a :class:`ChakraRank`."""
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError):
            raise FabricsimError("trace", "corrupt gzip data", "give an intact .et or .et.gz file") from None
    messages = _messages(data)
    if not messages:
        raise FabricsimError("trace", f"rank {rank}: empty trace", "give a Chakra .et file")
    metadata = dict(decode_attribute(bytes(raw)) for number, _, raw in pw.fields(messages[0]) if number == 2)
    nodes = tuple(decode_node(message) for message in messages[1:])
    return ChakraRank(rank, nodes, metadata)


def read_chakra_files(paths: list[str]) -> list[ChakraRank]:
    """Read one trace file per rank; ranks come from ``<prefix>.<rank>.et`` names or argument order."""
    ranks = []
    for index, path in enumerate(paths):
        file = Path(path)
        try:
            if not file.is_file():
                raise FabricsimError("trace", f"{path} is not a file", "give Chakra .et files, one per rank")
            if file.stat().st_size > MAX_TRACE_BYTES:
                raise FabricsimError("trace", f"{path} is larger than {MAX_TRACE_BYTES >> 30} GiB")
            data = file.read_bytes()
        except OSError as exc:
            raise FabricsimError("trace", f"cannot read {path}: {exc.strerror}", "check the path") from None
        match = _RANK_RE.search(file.name)
        ranks.append(parse_chakra(data, int(match.group(1)) if match else index))
    return sorted(ranks, key=lambda r: r.rank)


def _attribute(name: str, value: object, kind: str | None) -> bytes:
    if kind is None:
        if isinstance(value, bool):
            kind = "bool"
        elif isinstance(value, int):
            kind = "int64" if value < 0 else "uint64"
        elif isinstance(value, float):
            kind = "double"
        elif isinstance(value, str):
            kind = "string"
        elif isinstance(value, (list, tuple)) and all(isinstance(v, bool) for v in value):
            kind = "bool_list"
        else:
            kind = (
                "string_list"
                if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value)
                else "int64_list"
            )
    number = _WRITE_NUMBER[kind]
    body = pw.bytes_field(1, name.encode())
    if kind == "double":
        return body + pw.key(number, pw.FIXED64) + struct_double(float(value))  # type: ignore[arg-type]
    if kind == "string":
        return body + pw.bytes_field(number, str(value).encode())
    if kind == "string_list":
        items = b"".join(pw.bytes_field(1, str(v).encode()) for v in value)  # type: ignore[union-attr]
        return body + pw.bytes_field(number, items)
    if kind.endswith("_list"):
        packed = b"".join(pw.write_varint(int(v)) for v in value)  # type: ignore[union-attr]
        return body + pw.bytes_field(number, pw.bytes_field(1, packed))
    encoded = pw.zigzag(int(value)) if kind == "sint64" else int(value)  # type: ignore[arg-type]
    return body + pw.varint_field(number, encoded)


def struct_double(value: float) -> bytes:
    return struct.pack("<d", value)


def encode_node(node: ChakraNode, kinds: Mapping[str, str] | None = None) -> bytes:
    """A Node message; ``kinds`` picks each attribute's protobuf type by name (default: inferred,
    integers as uint64, or int64 when negative)."""
    kinds = kinds or {}
    out = pw.varint_field(1, node.id) + pw.bytes_field(2, node.name.encode()) + pw.varint_field(3, node.type)
    if node.ctrl_deps:
        out += pw.bytes_field(4, b"".join(pw.write_varint(d) for d in node.ctrl_deps))
    if node.data_deps:
        out += pw.bytes_field(5, b"".join(pw.write_varint(d) for d in node.data_deps))
    out += pw.varint_field(7, node.duration_micros)
    for name, value in node.attrs.items():
        out += pw.bytes_field(10, _attribute(name, value, kinds.get(name)))
    return out


def encode_chakra(rank: ChakraRank, kinds: Mapping[str, str] | None = None, version: str = "0.0.4") -> bytes:
    """One rank's file: GlobalMetadata then the nodes, each length-prefixed."""
    metadata = pw.bytes_field(1, version.encode())
    for name, value in rank.metadata.items():
        metadata += pw.bytes_field(2, _attribute(name, value, None))
    messages = [metadata, *(encode_node(node, kinds) for node in rank.nodes)]
    return b"".join(pw.write_varint(len(m)) + m for m in messages)
