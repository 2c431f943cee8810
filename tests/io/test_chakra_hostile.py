"""``fabricsim replay`` on crafted Chakra files (issue 27, reproducers #9-#15): each is one
``error:`` line and exit 2, never a traceback, a huge allocation or a decompression bomb. The files
are built with fabricsim's own protobuf encoder (:mod:`fabricsim.io.protowire`)."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from fabricsim.cli.app import main
from fabricsim.errors import FabricsimError
from fabricsim.io import protowire as pw
from fabricsim.io.chakra import parse_chakra
from fabricsim.workload.chakra import NodeType

META = pw.bytes_field(1, b"0.0.4")


def node(node_id: int = 1, kind: int = NodeType.COMP, *extra: bytes) -> bytes:
    """A Node message: id, name, type, duration 5 us, then ``extra`` fields as given."""
    fields = pw.varint_field(1, node_id) + pw.bytes_field(2, b"n") + pw.varint_field(3, kind) + pw.varint_field(7, 5)
    return fields + b"".join(extra)


def attribute(name: bytes, *value: bytes) -> bytes:
    return pw.bytes_field(1, name) + b"".join(value)


def et_file(messages: list[bytes]) -> bytes:
    return b"".join(pw.write_varint(len(m)) + m for m in messages)


def _replay(tmp_path: Path, capsys: pytest.CaptureFixture[str], data: bytes, name: str = "t.0.et") -> str:
    path = tmp_path / name
    path.write_bytes(data)
    rc = main(["replay", str(path), "--json"])
    captured = capsys.readouterr()
    assert rc == 2, captured.out
    assert captured.out == "" and captured.err.startswith("error: ") and captured.err.count("\n") == 1, captured.err
    return captured.err


PACKED_5 = pw.bytes_field(1, b"12345")
TEN_BYTE_2_64 = bytes([0xFF] * 9 + [0x02])  # a 10-byte varint of 2^64 + ...: over 64 bits

CASES = {
    # reproducer #9: zlib.error before
    "gzip magic then garbage": (b"\x1f\x8b\x08\x00" + bytes(range(7, 200)), "corrupt gzip"),
    "truncated gzip": (gzip.compress(et_file([META, node()]) * 50, mtime=0)[:-12], "corrupt gzip"),
    # #10: node name (2) as a varint 2^40: bytes(2**40) was allocated
    "name as varint": (et_file([META, node(1, NodeType.COMP, pw.varint_field(2, 2**40))]), "node name has wire type"),
    # #11: a string attribute (29) as a varint 2^62
    "string attribute as varint": (
        et_file([META, node(1, NodeType.COMP, pw.bytes_field(10, attribute(b"s", pw.varint_field(29, 2**62))))]),
        "string attribute has wire type varint",
    ),
    # #12: the attribute field (10) as a varint 2^63: OverflowError before
    "attr as varint": (et_file([META, node(1, NodeType.COMP, pw.varint_field(10, 2**63))]), "node attribute"),
    # #13: the node id (1) length-delimited: ValueError before
    "id as bytes": (et_file([META, pw.bytes_field(1, b"abc")]), "node id has wire type length-delimited"),
    # #14: metadata only: TypeError in engine/simulate.py before
    "metadata only": (et_file([META]), "no nodes"),
    # #15: node type 99: ValueError (not a NodeType) before
    "unknown node type": (et_file([META, node(7, 99)]), "node 7 (n): unknown node type 99"),
    "length past the end": (et_file([META, pw.key(2, pw.LENGTH) + pw.write_varint(2**40)]), "runs past"),
    "varint over 64 bits": (et_file([META, pw.key(1, pw.VARINT) + TEN_BYTE_2_64]), "over 64 bits"),
    "double attribute as varint": (
        et_file([META, node(1, NodeType.COMP, pw.bytes_field(10, attribute(b"d", pw.varint_field(3, 2**63))))]),
        "double attribute has wire type varint",
    ),
    "packed fixed64 list of 5 bytes": (  # DoubleList (4) whose packed values (1) hold 5 bytes
        et_file([META, node(1, NodeType.COMP, pw.bytes_field(10, attribute(b"l", pw.bytes_field(4, PACKED_5))))]),
        "packed double list of 5 bytes",
    ),
    "metadata attribute as varint": (et_file([META + pw.varint_field(2, 2**50), node()]), "GlobalMetadata attribute"),
    "field number 0": (et_file([META, b"\x00\x00"]), "field number 0"),
    "zeros": (bytes(4096), "duplicate node id 0"),  # a stream of empty messages
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_crafted_file_is_one_error_line(case, tmp_path, capsys):
    data, expected = CASES[case]
    err = _replay(tmp_path, capsys, data)
    assert expected in err, err


def test_gzip_bomb_stops_at_the_input_cap(tmp_path, capsys, monkeypatch):
    # 600 MiB of zeros in 0.6 MB was decompressed whole, then looped over; here 8 MiB under a 1 MiB cap
    monkeypatch.setenv("FABRICSIM_MAX_INPUT_BYTES", str(2**20))
    bomb = gzip.compress(bytes(8 * 2**20), mtime=0)
    assert len(bomb) < 2**20
    err = _replay(tmp_path, capsys, bomb, "bomb.0.et.gz")
    assert f"decompresses to more than the cap of {2**20} bytes" in err and "FABRICSIM_MAX_INPUT_BYTES" in err


def test_gzip_trace_under_the_cap_still_replays(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("FABRICSIM_MAX_INPUT_BYTES", str(2**20))
    path = tmp_path / "ok.0.et.gz"
    path.write_bytes(gzip.compress(et_file([META, node(1), node(2, NodeType.COMP, pw.bytes_field(4, b"\x01"))])))
    assert main(["replay", str(path), "--json"]) == 0, capsys.readouterr().err


def test_raw_file_over_the_input_cap_is_refused_before_reading(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("FABRICSIM_MAX_INPUT_BYTES", "100")
    err = _replay(tmp_path, capsys, et_file([META, *(node(k) for k in range(1, 20))]))
    assert "over the cap 100" in err and "FABRICSIM_MAX_INPUT_BYTES" in err


def test_an_idle_rank_next_to_a_busy_one_is_allowed():
    idle = parse_chakra(et_file([META]), 1)
    assert idle.nodes == ()


def test_unknown_node_type_through_the_api():
    from fabricsim.api import replay_chakra

    with pytest.raises(FabricsimError, match="unknown node type 99"):
        replay_chakra([parse_chakra(et_file([META, node(3, 99)]), 0)])


def _p2p(node_id: int, kind: int, peer_key: bytes, peer: int, *deps: int) -> bytes:
    attrs = [attribute(peer_key, pw.varint_field(13, peer)), attribute(b"comm_size", pw.varint_field(13, 8))]
    return node(node_id, kind, *(pw.varint_field(4, d) for d in deps), *(pw.bytes_field(10, a) for a in attrs))


def test_ranks_that_each_receive_before_sending_are_one_error_line(tmp_path, capsys):
    # rank 0 waits for rank 1's send and rank 1 for rank 0's: the engine's ValueError was a traceback
    for rank in (0, 1):
        peer = 1 - rank
        receive = _p2p(1, NodeType.COMM_RECV, b"comm_src", peer)
        send = _p2p(2, NodeType.COMM_SEND, b"comm_dst", peer, 1)
        (tmp_path / f"p.{rank}.et").write_bytes(et_file([META, receive, send]))
    assert main(["replay", str(tmp_path / "p.0.et"), str(tmp_path / "p.1.et")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: trace: the trace cannot finish") and err.count("\n") == 1
