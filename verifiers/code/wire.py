"""Framing between the parent, the workers and the runners: a JSON header plus raw byte blobs.

Frame = u32 header length, header (UTF-8 JSON object), then for each blob named in
``header["_blobs"]`` a u32 length and the bytes. No pickle: a frame can only carry data.
"""

from __future__ import annotations

import json
import os
import struct
from builtins import (  # noqa: UP029 - see harness.py
    RecursionError,
    ValueError,
    bytes,
    dict,
    len,
    min,
    range,
    type,
)
from collections.abc import Sequence

_U32 = struct.Struct("<I")


def encode(header: dict, blobs: Sequence[bytes] = ()) -> bytes:
    h = dict(header, _blobs=len(blobs))
    hb = json.dumps(h, ensure_ascii=False).encode("utf-8", "surrogatepass")
    parts = [_U32.pack(len(hb)), hb]
    for b in blobs:
        parts += [_U32.pack(len(b)), b]
    return b"".join(parts)


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def send(fd: int, header: dict, blobs: Sequence[bytes] = ()) -> None:
    write_all(fd, encode(header, blobs))


def _read_exact(fd: int, n: int) -> bytes | None:
    buf = bytearray()
    while len(buf) < n:
        chunk = os.read(fd, min(n - len(buf), 1 << 20))
        if not chunk:
            return None
        buf += chunk
    return bytes(buf)


class FrameError(ValueError):
    """A frame over the size limit, or a header that is not a JSON object."""


def recv(fd: int, limit: int | None = None) -> tuple[dict, list[bytes]] | None:
    """Read one frame; None at end of stream (or a frame cut short). With ``limit``, a header
    over ``limit`` bytes, blobs, or a header that is not a JSON object raise FrameError."""
    raw = _read_exact(fd, 4)
    if raw is None:
        return None
    size = _U32.unpack(raw)[0]
    if limit is not None and size > limit:
        raise FrameError(f"a reply of {size} bytes (limit {limit})")
    hb = _read_exact(fd, size)
    if hb is None:
        return None
    try:
        header = json.loads(hb.decode("utf-8", "surrogatepass"))
    except (ValueError, RecursionError) as e:
        raise FrameError(f"undecodable frame: {e}"[:200]) from None
    if type(header) is not dict or (limit is not None and header.pop("_blobs", 0) != 0):
        raise FrameError("a frame that is not a plain JSON object")
    blobs = []
    for _ in range(header.pop("_blobs", 0)):
        raw = _read_exact(fd, 4)
        b = None if raw is None else _read_exact(fd, _U32.unpack(raw)[0])
        if b is None:
            return None
        blobs.append(b)
    return header, blobs


def parse_stream(buf: bytearray) -> list[tuple[dict, list[bytes]]]:
    """Split the complete frames off the front of ``buf`` (in place); keep the partial tail."""
    out: list[tuple[dict, list[bytes]]] = []
    while True:
        if len(buf) < 4:
            return out
        hl = _U32.unpack_from(buf, 0)[0]
        pos = 4 + hl
        if len(buf) < pos:
            return out
        header = json.loads(bytes(buf[4:pos]).decode("utf-8", "surrogatepass"))
        blobs = []
        for _ in range(header.pop("_blobs", 0)):
            if len(buf) < pos + 4:
                return out
            bl = _U32.unpack_from(buf, pos)[0]
            if len(buf) < pos + 4 + bl:
                return out
            blobs.append(bytes(buf[pos + 4: pos + 4 + bl]))
            pos += 4 + bl
        del buf[:pos]
        out.append((header, blobs))
