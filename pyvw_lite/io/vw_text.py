"""VW text format: a numba kernel that turns a buffer of lines into hashed feature arrays.

Every rule of VW_FACTS §1 / SPEC §P.1 lives in ``parse_lines``; Python only slices the input into
lines and turns error codes into located messages.  One kernel call parses a whole batch.

Deliberate differences from VW (the issue's bad-input policy): a line VW would "repair" (a label
that is not a number, a number followed by junk, a NaN or infinite value, a bad namespace weight,
too many label tokens, a negative importance) is reported with its file, line and text and is
*skipped*, not learned from with whatever VW's parser happened to keep.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..jit import kernel
from .hashing import hash_string, murmur3_32

# Per-example integer columns of ``ex_int``.
STATUS, ERR_CODE, ERR_START, ERR_END, NLABEL, LAB_START, LAB_END, TAG_START, TAG_END, \
    SEG_START, SEG_END, FEAT_START, FEAT_END = range(13)
EX_INT_COLUMNS = 13
# Per-example float columns of ``ex_float``.
LABEL, WEIGHT, INITIAL = range(3)
# Per-segment (one ``|namespace`` occurrence) integer columns of ``seg``.
SEG_BYTE, SEG_NAME_START, SEG_NAME_END, SEG_FSTART, SEG_FEND = range(5)
SEG_COLUMNS = 5
# Per-feature spans (only recorded for --audit / --invert_hash).
F_NAME_START, F_NAME_END, F_SVAL_START, F_SVAL_END = range(4)

OK, MALFORMED, EMPTY = 0, 1, 2

ERR_LABEL_NOT_NUMBER = 1
ERR_TOO_MANY_LABEL_TOKENS = 2
ERR_BAD_IMPORTANCE = 3
ERR_NEGATIVE_IMPORTANCE = 4
ERR_BAD_INITIAL = 5
ERR_NAMESPACE_COLON = 6
ERR_NAMESPACE_WEIGHT = 7
ERR_VALUE_TRAILING = 8
ERR_VALUE_NOT_FINITE = 9
ERR_BEYOND_FLOAT32 = 10
ERR_SCALED_BEYOND_FLOAT32 = 11

ERROR_MESSAGES = {
    ERR_LABEL_NOT_NUMBER: "label {text!r} is not a number",
    ERR_TOO_MANY_LABEL_TOKENS: "too many tokens for a simple label: {text!r} "
                               "(expected 'label [importance [initial]] [tag]')",
    ERR_BAD_IMPORTANCE: "importance weight {text!r} is not a number",
    ERR_NEGATIVE_IMPORTANCE: "importance weight {text!r} must be a finite value >= 0 (within "
                             "float32)",
    ERR_BAD_INITIAL: "initial (base) value {text!r} is not a number",
    ERR_NAMESPACE_COLON: "namespace expected after '|', found {text!r}",
    ERR_NAMESPACE_WEIGHT: "namespace weight in {text!r} is not a finite number",
    ERR_VALUE_TRAILING: "feature value in {text!r} has trailing characters",
    ERR_VALUE_NOT_FINITE: "feature value in {text!r} is not finite",
    ERR_BEYOND_FLOAT32: "{text!r} is beyond the float32 range (about 3.4e38) that VW's labels, "
                        "weights and values live in",
    ERR_SCALED_BEYOND_FLOAT32: "{text!r} times its namespace weight is beyond the float32 range "
                               "(about 3.4e38)",
}

SPACE, TAB, BAR, COLON, CR, QUOTE = 32, 9, 124, 58, 13, 39
_POW10 = np.array([10.0 ** i for i in range(23)])


@kernel
def _scale10(mantissa, exponent):
    """``mantissa * 10**exponent`` in float64, exact-rounded in the common range."""
    if mantissa == 0.0:
        return 0.0
    if 0 <= exponent <= 22:
        return mantissa * _POW10[exponent]
    if -22 <= exponent < 0:
        return mantissa / _POW10[-exponent]
    if exponent > 400:
        return math.inf
    if exponent < -400:
        return 0.0
    return mantissa * 10.0 ** exponent


@kernel
def _lower(c):
    if 65 <= c <= 90:
        return c + 32
    return c


@kernel
def _matches_word(buf, p, end, word):
    """Case-insensitive match of ``word`` (tuple of lowercase byte codes) at ``buf[p:]``."""
    if end - p < len(word):
        return False
    for i in range(len(word)):
        if _lower(buf[p + i]) != word[i]:
            return False
    return True


@kernel
def _decimal(buf, p, end):
    """``digits*(.digits*)?`` from ``p``: (mantissa, decimal exponent, digit count, new p).

    Keeps 19 significant digits (exact in the mantissa); the rest only move the exponent.
    """
    mantissa = 0.0
    exponent = 0
    digits = 0
    significant = 0  # leading zeros do not use up the 19 exact digits
    fraction = False
    while p < end:
        c = buf[p]
        if 48 <= c <= 57:
            if significant < 19:
                mantissa = mantissa * 10.0 + (c - 48)
                if fraction:
                    exponent -= 1
                if mantissa > 0.0:
                    significant += 1
            elif not fraction:
                exponent += 1
            digits += 1
        elif c == 46 and not fraction:
            fraction = True
        else:
            break
        p += 1
    return mantissa, exponent, digits, p


@kernel
def _exponent_digits(buf, p, end):
    """``digits*`` from ``p`` as an exponent (capped): (value, digit count, new p)."""
    e = 0
    count = 0
    while p < end and 48 <= buf[p] <= 57:
        if e < 100000:
            e = e * 10 + (buf[p] - 48)
        count += 1
        p += 1
    return e, count, p


@kernel
def _signed_exponent(buf, p, end):
    """``[+-]?digits`` from ``p`` (strtof's exponent): (signed value, digit count, new p)."""
    negative = False
    if p < end and (buf[p] == 45 or buf[p] == 43):
        negative = buf[p] == 45
        p += 1
    e, count, p = _exponent_digits(buf, p, end)
    return (-e if negative else e), count, p


@kernel
def parse_number(buf, start, end):
    """Parse a number the way VW does: its fast path, then a ``strtof``-like fallback.

    Returns ``(value, consumed)``; ``consumed == 0`` means "not a number at all".  The fast path
    accepts ``-?digits*(.digits*)?([eE]-?digits*)?`` when it spans the whole text (so ``-`` and
    ``.`` are 0 and ``1e`` is 1, as in VW); anything else gets ``strtof`` rules (``+2``, ``0x10``,
    ``1.5e+2``, ``inf``, ``nan``), which may consume only a prefix.
    """
    p = start
    negative = p < end and buf[p] == 45
    if negative:
        p += 1
    mantissa, exponent, _, p = _decimal(buf, p, end)
    if p < end and (buf[p] == 101 or buf[p] == 69):
        p += 1
        exp_negative = p < end and buf[p] == 45
        if exp_negative:
            p += 1
        e, _, p = _exponent_digits(buf, p, end)
        exponent += -e if exp_negative else e
    if p == end and end > start:
        value = _scale10(mantissa, exponent)
        return (-value if negative else value), end - start
    return _parse_strtof(buf, start, end)


@kernel
def _parse_strtof(buf, start, end):
    p = start
    negative = False
    if p < end and (buf[p] == 45 or buf[p] == 43):
        negative = buf[p] == 45
        p += 1
    if _matches_word(buf, p, end, (105, 110, 102, 105, 110, 105, 116, 121)):
        return (-math.inf if negative else math.inf), p + 8 - start
    if _matches_word(buf, p, end, (105, 110, 102)):
        return (-math.inf if negative else math.inf), p + 3 - start
    if _matches_word(buf, p, end, (110, 97, 110)):
        return math.nan, p + 3 - start
    if end - p >= 2 and buf[p] == 48 and _lower(buf[p + 1]) == 120:
        value, q = _hexadecimal(buf, p + 2, end)
        if q == p + 2:
            return 0.0, p + 1 - start  # strtof reads the "0" and stops at "x"
        return (-value if negative else value), q - start
    mantissa, exponent, digits, p = _decimal(buf, p, end)
    if digits == 0:
        return 0.0, 0
    if p < end and (buf[p] == 101 or buf[p] == 69):
        e, count, q = _signed_exponent(buf, p + 1, end)
        if count:
            exponent += e
            p = q
    value = _scale10(mantissa, exponent)
    return (-value if negative else value), p - start


@kernel
def _hexadecimal(buf, p, end):
    """``strtof``'s hex float after ``0x``: (value, new p); ``p`` unchanged if no hex digit."""
    value = 0.0
    scale = 1.0
    fraction = False
    q = p
    seen = False
    while q < end:
        c = _lower(buf[q])
        if 48 <= c <= 57 or 97 <= c <= 102:
            digit = c - 48 if c <= 57 else c - 87
            if fraction:
                scale /= 16.0
                value += digit * scale
            else:
                value = value * 16.0 + digit
            seen = True
        elif c == 46 and not fraction:
            fraction = True
        else:
            break
        q += 1
    if not seen:
        return 0.0, p
    if q < end and _lower(buf[q]) == 112:
        e, count, r = _signed_exponent(buf, q + 1, end)
        if count:
            value = value * 2.0 ** e
            q = r
    return value, q


@kernel
def _to_float32(value):
    """Round to float32 precision: VW stores labels, weights and values as C floats."""
    return np.float64(np.float32(value))


@kernel
def fits_float32(value):
    """Finite, and finite once rounded to float32 (3.4e38 is, 1e39 is not), as VW stores it."""
    return math.isfinite(value) and math.isfinite(_to_float32(value))


@kernel
def unusable_weight(value):
    """An importance weight VW cannot learn with: negative, or infinite as a float32."""
    return value < 0.0 or math.isinf(_to_float32(value))


@kernel
def _set_error(ex_int, i, code, err_start, err_end):
    ex_int[i, STATUS] = MALFORMED
    ex_int[i, ERR_CODE] = code
    ex_int[i, ERR_START] = err_start
    ex_int[i, ERR_END] = err_end


@kernel
def _namespace_hash(buf, start, end, seed, hash_all, cache_len, cache_start, cache_hash):
    """Namespace hashes repeat on every line: a small direct-mapped cache keyed by the bytes."""
    length = end - start
    slot = (length * 31 + buf[start] * 7 + buf[end - 1]) & 63
    cached = cache_start[slot]
    if cache_len[slot] == length and cached >= 0:
        same = True
        for i in range(length):
            if buf[cached + i] != buf[start + i]:
                same = False
                break
        if same:
            return cache_hash[slot]
    h = hash_string(buf, start, end, seed, hash_all)
    cache_len[slot] = length
    cache_start[slot] = start
    cache_hash[slot] = h
    return h


@kernel
def _group_namespaces(seg, seg_first, seg_last, feat_hash, feat_value, feat_span, record_spans):
    """VW merges repeated namespace letters of one line into one group: reorder segments (and
    their features) stably so that segments sharing a letter are adjacent.

    Plain loops on purpose: numba's array-slice assignment and argsort cost seconds of compile.
    """
    n = seg_last - seg_first
    needs = False
    for a in range(seg_first, seg_last):
        for b in range(a + 2, seg_last):
            if seg[a, SEG_BYTE] == seg[b, SEG_BYTE] and seg[b - 1, SEG_BYTE] != seg[a, SEG_BYTE]:
                needs = True
    if not needs:
        return
    # stable order by the first appearance of each segment's letter (insertion sort)
    rank = np.empty(n, dtype=np.int64)
    order = np.empty(n, dtype=np.int64)
    for a in range(n):
        rank[a] = a
        for b in range(a):
            if seg[seg_first + b, SEG_BYTE] == seg[seg_first + a, SEG_BYTE]:
                rank[a] = rank[b]
                break
        k = a
        while k > 0 and rank[order[k - 1]] > rank[a]:
            order[k] = order[k - 1]
            k -= 1
        order[k] = a
    fstart = seg[seg_first, SEG_FSTART]
    fend = seg[seg_last - 1, SEG_FEND]
    old_seg = np.empty((n, SEG_COLUMNS), dtype=np.int64)
    for a in range(n):
        for c in range(SEG_COLUMNS):
            old_seg[a, c] = seg[seg_first + a, c]
    count_all = fend - fstart
    old_hash = np.empty(count_all, dtype=np.uint32)
    old_value = np.empty(count_all, dtype=np.float32)
    old_span = np.empty((count_all if record_spans else 0, 4), dtype=np.int64)
    for j in range(count_all):
        old_hash[j] = feat_hash[fstart + j]
        old_value[j] = feat_value[fstart + j]
        if record_spans:
            for c in range(4):
                old_span[j, c] = feat_span[fstart + j, c]
    cursor = fstart
    for k in range(n):
        src = order[k]
        for c in range(SEG_COLUMNS):
            seg[seg_first + k, c] = old_seg[src, c]
        count = old_seg[src, SEG_FEND] - old_seg[src, SEG_FSTART]
        offset = old_seg[src, SEG_FSTART] - fstart
        for j in range(count):
            feat_hash[cursor + j] = old_hash[offset + j]
            feat_value[cursor + j] = old_value[offset + j]
            if record_spans:
                for c in range(4):
                    feat_span[cursor + j, c] = old_span[offset + j, c]
        seg[seg_first + k, SEG_FSTART] = cursor
        seg[seg_first + k, SEG_FEND] = cursor + count
        cursor += count


@kernel
def parse_lines(buf, line_starts, line_ends, hash_seed, hash_all, parse_label_number, record_spans,
                ex_int, ex_float, seg, feat_hash, feat_value, feat_span):
    """Parse ``len(line_starts)`` lines of ``buf`` (uint8).  Returns ``(n_segments, n_features)``.

    ``line_ends`` exclude the newline.  Feature hashes are unmasked 32-bit VW indices; values are
    float32 products of the feature value and its namespace weight, zeros dropped.
    """
    cache_len = np.empty(64, dtype=np.int64)
    cache_start = np.empty(64, dtype=np.int64)
    cache_hash = np.empty(64, dtype=np.int64)
    for k in range(64):
        cache_len[k] = -1
        cache_start[k] = -1
    default_ns_hash = murmur3_32(buf, 0, 0, hash_seed)
    tok_s = np.empty(4, dtype=np.int64)
    tok_e = np.empty(4, dtype=np.int64)
    n_seg = 0
    n_feat = 0
    for i in range(line_starts.shape[0]):
        ls = line_starts[i]
        le = line_ends[i]
        if le > ls and buf[le - 1] == CR:
            le -= 1
        if le - ls >= 3 and buf[ls] == 0xEF and buf[ls + 1] == 0xBB and buf[ls + 2] == 0xBF:
            ls += 3
        ex_int[i, STATUS] = OK
        ex_int[i, ERR_CODE] = 0
        ex_int[i, TAG_START] = -1
        ex_int[i, TAG_END] = -1
        ex_int[i, LAB_START] = -1
        ex_int[i, LAB_END] = -1
        ex_int[i, NLABEL] = 0
        ex_int[i, SEG_START] = n_seg
        ex_int[i, FEAT_START] = n_feat
        ex_float[i, LABEL] = 0.0
        ex_float[i, WEIGHT] = 1.0
        ex_float[i, INITIAL] = 0.0
        if le == ls:
            ex_int[i, STATUS] = EMPTY
            ex_int[i, SEG_END] = n_seg
            ex_int[i, FEAT_END] = n_feat
            continue
        bar = ls
        while bar < le and buf[bar] != BAR:
            bar += 1
        # ---- label section: [label_start, bar)
        label_start = ls
        for p in range(ls, bar):
            if buf[p] == TAB:
                label_start = p + 1
                break
        n_tok = 0
        last_s = -1
        last_e = -1
        p = label_start
        while p < bar:
            while p < bar and buf[p] == SPACE:
                p += 1
            if p >= bar:
                break
            s = p
            while p < bar and buf[p] != SPACE:
                p += 1
            if n_tok < 4:
                tok_s[n_tok] = s
                tok_e[n_tok] = p
            n_tok += 1
            last_s = s
            last_e = p
        if n_tok > 0 and (buf[last_s] == QUOTE or last_e == bar):
            ex_int[i, TAG_START] = last_s + 1 if buf[last_s] == QUOTE else last_s
            ex_int[i, TAG_END] = last_e
            n_tok -= 1
        ex_int[i, NLABEL] = n_tok
        if n_tok > 3:
            _set_error(ex_int, i, ERR_TOO_MANY_LABEL_TOKENS, tok_s[0], last_e)
        elif n_tok > 0:
            ex_int[i, LAB_START] = tok_s[0]
            ex_int[i, LAB_END] = tok_e[0]
            if parse_label_number:
                value, used = parse_number(buf, tok_s[0], tok_e[0])
                if used != tok_e[0] - tok_s[0] or not math.isfinite(value):
                    _set_error(ex_int, i, ERR_LABEL_NOT_NUMBER, tok_s[0], tok_e[0])
                elif not fits_float32(value):
                    _set_error(ex_int, i, ERR_BEYOND_FLOAT32, tok_s[0], tok_e[0])
                ex_float[i, LABEL] = _to_float32(value)
            if n_tok > 1:
                value, used = parse_number(buf, tok_s[1], tok_e[1])
                if used != tok_e[1] - tok_s[1] or math.isnan(value):
                    _set_error(ex_int, i, ERR_BAD_IMPORTANCE, tok_s[1], tok_e[1])
                elif unusable_weight(value):
                    # a number, but no weight (negative, infinite, or beyond float32 as 1e39):
                    # the example stays (predicted, not learned, as VW does with a negative
                    # one); the note is for the caller's warning
                    ex_int[i, ERR_CODE] = ERR_NEGATIVE_IMPORTANCE
                    ex_int[i, ERR_START] = tok_s[1]
                    ex_int[i, ERR_END] = tok_e[1]
                    value = 1.0
                ex_float[i, WEIGHT] = _to_float32(value)
            if n_tok > 2:
                value, used = parse_number(buf, tok_s[2], tok_e[2])
                if used != tok_e[2] - tok_s[2] or not math.isfinite(value):
                    _set_error(ex_int, i, ERR_BAD_INITIAL, tok_s[2], tok_e[2])
                elif not fits_float32(value):
                    _set_error(ex_int, i, ERR_BEYOND_FLOAT32, tok_s[2], tok_e[2])
                ex_float[i, INITIAL] = _to_float32(value)
        # ---- namespace segments
        p = bar
        while p < le and ex_int[i, STATUS] == OK:
            p += 1  # skip the '|'
            seg_first_feat = n_feat
            if p >= le or buf[p] == SPACE or buf[p] == TAB or buf[p] == BAR:
                ns_byte = SPACE
                ns_hash = default_ns_hash
                name_s = p
                name_e = p
                ns_weight = 1.0
            elif buf[p] == COLON:
                e = p
                while e < le and buf[e] != SPACE and buf[e] != TAB and buf[e] != BAR:
                    e += 1
                _set_error(ex_int, i, ERR_NAMESPACE_COLON, p - 1, e)
                break
            else:
                name_s = p
                while p < le and buf[p] != SPACE and buf[p] != TAB and buf[p] != COLON \
                        and buf[p] != BAR and buf[p] != CR:
                    p += 1
                name_e = p
                ns_byte = buf[name_s]
                ns_hash = _namespace_hash(buf, name_s, name_e, hash_seed, hash_all,
                                          cache_len, cache_start, cache_hash)
                ns_weight = 1.0
                if p < le and buf[p] == COLON:
                    ws = p + 1
                    p = ws
                    while p < le and buf[p] != SPACE and buf[p] != TAB and buf[p] != BAR \
                            and buf[p] != CR:
                        p += 1
                    value, used = parse_number(buf, ws, p)
                    if used != p - ws or p == ws or not math.isfinite(value):
                        _set_error(ex_int, i, ERR_NAMESPACE_WEIGHT, name_s - 1, p)
                        break
                    ns_weight = _to_float32(value)
            anonymous = 0
            while True:
                while p < le and (buf[p] == SPACE or buf[p] == TAB or buf[p] == CR):
                    p += 1
                if p >= le or buf[p] == BAR:
                    break
                fs = p
                while p < le and buf[p] != SPACE and buf[p] != TAB and buf[p] != COLON \
                        and buf[p] != BAR and buf[p] != CR:
                    p += 1
                fe = p
                value = 1.0
                sval_s = -1
                sval_e = -1
                if p < le and buf[p] == COLON:
                    p += 1
                    while p < le and buf[p] == SPACE:
                        p += 1
                    vs = p
                    while p < le and buf[p] != SPACE and buf[p] != TAB and buf[p] != BAR \
                            and buf[p] != CR:
                        p += 1
                    if p > vs:
                        number, used = parse_number(buf, vs, p)
                        if used == 0:  # a string value (VW 9's chained hash) runs to the
                            # next space: a '|' in it is part of it, as in VW
                            while p < le and buf[p] != SPACE and buf[p] != TAB and buf[p] != CR:
                                p += 1
                            sval_s = vs
                            sval_e = p
                        elif used < p - vs:
                            _set_error(ex_int, i, ERR_VALUE_TRAILING, fs, p)
                            break
                        elif not math.isfinite(number):
                            _set_error(ex_int, i, ERR_VALUE_NOT_FINITE, fs, p)
                            break
                        else:
                            value = number
                # a string-valued feature has value 1, whatever its namespace's weight (VW)
                value = 1.0 if sval_s >= 0 else _to_float32(value * ns_weight)
                if not math.isfinite(value):  # x:1e39, or a value times its namespace weight
                    _set_error(ex_int, i, ERR_BEYOND_FLOAT32 if ns_weight == 1.0
                               else ERR_SCALED_BEYOND_FLOAT32, fs, p)
                    break
                if fe == fs:
                    h = (ns_hash + anonymous) & 0xFFFFFFFF
                    anonymous += 1
                else:
                    h = hash_string(buf, fs, fe, ns_hash, hash_all)
                if sval_s >= 0:
                    h = hash_string(buf, sval_s, sval_e, h, hash_all)
                if value == 0.0:
                    continue
                feat_hash[n_feat] = h
                feat_value[n_feat] = value
                if record_spans:
                    feat_span[n_feat, F_NAME_START] = fs
                    feat_span[n_feat, F_NAME_END] = fe
                    feat_span[n_feat, F_SVAL_START] = sval_s
                    feat_span[n_feat, F_SVAL_END] = sval_e
                n_feat += 1
            if ex_int[i, STATUS] != OK:
                break
            if n_feat > seg_first_feat:
                seg[n_seg, SEG_BYTE] = ns_byte
                seg[n_seg, SEG_NAME_START] = name_s
                seg[n_seg, SEG_NAME_END] = name_e
                seg[n_seg, SEG_FSTART] = seg_first_feat
                seg[n_seg, SEG_FEND] = n_feat
                n_seg += 1
        if ex_int[i, STATUS] != OK:
            n_seg = ex_int[i, SEG_START]
            n_feat = ex_int[i, FEAT_START]
        elif n_seg - ex_int[i, SEG_START] > 2:
            _group_namespaces(seg, ex_int[i, SEG_START], n_seg, feat_hash, feat_value, feat_span,
                              record_spans)
        ex_int[i, SEG_END] = n_seg
        ex_int[i, FEAT_END] = n_feat
    return n_seg, n_feat


@kernel
def count_separators(buf, start, end):
    """(spaces + tabs + carriage returns, bars) in ``buf[start:end]``: output capacities."""
    separators = 0
    bars = 0
    for i in range(start, end):
        c = buf[i]
        separators += (c == SPACE) | (c == TAB) | (c == CR)
        bars += c == BAR
    return separators, bars


@dataclass
class ParsedBatch:
    """A batch of parsed lines; features stay in flat arrays (one kernel call learns them all).

    ``ex_int``/``ex_float`` hold one row per input line, including empty and malformed ones
    (their ``STATUS`` says so).  ``line_starts``/``line_ends`` locate each line in ``buf``.
    """

    buf: np.ndarray
    ex_int: np.ndarray
    ex_float: np.ndarray
    seg: np.ndarray
    feat_hash: np.ndarray
    feat_value: np.ndarray
    feat_span: np.ndarray | None
    first_line: int  # 1-based line number of row 0
    source: str
    line_starts: np.ndarray
    line_ends: np.ndarray
    classes: np.ndarray | None = None  # multiclass: class index per row (set by the learner)
    out_of_range: np.ndarray | None = None  # multiclass: rows trained as class K (--oaa)

    def line_text(self, row: int, limit: int = 200) -> str:
        """The raw text of one input line (for messages), shortened if very long."""
        start, end = int(self.line_starts[row]), int(self.line_ends[row])
        text = bytes(self.buf[start:end]).rstrip(b"\r").decode("utf-8", "replace")
        return text if len(text) <= limit else text[:limit] + "..."


def parse_buffer(buf: np.ndarray, line_starts: np.ndarray, line_ends: np.ndarray, *,
                 hash_seed: int = 0, hash_all: bool = False, parse_label_number: bool = True,
                 record_spans: bool = False, first_line: int = 1, source: str = "") -> ParsedBatch:
    """Parse the lines ``buf[start:end]`` with one kernel call."""
    n = line_starts.shape[0]
    if n:
        separators, bars = count_separators(buf, line_starts[0], line_ends[-1])
        # every feature follows a separator; every segment follows a '|'
        cap_feat = separators + n + 1
        cap_seg = bars + 1
    else:
        cap_feat = cap_seg = 1
    ex_int = np.empty((n, EX_INT_COLUMNS), dtype=np.int32)
    ex_float = np.empty((n, 3), dtype=np.float64)
    seg = np.empty((cap_seg, SEG_COLUMNS), dtype=np.int32)
    feat_hash = np.empty(cap_feat, dtype=np.uint32)
    feat_value = np.empty(cap_feat, dtype=np.float32)
    feat_span = np.empty((cap_feat if record_spans else 1, 4), dtype=np.int64)
    n_seg, n_feat = parse_lines(buf, line_starts, line_ends, np.int64(hash_seed & 0xFFFFFFFF),
                                hash_all, parse_label_number, record_spans, ex_int, ex_float,
                                seg, feat_hash, feat_value, feat_span)
    return ParsedBatch(buf=buf, ex_int=ex_int, ex_float=ex_float, seg=seg[:n_seg],
                       feat_hash=feat_hash[:n_feat], feat_value=feat_value[:n_feat],
                       feat_span=feat_span[:n_feat] if record_spans else None,
                       first_line=first_line, source=source, line_starts=line_starts,
                       line_ends=line_ends)


def line_terminators(buf: np.ndarray, final: bool) -> np.ndarray:
    """Positions of the bytes that end lines: every LF, and every CR not followed by LF (old
    Mac ends); a CR that ends ``buf`` ends a line only when ``final`` (an LF may follow)."""
    newlines = np.flatnonzero(buf == 10)
    if not (buf == CR).any():
        return newlines
    returns = np.flatnonzero(buf == CR)
    following = np.minimum(returns + 1, buf.shape[0] - 1)
    lone = np.where(returns + 1 < buf.shape[0], buf[following] != 10, final)
    return np.union1d(newlines, returns[lone])


def split_lines(buf: np.ndarray, final: bool,
                cr: bool = False) -> tuple[np.ndarray, np.ndarray, int]:
    """Starts and ends (line end excluded) of the complete lines in ``buf``, and the offset
    where the rest starts; with ``final`` an unterminated last line is a line too.  Lines end
    at LF, with ``cr`` (files) at a lone CR too; API text keeps a CR (a feature separator)."""
    newlines = line_terminators(buf, final) if cr else np.flatnonzero(buf == 10)
    starts = np.empty(newlines.shape[0] + 1, dtype=np.int64)
    starts[0] = 0
    starts[1:] = newlines + 1
    ends = newlines.astype(np.int64)
    consumed = int(starts[-1])
    if final and consumed < buf.shape[0]:
        ends = np.append(ends, buf.shape[0])
        consumed = buf.shape[0]
    else:
        starts = starts[:-1]
    return starts, ends, consumed


def describe_error(batch: ParsedBatch, row: int) -> str:
    """``file:line: what is wrong (line: "...")`` for a malformed row, or for a kept one
    with a note (``ERR_CODE`` set, ``STATUS`` OK: an importance weight it cannot learn with)."""
    code = int(batch.ex_int[row, ERR_CODE])
    s, e = int(batch.ex_int[row, ERR_START]), int(batch.ex_int[row, ERR_END])
    text = bytes(batch.buf[s:e]).decode("utf-8", "replace")
    if len(text) > 80:  # binary data or a runaway token: the line below shows the context
        text = text[:80] + "..."
    what = ERROR_MESSAGES.get(code, "malformed example").format(text=text)
    return f"{batch.source}:{batch.first_line + row}: {what} (line: {batch.line_text(row)!r})"


def format_prediction(value: float) -> str:
    """VW's prediction text: an integral value without decimals, else six decimals."""
    if math.isfinite(value) and value == math.floor(value):
        return f"{value:.0f}"
    return f"{value:.6f}"
