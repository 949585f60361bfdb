"""Repair of an edge shard's write-ahead log that the engine can no longer read.

The engine decodes each WAL entry (CBOR) with a recursion limit of 128 nested containers. A
payload nested deeper was accepted when written, and then every later open of the store failed
("failed to read WAL entry ... RecursionLimitExceeded"): one bad point refused every tenant.
Metadata is now validated before it is written (``models.validate_metadata``), so no new entry
can be that deep; this module opens stores that an older version let be damaged.

What it does, per WAL segment file of a shard: walk every entry's CBOR, and where a list or map
sits deeper than :data:`MAX_DEPTH`, overwrite that container with a text string of exactly the
same length (``"~~~..."``), so the entry keeps its size and place; then recompute the entry
CRCs of the file (each chains on the previous one). Every other entry is left byte for byte.
The original WAL directory is copied aside first (``wal.damaged-<time>``). Only the value that
was too deep is lost, and the fact it belonged to stays readable.

The format (the ``wal`` crate Qdrant uses): a segment file starts with ``b"wal"``, a version
byte (0) and a u32 CRC seed; each entry is a u64 length, the data, padding so that length +
padding + 4 is a multiple of 8, and a CRC-32C (Castagnoli) of length, data and padding,
seeded with the previous entry's CRC (the first with the file's seed). All little-endian.
"""

from __future__ import annotations

import shutil
import struct
import time
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["MAX_DEPTH", "WalRepair", "repair_wal"]

#: Containers nested deeper than this inside one WAL entry are replaced. The operation's own
#: structure takes about 8 levels; validated metadata at most 32 more.
MAX_DEPTH = 64

_MAGIC = b"wal"


def _crc_table() -> list[int]:
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_TABLE = _crc_table()


def _reverse32(x: int) -> int:
    return int(f"{x:032b}"[::-1], 2)


def _crc(seed: int, data: bytes) -> int:
    """CRC-32C as the ``crc`` crate's ``digest_with_initial(seed)`` computes it."""
    reg = _reverse32(seed)
    for b in data:
        reg = _TABLE[(reg ^ b) & 0xFF] ^ (reg >> 8)
    return reg ^ 0xFFFFFFFF


def _head(buf: bytes | bytearray, pos: int) -> tuple[int, int, int | None, int]:
    """(major type, additional info, argument or None when indefinite, next position)."""
    b = buf[pos]
    major, ai = b >> 5, b & 31
    pos += 1
    if ai < 24:
        return major, ai, ai, pos
    size = {24: 1, 25: 2, 26: 4, 27: 8}.get(ai)
    if size is not None:
        return major, ai, int.from_bytes(buf[pos : pos + size], "big"), pos + size
    if ai == 31 and major in (2, 3, 4, 5, 7):
        return major, ai, None, pos
    raise ValueError(f"malformed CBOR at {pos - 1}")


def _walk(buf: bytes | bytearray, pos: int, limit: float) -> tuple[int, list[tuple[int, int]]]:
    """Skip one CBOR item from ``pos``: its end, and the spans of containers nested deeper
    than ``limit`` (each replaced whole, so nothing inside it is listed). Iterative: the
    nesting this module exists for would overflow a recursive parser."""
    cuts: list[tuple[int, int]] = []
    stack: list[int] = [1]  # items still to read in each open container; -1: until a break
    while stack:
        if stack[-1] == 0:
            stack.pop()
            continue
        if stack[-1] == -1 and buf[pos] == 0xFF:
            pos += 1
            stack.pop()
            continue
        if stack[-1] > 0:
            stack[-1] -= 1
        start = pos
        major, ai, arg, pos = _head(buf, pos)
        if major in (2, 3):
            if arg is None:  # indefinite string: definite chunks until a break
                while buf[pos] != 0xFF:
                    _, _, n, pos = _head(buf, pos)
                    pos += n or 0
                pos += 1
            else:
                pos += arg
        elif major in (4, 5):
            if len(stack) > limit:
                end, _ = _walk(buf, start, float("inf"))
                cuts.append((start, end))
                pos = end
            else:
                stack.append(-1 if arg is None else arg * (2 if major == 5 else 1))
        elif major == 6:
            stack.append(1)  # a tag wraps one item
        elif major == 7 and ai == 31:
            raise ValueError(f"unexpected break at {start}")
    return pos, cuts


def _filler(size: int) -> bytes:
    """A CBOR text string of exactly ``size`` bytes (header included)."""
    if size - 1 <= 23:
        return bytes([0x60 | (size - 1)]) + b"~" * (size - 1)
    if size - 2 <= 0xFF:
        return bytes([0x78, size - 2]) + b"~" * (size - 2)
    if size - 3 <= 0xFFFF:
        return b"\x79" + (size - 3).to_bytes(2, "big") + b"~" * (size - 3)
    return b"\x7a" + (size - 5).to_bytes(4, "big") + b"~" * (size - 5)


@dataclass
class WalRepair:
    """What :func:`repair_wal` changed."""

    wal_dir: str
    backup: str | None = None
    entries_trimmed: int = 0
    values_trimmed: int = 0
    files: list[str] = field(default_factory=list)


def _entries(buf: bytes | bytearray) -> list[tuple[int, int, int]]:
    """(entry offset, data length, padded length) of each valid entry of a segment file."""
    out = []
    crc = struct.unpack_from("<I", buf, 4)[0]
    off = 8
    while off + 12 < len(buf):
        length = struct.unpack_from("<Q", buf, off)[0]
        padded = length + ((4 - length) & 7)
        end = off + 8 + padded
        if end + 4 > len(buf):
            break
        stored = struct.unpack_from("<I", buf, end)[0]
        if _crc(crc, bytes(buf[off:end])) != stored:
            break  # the end of the log (the wal crate stops at the first CRC mismatch too)
        crc = stored
        out.append((off, length, padded))
        off = end + 4
    return out


def repair_wal(wal_dir: str | Path, *, max_depth: int = MAX_DEPTH) -> WalRepair:
    """Rewrite the WAL entries of ``wal_dir`` that nest deeper than ``max_depth`` (see the
    module docstring). Makes a copy of the directory first, and only when something changes."""
    wal = Path(wal_dir)
    report = WalRepair(str(wal))
    plans: list[tuple[Path, bytearray]] = []
    for path in sorted(p for p in wal.iterdir() if p.is_file()):
        with path.open("rb") as fh:
            head = fh.read(8)
        if head[:3] != _MAGIC or len(head) < 8:
            continue
        buf = bytearray(path.read_bytes())
        entries = _entries(buf)  # found before anything changes: the CRCs still match
        changed = False
        for off, _, _ in entries:
            try:
                _, cuts = _walk(buf, off + 8, max_depth)
            except (ValueError, IndexError):
                continue  # not CBOR we understand: leave it to the engine
            for start, end in cuts:
                buf[start:end] = _filler(end - start)
            if cuts:
                report.entries_trimmed += 1
                report.values_trimmed += len(cuts)
                changed = True
        if changed:
            _rechain(buf, entries)
            plans.append((path, buf))
    if not plans:
        return report
    backup = wal.with_name(f"{wal.name}.damaged-{time.strftime('%Y%m%dT%H%M%S')}")
    shutil.copytree(wal, backup)
    report.backup = str(backup)
    for path, buf in plans:
        tmp = path.with_name(path.name + ".repair")
        tmp.write_bytes(buf)
        tmp.replace(path)
        report.files.append(path.name)
    return report


def _rechain(buf: bytearray, entries: list[tuple[int, int, int]]) -> None:
    """Recompute the CRC of each of ``entries`` in place (each seeds the next)."""
    crc = struct.unpack_from("<I", buf, 4)[0]
    for off, _, padded in entries:
        end = off + 8 + padded
        crc = _crc(crc, bytes(buf[off:end]))
        struct.pack_into("<I", buf, end, crc)
