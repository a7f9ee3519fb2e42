"""Model files: a versioned, checksummed container written atomically, and VW-style text dumps.

Binary layout (format 1)::

    b"PYVW-LITE MODEL\\n"                magic
    uint32 little-endian                 length of the JSON header
    JSON header                          format, version, options that define the model,
                                         learner state, array directory, CRC-32 of the payload
    payload                              the arrays, raw little-endian

Only non-zero weight rows are stored (as VW does), so a ``-b 24`` model of a small problem is
small.  Every way a file can be unusable (not a model, truncated, corrupt, from a newer format,
incompatible options) is a :class:`ModelError` that says which.
"""
from __future__ import annotations

import json
import struct
import zlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .atomic import atomic_write

MAGIC = b"PYVW-LITE MODEL\n"
FORMAT = 1


class ModelError(ValueError):
    """A model file that cannot be used; the message names the file and the reason."""


@dataclass
class ModelData:
    options: list[str]  # argv of the options that define the model (re-applied on load)
    state: dict[str, Any]  # learner state: t, normalizer sums, label range, ...
    arrays: dict[str, np.ndarray] = field(default_factory=dict)
    version: str = ""


def save_model(path: str, model: ModelData, version: str) -> None:
    directory = []
    chunks = []
    offset = 0
    for name, array in model.arrays.items():
        data = np.ascontiguousarray(array)
        raw = data.tobytes()
        directory.append({"name": name, "dtype": data.dtype.str, "shape": list(data.shape),
                          "offset": offset, "nbytes": len(raw)})
        chunks.append(raw)
        offset += len(raw)
    payload = b"".join(chunks)
    header = {"format": FORMAT, "version": version, "options": model.options,
              "state": model.state, "arrays": directory, "payload_bytes": len(payload),
              "payload_crc32": zlib.crc32(payload)}
    header_bytes = json.dumps(header, sort_keys=True).encode("utf-8")
    with atomic_write(path) as handle:
        handle.write(MAGIC)
        handle.write(struct.pack("<I", len(header_bytes)))
        handle.write(header_bytes)
        handle.write(payload)


def _parse_header(path: str, handle) -> dict[str, Any]:
    """The JSON header at the start of ``handle`` (``_payload_offset``: where the arrays start)."""
    magic = handle.read(len(MAGIC))
    if magic != MAGIC:
        raise ModelError(f"{path}: not a pyvw-lite model file (VW's own binary models "
                         "cannot be read; retrain or export with --readable_model)")
    size_bytes = handle.read(4)
    if len(size_bytes) != 4:
        raise ModelError(f"{path}: truncated model file (no header)")
    (size,) = struct.unpack("<I", size_bytes)
    header_bytes = handle.read(size)
    if len(header_bytes) != size:
        raise ModelError(f"{path}: truncated model file (header cut short)")
    try:
        header = json.loads(header_bytes.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise ModelError(f"{path}: corrupt model file (header is not valid)") from None
    if not isinstance(header, dict) or "format" not in header:
        raise ModelError(f"{path}: corrupt model file (header is not valid)")
    if header["format"] > FORMAT:
        raise ModelError(f"{path}: model format {header['format']} is newer than this "
                         f"pyvw-lite understands (format {FORMAT}); upgrade pyvw-lite")
    header["_payload_offset"] = len(MAGIC) + 4 + size
    return header


def load_model(path: str) -> ModelData:
    """A model file, read in one pass (``-i <(cat m.pvw)`` and other pipes work too)."""
    try:
        with open(path, "rb") as handle:
            header = _parse_header(path, handle)
            payload = handle.read()
    except OSError as exc:
        raise ModelError(f"{path}: cannot read model file ({exc.strerror or exc})") from None
    if len(payload) < header["payload_bytes"]:
        raise ModelError(f"{path}: truncated model file ({len(payload)} of "
                         f"{header['payload_bytes']} payload bytes)")
    if len(payload) > header["payload_bytes"] or zlib.crc32(payload) != header["payload_crc32"]:
        raise ModelError(f"{path}: corrupt model file (checksum mismatch)")
    arrays = {}
    for entry in header["arrays"]:
        start = entry["offset"]
        raw = payload[start:start + entry["nbytes"]]
        arrays[entry["name"]] = np.frombuffer(raw, dtype=np.dtype(entry["dtype"])).reshape(
            entry["shape"]).copy()
    return ModelData(options=header["options"], state=header["state"], arrays=arrays,
                     version=header["version"])


def text_header(version: str, min_label: float, max_label: float, bits: int, options: list[str],
                checksum: int, resume_lines: list[str] | None) -> str:
    """The header VW writes at the top of --readable_model and --invert_hash files."""
    lines = [f"Version {version}", "Id ", f"Min label:{min_label:g}", f"Max label:{max_label:g}",
             f"bits:{bits}", "lda:0", "0 ngram:", "0 skip:",
             "options:" + "".join(" " + o for o in options), f"Checksum: {checksum}",
             ":1" if resume_lines is not None else ":0"]
    lines.extend(resume_lines or [])
    return "\n".join(lines) + "\n"
