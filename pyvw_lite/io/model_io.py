"""Model files: a versioned container under one SHA-256, written atomically, and VW-style text
dumps.

Binary layout (format 2)::

    b"PYVW-LITE MODEL\\n"                magic
    uint32 little-endian                 length of the JSON header
    JSON header                          format, version, options that define the model,
                                         learner state, array directory
    payload                              the arrays, raw little-endian
    32 bytes                             SHA-256 of everything above (magic to payload)

A model is data, never a command: the digest covers the header too, so a changed byte is
refused before anything in the file is used, and every field is checked against what a model
may hold (the options it may set are the ones that define a model, ``docs/security.md``).
Format 1 (older versions: a CRC-32 of the payload only) is still read, with a note.

Only non-zero weight rows are stored (as VW does), so a ``-b 24`` model of a small problem is
small.  Every way a file can be unusable (not a model, truncated, corrupt, from a newer format,
malformed) is a :class:`ModelError` that says which.
"""
from __future__ import annotations

import hashlib
import json
import math
import struct
import zlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .atomic import atomic_write

MAGIC = b"PYVW-LITE MODEL\n"
FORMAT = 2
_DIGEST = 32  # SHA-256
_MAX_HEADER = 64 << 20  # a header is options and state: far below this
_MAX_DIMENSIONS = 4  # a model's arrays have 1 to 3 axes
_MAX_LENGTH = 1 << 40  # an axis longer than this is no model's (numpy refuses [0, 2**70])
# the array dtypes a model holds; anything else (objects, strings, big-endian) is refused
_DTYPES = frozenset({"<f8", "<f4", "<u4", "<i4", "<i8", "<u8", "|u1", "|b1", "<u2"})


class ModelError(ValueError):
    """A model file that cannot be used; the message names the file and the reason."""


@dataclass
class ModelData:
    options: list[str]  # argv of the options that define the model (re-applied on load)
    state: dict[str, Any]  # learner state: t, normalizer sums, label range, ...
    arrays: dict[str, np.ndarray] = field(default_factory=dict)
    version: str = ""
    format: int = FORMAT  # of the file it was read from


def save_model(path: str, model: ModelData, version: str) -> None:
    directory = []
    chunks = []
    offset = 0
    for name, array in model.arrays.items():
        data = np.ascontiguousarray(array)
        if data.dtype.byteorder == ">":
            data = data.astype(data.dtype.newbyteorder("<"))
        raw = data.tobytes()
        directory.append({"name": name, "dtype": data.dtype.str, "shape": list(data.shape),
                          "offset": offset, "nbytes": len(raw)})
        chunks.append(raw)
        offset += len(raw)
    payload = b"".join(chunks)
    header = {"format": FORMAT, "version": version, "options": model.options,
              "state": model.state, "arrays": directory, "payload_bytes": len(payload)}
    header_bytes = json.dumps(header, sort_keys=True).encode("utf-8")
    body = MAGIC + struct.pack("<I", len(header_bytes)) + header_bytes + payload
    with atomic_write(path) as handle:
        handle.write(body)
        handle.write(hashlib.sha256(body).digest())


def _corrupt(path: str, why: str) -> ModelError:
    return ModelError(f"{path}: corrupt model file ({why})")


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _checked_header(path: str, header) -> dict[str, Any]:
    """The header's fields, each of the type a model writes, or a :class:`ModelError`."""
    if not isinstance(header, dict) or not _is_int(header.get("format")):
        raise _corrupt(path, "header is not valid")
    if header["format"] > FORMAT:
        raise ModelError(f"{path}: model format {header['format']} is newer than this "
                         f"pyvw-lite understands (format {FORMAT}); upgrade pyvw-lite")
    if header["format"] < 1:
        raise _corrupt(path, f"format {header['format']}")
    wanted = {"version": str, "options": list, "state": dict, "arrays": list,
              "payload_bytes": int}
    for key, kind in wanted.items():
        if not isinstance(header.get(key), kind) or isinstance(header.get(key), bool):
            raise _corrupt(path, f"header field {key!r} missing or of the wrong type")
    if not all(isinstance(token, str) for token in header["options"]):
        raise _corrupt(path, "header field 'options' holds a non-string")
    if header["payload_bytes"] < 0:
        raise _corrupt(path, "negative payload size")
    names = set()
    for entry in header["arrays"]:
        if not (isinstance(entry, dict) and isinstance(entry.get("name"), str)
                and entry.get("dtype") in _DTYPES and isinstance(entry.get("shape"), list)
                and len(entry["shape"]) <= _MAX_DIMENSIONS
                and all(_is_int(n) and 0 <= n <= _MAX_LENGTH for n in entry["shape"])
                and _is_int(entry.get("offset")) and _is_int(entry.get("nbytes"))
                and 0 <= entry["offset"] and 0 <= entry["nbytes"]
                and entry["offset"] + entry["nbytes"] <= header["payload_bytes"]):
            raise _corrupt(path, f"array directory entry {entry!r:.80} is not valid")
        if math.prod(entry["shape"]) * np.dtype(entry["dtype"]).itemsize != entry["nbytes"]:
            raise _corrupt(path, f"array {entry['name']!r}: shape and size disagree")
        if entry["name"] in names:
            raise _corrupt(path, f"array {entry['name']!r} listed twice")
        names.add(entry["name"])
    return header


class _NonFinite(ValueError):
    pass


def _no_nan(name: str) -> float:
    """JSON's ``NaN`` (Python reads it; no model holds one) is refused; ``Infinity`` is read
    (an unbounded label range is one), and each loader says where it may stand."""
    if name == "NaN":
        raise _NonFinite(name)
    return float(name.replace("Infinity", "inf"))


def _split(path: str, data: bytes) -> tuple[dict[str, Any], bytes]:
    """The checked header and the payload of a whole model file's bytes."""
    if data[:len(MAGIC)] != MAGIC:
        if data.lstrip()[:8] == b"Version ":
            raise ModelError(f"{path}: a text dump (--readable_model or --invert_hash), which "
                             "is for reading, not loading (VW cannot load one either); load "
                             "the binary model written with -f")
        raise ModelError(f"{path}: not a pyvw-lite model file (VW's own binary models "
                         "cannot be read; retrain with pyvw-lite and save with -f)")
    if len(data) < len(MAGIC) + 4:
        raise ModelError(f"{path}: truncated model file (no header)")
    (size,) = struct.unpack_from("<I", data, len(MAGIC))
    start = len(MAGIC) + 4
    if size > _MAX_HEADER or start + size > len(data):
        raise ModelError(f"{path}: truncated model file (header cut short)")
    try:
        header = json.loads(data[start:start + size].decode("utf-8"),
                            parse_constant=_no_nan)
    except _NonFinite:
        raise ModelError(f"{path}: malformed model (NaN in the header: no number a model holds "
                         "is NaN)") from None
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise _corrupt(path, "header is not valid") from None
    header = _checked_header(path, header)
    payload = data[start + size:]
    if header["format"] >= 2:
        if len(payload) < header["payload_bytes"] + _DIGEST:
            raise ModelError(f"{path}: truncated model file ({max(len(payload) - _DIGEST, 0)} "
                             f"of {header['payload_bytes']} payload bytes)")
        if len(payload) > header["payload_bytes"] + _DIGEST \
                or hashlib.sha256(data[:-_DIGEST]).digest() != data[-_DIGEST:]:
            raise _corrupt(path, "checksum mismatch")
        return header, payload[:-_DIGEST]
    if len(payload) < header["payload_bytes"]:
        raise ModelError(f"{path}: truncated model file ({len(payload)} of "
                         f"{header['payload_bytes']} payload bytes)")
    if len(payload) > header["payload_bytes"] or not _is_int(header.get("payload_crc32")) \
            or zlib.crc32(payload) != header["payload_crc32"]:
        raise _corrupt(path, "checksum mismatch")
    return header, payload


def load_model(path: str) -> ModelData:
    """A model file, read in one pass (``-i <(cat m.pvw)`` and other pipes work too)."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as exc:
        raise ModelError(f"{path}: cannot read model file ({exc.strerror or exc})") from None
    header, payload = _split(path, data)
    arrays = {}
    for entry in header["arrays"]:
        start = entry["offset"]
        raw = payload[start:start + entry["nbytes"]]
        arrays[entry["name"]] = np.frombuffer(raw, dtype=np.dtype(entry["dtype"])).reshape(
            entry["shape"]).copy()
    return ModelData(options=header["options"], state=header["state"], arrays=arrays,
                     version=header["version"], format=header["format"])


def text_header(version: str, min_label: float, max_label: float, bits: int, options: list[str],
                checksum: int, resume_lines: list[str] | None) -> str:
    """The header VW writes at the top of --readable_model and --invert_hash files."""
    lines = [f"Version {version}", "Id ", f"Min label:{min_label:g}", f"Max label:{max_label:g}",
             f"bits:{bits}", "lda:0", "0 ngram:", "0 skip:",
             "options:" + "".join(" " + o for o in options), f"Checksum: {checksum}",
             ":1" if resume_lines is not None else ":0"]
    lines.extend(resume_lines or [])
    return "\n".join(lines) + "\n"
