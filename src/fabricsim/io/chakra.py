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
import io
import re
import struct
import zlib
from collections.abc import Iterator, Mapping
from pathlib import Path

from fabricsim.errors import FabricsimError
from fabricsim.io import protowire as pw
from fabricsim.limits import cap, cap_hint
from fabricsim.textfile import MAX_INPUT_CAP as INPUT_CAP
from fabricsim.workload.chakra import ChakraNode, ChakraRank

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


def _wire(kind: str) -> int:
    """The wire type a scalar of ``kind`` is sent with."""
    if kind in ("string", "bytes"):
        return pw.LENGTH
    if kind in ("double", "fixed64", "sfixed64"):
        return pw.FIXED64
    if kind in ("float", "fixed32", "sfixed32"):
        return pw.FIXED32
    return pw.VARINT


_DECODERS = {
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


def _element(kind: str, wire: int, raw: int | bytes) -> object:
    pw.expect(wire, _wire(kind), f"a {kind} attribute")
    if kind == "string":
        return bytes(raw).decode("utf-8", errors="replace")  # type: ignore[arg-type]
    if kind == "bytes":
        return bytes(raw)  # type: ignore[arg-type]
    return _DECODERS[kind](raw)


def _packed(kind: str, data: bytes) -> list[object]:
    wire = _wire(kind)
    if wire == pw.VARINT:
        return [_element(kind, wire, v) for v in pw.packed_varints(data)]
    width = 4 if wire == pw.FIXED32 else 8
    if len(data) % width:
        problem = f"malformed protobuf: packed {kind} list of {len(data)} bytes"
        raise FabricsimError("trace", problem, "give a whole .et file")
    return [_element(kind, wire, int.from_bytes(data[i : i + width], "little")) for i in range(0, len(data), width)]


def _list(kind: str, data: bytes) -> list[object]:
    out: list[object] = []
    for number, wire, value in pw.fields(data):
        if number != 1:
            continue
        if wire == pw.LENGTH and kind not in ("string", "bytes"):
            out.extend(_packed(kind, value))  # type: ignore[arg-type]
        else:
            out.append(_element(kind, wire, value))
    return out


def decode_attribute(data: bytes) -> tuple[str, object]:
    """(name, value) of one AttributeProto; a list attribute's value is a list."""
    name, value = "", None
    for number, wire, raw in pw.fields(data):
        if number == 1:
            pw.expect(wire, pw.LENGTH, "an attribute name")
            name = bytes(raw).decode("utf-8", errors="replace")  # type: ignore[arg-type]
        elif number in _SCALAR:
            value = _element(_SCALAR[number], wire, raw)
        elif 4 <= number <= 32 and number % 2 == 0:
            pw.expect(wire, pw.LENGTH, f"a {_SCALAR[number - 1]} list attribute")
            value = _list(_SCALAR[number - 1], raw)  # type: ignore[arg-type]
    return name, value


def _ids(wire: int, raw: int | bytes) -> list[int]:
    """Node ids of a dependency field: packed (length-delimited) or one varint."""
    if wire == pw.LENGTH:
        return pw.packed_varints(raw)  # type: ignore[arg-type]
    pw.expect(wire, pw.VARINT, "a node dependency")
    return [int(raw)]  # type: ignore[arg-type]


# Node fields read here -> (wire type, what it is); inputs, outputs, start time and storage are skipped
_NODE_FIELDS = {
    1: (pw.VARINT, "a node id"),
    2: (pw.LENGTH, "a node name"),
    3: (pw.VARINT, "a node type"),
    7: (pw.VARINT, "a node duration_micros"),
    10: (pw.LENGTH, "a node attribute"),
}


def decode_node(data: bytes) -> ChakraNode:
    """One Node message (inputs, outputs, start time and storage are not needed and skipped); a
    field sent with another wire type than ``et_def.proto`` declares is malformed."""
    values: dict[str, object] = {"id": 0, "name": "", "type": 0, "duration": 0}
    ctrl: list[int] = []
    deps: list[int] = []
    attrs: dict[str, object] = {}
    for number, wire, raw in pw.fields(data):
        if number in _NODE_FIELDS:
            pw.expect(wire, *_NODE_FIELDS[number])
        if number == 1:
            values["id"] = raw
        elif number == 2:
            values["name"] = bytes(raw).decode("utf-8", errors="replace")  # type: ignore[arg-type]
        elif number == 3:
            values["type"] = pw.signed32(raw)  # type: ignore[arg-type]  # an enum is an int32
        elif number in (4, 5):
            (ctrl if number == 4 else deps).extend(_ids(wire, raw))
        elif number == 7:
            values["duration"] = raw
        elif number == 10:
            key, value = decode_attribute(raw)  # type: ignore[arg-type]
            attrs[key] = value
    return ChakraNode(
        int(values["id"]),  # type: ignore[call-overload]
        str(values["name"]),
        int(values["type"]),  # type: ignore[call-overload]
        tuple(ctrl),
        tuple(deps),
        int(values["duration"]),  # type: ignore[call-overload]
        attrs,
    )


def _messages(data: bytes) -> Iterator[bytes]:
    pos = 0
    while pos < len(data):
        size, pos = pw.read_varint(data, pos)
        if pos + size > len(data):
            raise FabricsimError("trace", "malformed Chakra file: a message runs past the end", "give a whole .et file")
        yield data[pos : pos + size]
        pos += size


def _gunzip(data: bytes, where: str) -> bytes:
    """The decompressed contents, streamed and stopped at the ``INPUT_BYTES`` cap: a small file of
    zeros can expand a thousandfold (a gzip bomb)."""
    limit = cap(INPUT_CAP)
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as handle:
            out = handle.read(limit + 1)
    except (OSError, EOFError, zlib.error):
        raise FabricsimError("trace", f"{where}: corrupt gzip data", "give an intact .et or .et.gz file") from None
    if len(out) > limit:
        problem = f"{where} decompresses to more than the cap of {limit} bytes"
        raise FabricsimError("trace", problem, cap_hint(INPUT_CAP))
    return out


def _metadata(message: bytes) -> dict[str, object]:
    out = {}
    for number, wire, raw in pw.fields(message):
        if number == 2:
            pw.expect(wire, pw.LENGTH, "a GlobalMetadata attribute")
            name, value = decode_attribute(raw)  # type: ignore[arg-type]
            out[name] = value
    return out


def parse_chakra(data: bytes, rank: int, where: str = "") -> ChakraRank:
    """One rank's file contents (gzip or not) as a :class:`ChakraRank`; ``where`` names the file
    in errors. Nodes are decoded one message at a time, and a repeated node id stops the read at
    once (a file of zero bytes is a stream of empty, id-0 messages)."""
    where = where or f"rank {rank}"
    try:
        return _parse(data, rank, where)
    except FabricsimError as exc:
        if exc.problem.startswith(where):
            raise
        raise FabricsimError(exc.field, f"{where}: {exc.problem}", exc.fix) from None


def _parse(data: bytes, rank: int, where: str) -> ChakraRank:
    if data[:2] == b"\x1f\x8b":
        data = _gunzip(data, where)
    messages = _messages(data)
    first = next(messages, None)
    if first is None:
        raise FabricsimError("trace", f"{where}: empty trace", "give a Chakra .et file")
    metadata = _metadata(first)
    nodes, seen = [], set()
    for message in messages:
        node = decode_node(message)
        if node.id in seen:
            raise FabricsimError("trace", f"{where}: duplicate node id {node.id}", "give a valid Chakra trace")
        seen.add(node.id)
        nodes.append(node)
    return ChakraRank(rank, tuple(nodes), metadata)


def read_chakra_files(paths: list[str]) -> list[ChakraRank]:
    """Read one trace file per rank; ranks come from ``<prefix>.<rank>.et`` names or argument order.
    A file, and its decompressed contents, may hold at most the ``INPUT_BYTES`` cap."""
    ranks = []
    limit = cap(INPUT_CAP)
    for index, path in enumerate(paths):
        file = Path(path)
        try:
            if not file.is_file():
                raise FabricsimError("trace", f"{path} is not a file", "give Chakra .et files, one per rank")
            size = file.stat().st_size
            if size > limit:
                raise FabricsimError("trace", f"{path} holds {size} bytes, over the cap {limit}", cap_hint(INPUT_CAP))
            data = file.read_bytes()
        except OSError as exc:
            raise FabricsimError("trace", f"cannot read {path}: {exc.strerror}", "check the path") from None
        match = _RANK_RE.search(file.name)
        ranks.append(parse_chakra(data, int(match.group(1)) if match else index, path))
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
