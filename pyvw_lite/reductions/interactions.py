"""``-q/--quadratic``, ``--cubic`` and ``--interactions``: namespace crossings (VW_FACTS §2).

The crossing itself runs in the learner's feature kernel (``learners.gd.gather_features``);
this module turns the options into the kernel's arrays, removes duplicates as VW does and
reports what it created.  ``:`` is a wildcard over every namespace of an example.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..learners.gd import IGNORED, LINEAR_IGNORED
from ..options import OptionError, Options

WILDCARD = ":"


@dataclass
class Interactions:
    terms: list[str]
    array: np.ndarray  # (n, 3) int64 namespace bytes, -1 padded
    width: np.ndarray  # (n,) int64: 2 or 3
    messages: list[str]  # driver lines ("creating quadratic features for pairs: ab")
    warnings: list[str]  # log lines (duplicates removed)

    @property
    def uses_wildcard(self) -> bool:
        return any(WILDCARD in term for term in self.terms)


def _letters(term: str, option: str) -> bytes:
    raw = term.encode("latin-1", "replace")
    if option == "quadratic" and len(raw) != 2:
        raise OptionError(f"option '--quadratic': {term!r} must name exactly two namespaces")
    if option == "cubic" and len(raw) != 3:
        raise OptionError(f"option '--cubic': {term!r} must name exactly three namespaces")
    if len(raw) < 2 or len(raw) > 3:
        raise OptionError(f"option '--{option}': {term!r} must name two or three namespaces "
                          "(longer interactions are not supported)")
    return raw


def _canonical(term: bytes) -> bytes:
    return bytes(sorted(term))


def setup(options: Options) -> Interactions:
    terms: list[tuple[str, bytes]] = []
    messages: list[str] = []
    quadratic = [_letters(t, "quadratic") for t in options.quadratic]
    cubic = [_letters(t, "cubic") for t in options.cubic]
    general = [_letters(t, "interactions") for t in options.interactions]
    if quadratic:
        messages.append("creating quadratic features for pairs: "
                        + " ".join(t.decode("latin-1") for t in quadratic))
    if cubic:
        messages.append("creating cubic features for triples: "
                        + " ".join(t.decode("latin-1") for t in cubic))
    for raw in quadratic + cubic + general:
        terms.append((raw.decode("latin-1"), raw))
    warnings: list[str] = []
    if not options.leave_duplicate_interactions:
        seen: set[bytes] = set()
        kept = []
        for text, raw in terms:
            key = _canonical(raw)
            if key in seen:
                continue
            seen.add(key)
            kept.append((text, raw))
        removed = len(terms) - len(kept)
        if removed:
            warnings.append(f"Duplicate namespace interactions were found. Removed: {removed}.")
            warnings.append("You can use --leave_duplicate_interactions to disable this behaviour.")
        terms = kept
    array = np.full((len(terms), 3), -1, dtype=np.int64)
    width = np.zeros(len(terms), dtype=np.int64)
    for k, (_, raw) in enumerate(terms):
        array[k, :len(raw)] = list(raw)
        width[k] = len(raw)
    messages += namespace_messages(options)
    return Interactions([t for t, _ in terms], array, width, messages, warnings)


def _letters_of(options: Options, name: str) -> list[int]:
    """The distinct namespace bytes an option's values name, ascending."""
    return sorted({b for letters in getattr(options, name) for b in letters.encode("latin-1",
                                                                                  "replace")})


def namespace_mask(options: Options) -> np.ndarray:
    """256 flags per namespace letter: ``IGNORED`` (``--ignore``, or not in ``--keep``),
    ``LINEAR_IGNORED`` (``--ignore_linear``: no linear terms, interactions keep it) or 0."""
    ignore = np.zeros(256, dtype=np.uint8)
    for b in _letters_of(options, "ignore_linear"):
        ignore[b] = LINEAR_IGNORED
    for b in _letters_of(options, "ignore"):
        ignore[b] = IGNORED
    if options.keep:
        keep = np.zeros(256, dtype=bool)
        keep[_letters_of(options, "keep")] = True
        ignore[~keep] = IGNORED
    return ignore


def namespace_messages(options: Options) -> list[str]:
    """VW's driver lines for --ignore, --ignore_linear and --keep (letters ascending)."""
    lines = []
    for name, text in (("ignore", "ignoring namespaces"),
                       ("ignore_linear", "ignoring linear terms for namespaces"),
                       ("keep", "using namespaces")):
        letters = _letters_of(options, name)
        if letters:
            lines.append(f"{text} beginning with: "
                         + " ".join(bytes([b]).decode("latin-1") for b in letters))
    return lines
