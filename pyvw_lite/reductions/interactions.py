"""``-q/--quadratic``, ``--cubic`` and ``--interactions``: namespace crossings (VW_FACTS §2).

The crossing itself runs in the learner's feature kernel (``learners.gd.gather_features``);
this module turns the options into the kernel's arrays, removes duplicates as VW does and
reports what it created.  ``:`` is a wildcard over every namespace of an example.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..io.vw_text import SEG_BYTE, SEG_END, SEG_FEND, SEG_FSTART, SEG_START
from ..learners.gd import IGNORED, LINEAR_IGNORED
from ..options import OptionError, Options

WILDCARD = ":"


@dataclass
class Interactions:
    terms: list[str]
    array: np.ndarray  # (n, 3) int64 namespace bytes, -1 padded
    width: np.ndarray  # (n,) int64: 2 or 3
    messages: list[str]  # driver lines ("creating quadratic features for pairs: ab")
    warnings: list[str]  # whole log lines, as VW writes them (duplicates removed, terms sorted)

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


def _repeats(term: bytes) -> bool:
    return len(set(term)) < len(term)


def setup(options: Options) -> Interactions:
    """The terms as VW 9.11.9 parses them, with its messages (VW_FACTS §2; its wildcard rules
    checked against VW's --audit):

    * a term that repeats a character, ``:`` included, is sorted (``aba`` -> ``aab``, ``a::``
      -> ``::a``), with or without ``--leave_duplicate_interactions``;
    * the terms are ordered by length, then bytewise (``-q cba -q ab`` crosses ab first);
    * without that flag a term equal up to order to an earlier one is removed, so of ``ab:``
      and ``:ab`` the second stays;
    * wildcards are expanded per example by the feature kernel (``learners.gd``), which also
      drops tuples that repeat an earlier one.
    """
    messages: list[str] = []
    quadratic = [_letters(t, "quadratic") for t in options.quadratic]
    cubic = [_letters(t, "cubic") for t in options.cubic]
    general = [_letters(t, "interactions") for t in options.interactions]
    for prefix, given in (("creating quadratic features for pairs: ", quadratic),
                          ("creating cubic features for triples: ", cubic),
                          ("creating features for following interactions: ", general)):
        if given:
            messages.append(prefix + " ".join(t.decode("latin-1") for t in given))
    terms = sorted((_canonical(raw) if _repeats(raw) else raw for raw in
                    quadratic + cubic + general), key=lambda raw: (len(raw), raw))
    warnings: list[str] = []  # whole log lines
    leave = options.leave_duplicate_interactions
    if not leave and any(WILDCARD.encode() in term for term in terms):
        warnings += ["[info] Any duplicate namespace interactions will be removed",
                     "You can use --leave_duplicate_interactions to disable this behaviour."]
    if not leave:
        seen: set[bytes] = set()
        kept = []
        for raw in terms:
            key = _canonical(raw)
            if key not in seen:
                seen.add(key)
                kept.append(raw)
        if len(kept) < len(terms):
            warnings += [f"[warning] Duplicate namespace interactions were found. Removed: "
                         f"{len(terms) - len(kept)}.",
                         "You can use --leave_duplicate_interactions to disable this behaviour."]
        terms = kept
    # VW counts the terms with a repeated character and another one (aab, not aaa)
    affected = sum(1 for raw in terms if _repeats(raw) and len(set(raw)) > 1)
    if affected:
        warnings.append("[warning] Some interactions contain duplicate characters and their "
                        f"characters order has been changed. Interactions affected: {affected}.")
    array = np.full((len(terms), 3), -1, dtype=np.int64)
    width = np.zeros(len(terms), dtype=np.int64)
    for k, raw in enumerate(terms):
        array[k, :len(raw)] = list(raw)
        width[k] = len(raw)
    messages += namespace_messages(options)
    return Interactions([t.decode("latin-1") for t in terms], array, width, messages, warnings)


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


def linear_ignored_counts(ex_int: np.ndarray, seg: np.ndarray, rows: np.ndarray,
                          ignore: np.ndarray) -> np.ndarray:
    """Per example of ``rows``, its features in ``--ignore_linear`` namespaces: they learn no
    linear term, yet VW counts them among the example's features (the progress table's
    "current features" and "total feature number")."""
    if rows.size == 0 or not (ignore == LINEAR_IGNORED).any():
        return np.zeros(rows.size, dtype=np.int64)
    first, last = ex_int[rows, SEG_START], ex_int[rows, SEG_END]
    low = int(first.min())  # only the rows' own segments: one example at a time stays cheap
    span = seg[low:int(last.max())]
    flagged = ignore[span[:, SEG_BYTE]] == LINEAR_IGNORED
    sizes = np.where(flagged, span[:, SEG_FEND] - span[:, SEG_FSTART], 0).astype(np.int64)
    ends = np.concatenate(([0], np.cumsum(sizes)))
    return ends[last - low] - ends[first - low]


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
