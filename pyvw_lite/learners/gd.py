"""The linear learner: VW's online gradient descent with adaptive, normalized and invariant
updates (VW_FACTS §4), over hashed features, the constant and namespace interactions.

Weights are a float32 table of ``2^b`` rows.  With adaptive or normalized updates a row holds
``[w, G, N, rate]`` (VW's stride 4): ``G`` sums squared gradients (AdaGrad), ``N`` is the largest
``|x|`` seen (normalized updates), ``rate`` is the per-feature rate of the current example, read
back by the update pass, so colliding features share the last one, as in VW.  Plain ``--sgd``
uses one column.  A dyadic model (``--dyad``) appends its ``k`` latent columns to every row
(``reductions.dyad.latent_column``); the kernels here read only the first ones.

One kernel call learns a whole parsed batch; Python never loops over examples.
"""
from __future__ import annotations

import math

import numpy as np

from ..io.hashing import CONSTANT_HASH, FNV_PRIME, MASK32, fmix32
from ..io.vw_text import (FEAT_END, FEAT_START, SEG_BYTE, SEG_END,
                          SEG_FEND, SEG_FSTART, SEG_START)
from ..jit import kernel, prefetch_row
from .dyadic import (NOT_QUERIED, REQUEST, SAMPLER_HIGH, SAMPLER_LOW, SIMULATION, hmin_linear,
                     query, request, returned_label)
from .losses import (SQUARED, importance_aware_update, loss_is_positive, loss_slope, loss_terms,
                     plain_update)

W, G, N, RATE = 0, 1, 2, 3
X_MIN = 1.084202172485504434e-19  # sqrt(FLT_MIN): VW clamps tiny feature values
X2_MIN = X_MIN * X_MIN
X2_MAX = 3.40282e38

# The float64 ``state`` vector: schedule time (trained weight), the label range, the weight of
# every example seen (VW's ``sd.t``, shown as initial_t when a model is loaded), then for every
# sub-model (class or tree node; VW keeps one per sub-model) the normalizer sums S (Σ h·|x|²/N²)
# and T (Σ h).
T_SUM, MIN_LABEL, MAX_LABEL, T_SEEN = range(4)
NORM_BASE = 4


# The dyadic learner's count of the latent rows it has touched and of their uses (importance
# summed over each latent feature of each update, first pass only): the last two entries of the
# state, after the normalizer's pairs.  Their ratio sizes the default latent penalty
# (reductions/dyad.py: sized_l2).
LATENT_ROWS, LATENT_USES = -2, -1
L2_REFERENCE_USES = 60.0  # the uses per row at which the default penalty is --dyad_l2's base


def state_size(models: int) -> int:
    return NORM_BASE + 2 * models + 2


# Multiclass slots (SPEC §D.5): class or node c of feature hash fh lives at
# (place(fh) + c·P_C) & mask (``place``: below).
# P_C = 1, not SPEC's 0x9E3779B1: one feature's K slots stay distinct for any K < 2^b and the
# expected number of colliding slots is the same (K²/2^b per feature pair), but a feature's
# classes share cache lines: the --sft 5 kernel runs 40% faster at -b 18.  Models saved with the
# spread layout record none and keep it.  (--vw_layout: VW's (fh·W + c) & mask, expand_features
# multiplying by W.)
CLASS_STRIDE = 1
LEGACY_CLASS_STRIDE = 0x9E3779B1
# Where a feature hash lands (``place``): ``(hash·M) & mask`` for a multiplier M (1: VW's binary
# layout; W: --vw_layout), or with M = HASH_MIX the hash through murmur3's 32-bit finalizer
# first (a bijection on 32 bits), for multiclass and --dyad models.  Number-named features
# ("| 1:0.5 2:0.3", "|u 17 |m 1193": libsvm conversions, user and item ids) hash to consecutive
# numbers from their namespace's hash.  Unmixed, (1) with classes one slot apart feature f's
# class c is feature f+1's class c-1: --oaa 10 on sklearn's digits scored 0.446 where VW
# scores 0.962; (2) two namespaces whose hashes are close share rows wholesale: at -b 18 'u'
# and 'm' are 644 apart, so user i and item i+644 shared their weight and latent vector, and
# --dyad um on number-named ratings scored test MSE 0.985 against 0.795 at -b 22.  Mixed,
# collisions are those of random hashes.  Binary linear models keep M = 1: their weights sit
# where VW's do.  (Models that record no multiplier keep 1.)
HASH_MIX = 0


@kernel(inline="always")
def place(h, multiplier, mask):
    """The row of feature hash ``h`` before any class offset (see HASH_MIX above)."""
    if multiplier != HASH_MIX:
        return (h * multiplier) & mask
    return fmix32(h & MASK32) & mask


@kernel
def _place_all(hashes, multiplier, mask, out):
    for i in range(hashes.shape[0]):
        out[i] = place(hashes[i], multiplier, mask)


def place_array(hashes, multiplier: int, mask: int) -> np.ndarray:
    """:func:`place` of a hash or an array of them (int64, the input's shape)."""
    flat = np.ascontiguousarray(np.atleast_1d(hashes), dtype=np.int64).ravel()
    out = np.empty(flat.size, dtype=np.int64)
    _place_all(flat, int(multiplier), int(mask), out)
    return out.reshape(np.shape(hashes))


# Indices into the float64 ``params`` vector.
P_ETA, P_POWER_T, P_LOSS, P_ADAPTIVE, P_NORMALIZED, P_INVARIANT, P_TRAINING, P_CONSTANT, \
    P_FIXED_RANGE, P_DYAD_ADAPTIVE, P_CLASS_STRIDE, P_ODE_SOLVER, P_LATENT_RATE, \
    P_DYAD_SEED, P_DYAD_L2, P_DYAD_POWER_T, P_TAU, P_L1, P_L2, P_CONTRACTION, P_GRAVITY, \
    P_DYAD_COUNT, P_DYAD_L2_POWER, P_DYAD_DROPOUT, P_DYAD_BIAS_L2, P_DYAD_ROW_L2 = range(26)
PARAM_SIZE = 26
WILDCARD = 58  # ':' in -q / --interactions
# flags of a namespace letter in the ``ignore`` table: left out everywhere (--ignore, --keep),
# or from the linear terms only (--ignore_linear: its features still enter interactions)
IGNORED, LINEAR_IGNORED = 1, 2


@kernel
def namespace_range(seg, s0, s1, byte, ignore):
    """Feature range of namespace letter ``byte`` in one example (segments are grouped)."""
    if ignore[byte] == IGNORED:
        return 0, 0
    start = -1
    end = -1
    for s in range(s0, s1):
        if seg[s, SEG_BYTE] == byte:
            if start < 0:
                start = seg[s, SEG_FSTART]
            end = seg[s, SEG_FEND]
    if start < 0:
        return 0, 0
    return start, end


@kernel
def _present_bytes(seg, s0, s1, ignore, out):
    """Distinct namespace letters of one example, ascending (for ':' wildcards)."""
    n = 0
    for s in range(s0, s1):
        b = seg[s, SEG_BYTE]
        if ignore[b] == IGNORED:
            continue
        seen = False
        for k in range(n):
            if out[k] == b:
                seen = True
                break
        if not seen:
            k = n
            while k > 0 and out[k - 1] > b:  # insertion keeps them ascending
                out[k] = out[k - 1]
                k -= 1
            out[k] = b
            n += 1
    return n


@kernel
def _expand_term(term, width, present, n_present, leave_duplicates, out):
    """Concrete namespace tuples of one interaction term, in VW's order; wildcards range over
    ``present`` (ascending).  Returns the number of tuples written to ``out``.

    With ``--leave_duplicate_interactions`` the wildcards take every value (permutations with
    repetition, the last position fastest).  Without it VW 9.11.9 takes combinations with
    repetition: non-decreasing for two wildcards (``::`` gives aa ab ac bb bc cc) and
    non-increasing for three (``:::`` gives aaa baa bba bbb caa cba ...).  A fixed namespace
    keeps its place (a term that repeats a character, ``a::``, was sorted to ``::a`` first).
    """
    n_wild = 0
    for k in range(width):
        if term[k] == WILDCARD:
            n_wild += 1
    if n_wild == 0:
        for k in range(width):
            out[0, k] = term[k]
        return 1
    if n_present == 0:
        return 0
    count = 0
    idx = np.zeros(n_wild, dtype=np.int64)
    while True:
        valid = True
        if not leave_duplicates:
            for k in range(1, n_wild):
                if (idx[k] > idx[k - 1]) if n_wild == 3 else (idx[k] < idx[k - 1]):
                    valid = False
        if valid:
            w = 0
            for k in range(width):
                if term[k] == WILDCARD:
                    out[count, k] = present[idx[w]]
                    w += 1
                else:
                    out[count, k] = term[k]
            count += 1
        k = n_wild - 1
        while k >= 0:
            idx[k] += 1
            if idx[k] < n_present:
                break
            idx[k] = 0
            k -= 1
        if k < 0:
            break
    return count


@kernel(inline="always")
def _sorted_tuple(tuples, q, width, out):
    """Row ``q`` of ``tuples`` (``width`` namespaces) sorted into ``out``; True when it repeats
    a namespace."""
    for k in range(width):
        out[k] = tuples[q, k]
    for k in range(1, width):
        j = k
        while j > 0 and out[j - 1] > out[j]:
            out[j - 1], out[j] = out[j], out[j - 1]
            j -= 1
    for k in range(1, width):
        if out[k] == out[k - 1]:
            return True
    return False


@kernel
def _compile_interactions(interactions, inter_width, present, n_present, leave_duplicates):
    """Every term's namespace tuples for one example, as VW compiles them: a tuple that
    repeats a namespace is sorted (``aba`` crosses as ``aab``), and without
    ``--leave_duplicate_interactions`` a tuple equal up to order to an earlier one, of any
    term, is dropped (``-q :: -q ab`` crosses a and b once).  Returns (tuples, widths, count).
    """
    bound = 1
    for t in range(interactions.shape[0]):
        n_wild = 0
        for k in range(inter_width[t]):
            if interactions[t, k] == WILDCARD:
                n_wild += 1
        bound += max(1, n_present) ** n_wild
    tuples = np.empty((bound, 3), dtype=np.int64)
    widths = np.empty(bound, dtype=np.int64)
    made = 0
    for t in range(interactions.shape[0]):
        count = _expand_term(interactions[t], inter_width[t], present, n_present,
                             leave_duplicates, tuples[made:])
        widths[made:made + count] = inter_width[t]
        made += count
    # each tuple's namespaces sorted, as one key (width and three bytes); a sort by key then
    # finds the repeats in O(m log m): ::: over 90 namespaces makes 125,580 tuples
    mine = np.empty(3, dtype=np.int64)
    repeated = np.zeros(made, dtype=np.bool_)
    keys = np.empty(made, dtype=np.int64)
    for q in range(made):
        repeated[q] = _sorted_tuple(tuples, q, widths[q], mine)
        key = widths[q]
        for k in range(3):
            key = key * 256 + (mine[k] if k < widths[q] else 0)
        keys[q] = key
    drop = np.zeros(made, dtype=np.bool_)
    if not leave_duplicates and made > 1:
        order = np.argsort(keys, kind="mergesort")  # stable: the first of equal keys stays
        for r in range(1, made):
            if keys[order[r]] == keys[order[r - 1]]:
                drop[order[r]] = True
    kept = 0
    for q in range(made):
        if drop[q]:
            continue
        width = widths[q]
        if repeated[q]:
            _sorted_tuple(tuples, q, width, mine)
            for k in range(width):
                tuples[kept, k] = mine[k]
        else:
            for k in range(width):
                tuples[kept, k] = tuples[q, k]
        widths[kept] = width
        kept += 1
    return tuples, widths, kept


# the features the interactions may generate for one example: 2^26 (67 million, 1 GiB of
# slots and values); a 60 MB line under -q aa asked for about 1e15 and ran for hours
MAX_INTERACTION_FEATURES = 1 << 26


@kernel
def interaction_sizes(rows, ex_int, seg, ignore, interactions, inter_width, out):
    """An upper bound of the features each row's interactions generate, from its namespace
    sizes before anything is expanded: the product of the namespaces' feature counts per term
    (a wildcard term: the example's features to the term's width), summed, in float64."""
    for e in range(rows.shape[0]):
        row = rows[e]
        s0 = ex_int[row, SEG_START]
        s1 = ex_int[row, SEG_END]
        total = 0.0
        for t in range(interactions.shape[0]):
            term = 1.0
            for k in range(inter_width[t]):
                if interactions[t, k] == WILDCARD:
                    size = 0
                    for s in range(s0, s1):
                        if ignore[seg[s, SEG_BYTE]] != IGNORED:
                            size += seg[s, SEG_FEND] - seg[s, SEG_FSTART]
                else:
                    first, last = namespace_range(seg, s0, s1, interactions[t, k], ignore)
                    size = last - first
                term *= size
            total += term
        out[e] = total


@kernel
def expand_features(rows, ex_int, seg, feat_hash, feat_value, mask, ignore, use_constant,
                    interactions, inter_width, leave_duplicates, starts, slots, values, origins,
                    record_origin, multiplier):
    """Flatten examples into CSR ``(slot, value)`` lists in VW's order: namespaces, constant,
    then interactions.  Example ``e`` gets ``slots[starts[e]:starts[e + 1]]``.

    Stops early when the output arrays are full and returns how many rows it expanded (at least
    one row must fit).  ``origins[k]`` (when recorded, for --audit) lists the batch feature
    indices a flat feature came from; -1 marks the constant and -2 an unused position.
    """
    capacity = slots.shape[0]
    n = 0
    starts[0] = 0
    for e in range(rows.shape[0]):
        row = rows[e]
        if n + ex_int[row, FEAT_END] - ex_int[row, FEAT_START] + 1 > capacity:
            return e
        n = _linear_terms(row, ex_int, seg, feat_hash, feat_value, mask, ignore, use_constant,
                          slots, values, origins, record_origin, n, multiplier)
        if interactions.shape[0] > 0:
            n = _gather_interactions(row, ex_int, seg, feat_hash, feat_value, mask, ignore,
                                     interactions, inter_width, leave_duplicates, slots, values,
                                     origins, record_origin, n, multiplier)
            if n < 0:
                if e == 0:
                    return -1
                return e
        starts[e + 1] = n
    return rows.shape[0]


@kernel
def expand_linear(rows, ex_int, seg, feat_hash, feat_value, mask, ignore, use_constant,
                  interactions, inter_width, leave_duplicates, starts, slots, values, origins,
                  record_origin, multiplier):
    """:func:`expand_features` for a run without interactions (same arguments, same output):
    a kernel that does not call the interaction code does not compile it, 4.7 of the 20
    seconds a first run of the default learner spent compiling."""
    capacity = slots.shape[0]
    n = 0
    starts[0] = 0
    for e in range(rows.shape[0]):
        row = rows[e]
        if n + ex_int[row, FEAT_END] - ex_int[row, FEAT_START] + 1 > capacity:
            return e
        n = _linear_terms(row, ex_int, seg, feat_hash, feat_value, mask, ignore, use_constant,
                          slots, values, origins, record_origin, n, multiplier)
        starts[e + 1] = n
    return rows.shape[0]


@kernel(inline="always")
def _linear_terms(row, ex_int, seg, feat_hash, feat_value, mask, ignore, use_constant, slots,
                  values, origins, record_origin, n, multiplier):
    """Append an example's namespace features and the constant from position ``n``; returns
    the new end."""
    for s in range(ex_int[row, SEG_START], ex_int[row, SEG_END]):
        if ignore[seg[s, SEG_BYTE]] != 0:  # IGNORED or LINEAR_IGNORED
            continue
        for j in range(seg[s, SEG_FSTART], seg[s, SEG_FEND]):
            slots[n] = place(np.int64(feat_hash[j]), multiplier, mask)
            values[n] = feat_value[j]
            if record_origin:
                origins[n, 0] = j
                origins[n, 1] = -2
                origins[n, 2] = -2
            n += 1
    if use_constant:
        slots[n] = place(np.int64(CONSTANT_HASH), multiplier, mask)
        values[n] = 1.0
        if record_origin:
            origins[n, 0] = -1
            origins[n, 1] = -2
            origins[n, 2] = -2
        n += 1
    return n


@kernel
def _gather_interactions(row, ex_int, seg, feat_hash, feat_value, mask, ignore, interactions,
                         inter_width, leave_duplicates, slots, values, origins, record_origin, n,
                         multiplier):
    """Append the crossed features of the example's compiled interaction tuples.  Under VW's
    multiclass layout the crossed hash, as a feature's, is scaled by ``multiplier`` (VW crosses
    the scaled indices; a power-of-two scale commutes with FNV's product and the xor)."""
    s0 = ex_int[row, SEG_START]
    s1 = ex_int[row, SEG_END]
    capacity = slots.shape[0]
    wildcards = False
    for t in range(interactions.shape[0]):
        for k in range(inter_width[t]):
            if interactions[t, k] == WILDCARD:
                wildcards = True
    if wildcards:  # the example's namespaces decide the tuples
        present = np.empty(256, dtype=np.int64)
        n_present = _present_bytes(seg, s0, s1, ignore, present)
        tuples, widths, n_tuples = _compile_interactions(interactions, inter_width, present,
                                                         n_present, leave_duplicates)
    else:  # setup() has already sorted and de-duplicated the terms as VW compiles them
        tuples, widths, n_tuples = interactions, inter_width, interactions.shape[0]
    for q in range(n_tuples):
        width = widths[q]
        a0, a1 = namespace_range(seg, s0, s1, tuples[q, 0], ignore)
        b0, b1 = namespace_range(seg, s0, s1, tuples[q, 1], ignore)
        same_ab = tuples[q, 0] == tuples[q, 1]
        if width == 2:
            for i in range(a0, a1):
                hi = (feat_hash[i] & mask) * FNV_PRIME
                for j in range(i if same_ab else b0, b1):
                    if n < capacity:
                        slots[n] = place(hi ^ (feat_hash[j] & mask), multiplier, mask)
                        values[n] = feat_value[i] * feat_value[j]
                        if record_origin:
                            origins[n, 0] = i
                            origins[n, 1] = j
                            origins[n, 2] = -2
                    n += 1
        else:
            c0, c1 = namespace_range(seg, s0, s1, tuples[q, 2], ignore)
            same_bc = tuples[q, 1] == tuples[q, 2]
            for i in range(a0, a1):
                hi = (feat_hash[i] & mask) * FNV_PRIME
                for j in range(i if same_ab else b0, b1):
                    hij = (hi ^ (feat_hash[j] & mask)) * FNV_PRIME
                    vij = feat_value[i] * feat_value[j]
                    for k in range(j if same_bc else c0, c1):
                        if n < capacity:
                            slots[n] = place(hij ^ (feat_hash[k] & mask), multiplier, mask)
                            values[n] = vij * feat_value[k]
                            if record_origin:
                                origins[n, 0] = i
                                origins[n, 1] = j
                                origins[n, 2] = k
                        n += 1
    return n if n <= capacity else -n


@kernel(inline="always")
def _rate(g, norm, adaptive, normalized, power_t):
    """Per-feature learning-rate factor: ``G^-p`` (adaptive) times ``N^(2(p-1))`` or ``N^-2``.

    ``power_t = 0.5`` (the default) takes one square root instead of ``pow``, as VW does.
    """
    if adaptive:
        if g <= 0.0:
            return 0.0
        if normalized:
            if power_t == 0.5:
                return 1.0 / (math.sqrt(g) * norm)
            return g ** (-power_t) * (norm * norm) ** (power_t - 1.0)
        return 1.0 / math.sqrt(g) if power_t == 0.5 else g ** (-power_t)
    if normalized:
        return 1.0 / (norm * norm)
    return 1.0


@kernel(inline="always")
def power_decay(value, power_t):
    """``value^-power_t`` with the square-root shortcut for the default ``power_t = 0.5``."""
    if power_t == 0.5:
        return 1.0 / math.sqrt(value)
    return value ** (-power_t)


@kernel(inline="always")
def predict_flat(weights, slots, values, first, last, offset, mask, initial):
    """Raw score of one flattened example for the sub-model at slot ``offset``."""
    raw = initial
    if offset == 0:
        for k in range(first, last):
            raw += weights[slots[k], W] * values[k]
    else:
        for k in range(first, last):
            raw += weights[(slots[k] + offset) & mask, W] * values[k]
    return raw


@kernel(inline="always")
def class_scores(weights, slots, values, first, last, offsets, mask, initial, scores):
    """Raw scores of every sub-model at ``offsets`` (classes of a multiclass reduction) into
    ``scores``, feature-major: each feature's slot is read once and its class rows, adjacent in
    the contiguous layout, are summed in independent accumulators (25-30% faster on five
    classes than a :func:`predict_flat` per class)."""
    n = offsets.shape[0]
    for c in range(n):
        scores[c] = initial
    for k in range(first, last):
        slot = slots[k]
        x = values[k]
        for c in range(n):
            scores[c] += weights[(slot + offsets[c]) & mask, W] * x


@kernel(inline="always")
def prefetch_example(weights, slots, first, last, low, high, mask):
    """Start loading the weight rows of an example's features at sub-model offsets ``low`` and
    ``high`` (a multiclass reduction's first and last class: in the contiguous layout the rows
    of the classes between lie on the same cache lines) while the example before it learns;
    the loads from a weight table larger than the L2 cache otherwise stall the scoring."""
    for k in range(first, last):
        prefetch_row(weights, (slots[k] + low) & mask)
        if high != low:
            prefetch_row(weights, (slots[k] + high) & mask)


@kernel(inline="always")
def regularize(params, update, slope):
    """VW's ``--l1``/``--l2`` bookkeeping for one update (gd.cc): the step's effective rate
    ``η̄ = −u/l'`` shrinks every weight by ``1 − λ2·η̄`` (kept as one global ``contraction``,
    which predictions multiply in) and adds ``λ1·η̄`` to the truncation ``gravity``
    (:func:`truncate`); the update itself is divided by the contraction, so it moves the
    effective weights as it would without them.  :func:`sync_weights` folds both into the
    weights."""
    if abs(slope) > 1e-8:
        eta_bar = -update / slope
        params[P_CONTRACTION] *= 1.0 - params[P_L2] * eta_bar
        params[P_GRAVITY] += eta_bar * params[P_L1]
    return update / np.float32(params[P_CONTRACTION])


@kernel(inline="always")
def truncate(weight, gravity):
    """VW's ``trunc_weight``: a weight moved ``gravity`` towards 0, and 0 once it would cross."""
    if gravity < abs(weight):
        return weight - gravity if weight > 0.0 else weight + gravity
    return 0.0


@kernel(inline="always")
def regularized_predict(weights, slots, values, first, last, mask, initial, params):
    """The linear learner's raw score under ``--l1``/``--l2``: weights truncated by the
    gravity (with ``--l1``), the sum times the contraction, as VW's ``predict``."""
    if params[P_L1] > 0.0:
        gravity = np.float32(params[P_GRAVITY])
        raw = initial
        for k in range(first, last):
            raw += truncate(weights[slots[k], W], gravity) * values[k]
    else:
        raw = predict_flat(weights, slots, values, first, last, 0, mask, initial)
    return raw * params[P_CONTRACTION]


@kernel
def sync_weights(weights, params):
    """Fold the pending contraction and gravity into every weight (VW at the end of a pass
    and before a model is written); predictions do not change."""
    if params[P_GRAVITY] == 0.0 and params[P_CONTRACTION] == 1.0:
        return
    gravity = np.float32(params[P_GRAVITY])
    contraction = np.float32(params[P_CONTRACTION])
    for row in range(weights.shape[0]):
        weights[row, W] = truncate(weights[row, W], gravity) * contraction
    params[P_GRAVITY] = 0.0
    params[P_CONTRACTION] = 1.0


@kernel(inline="always")
def learn_flat(weights, slots, values, first, last, offset_a, offset_b, two_sided, mask, model,
               state, params, pred, label, importance, gradient2, aux):
    """One importance-aware GD step (VW gd.cc ``update``) on a binary example.

    The example's features are ``x`` at sub-model ``offset_a`` and, when ``two_sided``, ``-x`` at
    ``offset_b``: a scoring-filter-tree match ``f(c1) - f(c2)`` (SPEC §D.3) moves both
    competitors along the exact flow with the summed sensitivity.  ``model`` picks the
    normalizer sums.
    """
    loss = np.int64(params[P_LOSS])
    adaptive = params[P_ADAPTIVE] != 0.0
    normalized = params[P_NORMALIZED] != 0.0
    power_t = params[P_POWER_T]
    sides = 2 if two_sided else 1
    multiplier = 1.0
    if adaptive or normalized:
        grad2 = importance * gradient2
        if grad2 == 0.0:
            return
        norm_x = 0.0
        per_update = 0.0
        for side in range(sides):
            offset = offset_a if side == 0 else offset_b
            for k in range(first, last):
                slot = (slots[k] + offset) & mask
                x = values[k]
                x2 = x * x
                if x2 < X2_MIN:
                    x2 = X2_MIN
                    x = X_MIN if x > 0.0 else -X_MIN
                g = 0.0
                if adaptive:
                    weights[slot, G] += grad2 * x2
                    g = np.float64(weights[slot, G])
                norm = 1.0
                if normalized:
                    ax = abs(x)
                    norm = np.float64(weights[slot, N])
                    if ax > norm:
                        if norm > 0.0:
                            ratio = norm / ax
                            weights[slot, W] *= ratio ** (2.0 * (1.0 - power_t)) if adaptive \
                                else ratio * ratio
                        weights[slot, N] = ax
                        norm = np.float64(weights[slot, N])
                    norm_x += x2 / (norm * norm) if x2 < X2_MAX else 1.0
                rate = _rate(g, norm, adaptive, normalized, power_t)
                weights[slot, RATE] = rate
                per_update += x2 * rate
        if normalized:
            s_index = NORM_BASE + 2 * model
            state[s_index] += importance * norm_x
            state[s_index + 1] += importance
            if adaptive:
                multiplier = power_decay(state[s_index] / state[s_index + 1], 1.0 - power_t)
            else:
                multiplier = state[s_index + 1] / state[s_index]
            per_update *= multiplier
        scale = params[P_ETA] * importance
        if not adaptive:
            scale *= power_decay(state[T_SUM], power_t)
    else:
        per_update = 0.0
        for k in range(first, last):
            x2 = values[k] * values[k]
            per_update += x2 if x2 >= X2_MIN else X2_MIN
        per_update *= sides
        scale = params[P_ETA] * importance * power_decay(state[T_SUM], power_t)
    if params[P_INVARIANT] != 0.0:
        update = importance_aware_update(loss, pred, label, scale, per_update, aux,
                                         params[P_TAU])
    else:
        update = plain_update(loss, pred, label, scale, aux, params[P_TAU])
    if not math.isfinite(update) or update == 0.0:
        return
    if (params[P_L1] > 0.0 or params[P_L2] > 0.0) and abs(update) > 1e-8:
        update = regularize(params, update, loss_slope(loss, pred, label, params[P_TAU]))
    update *= multiplier
    stateful = adaptive or normalized
    for side in range(sides):
        offset = offset_a if side == 0 else offset_b
        signed = update if side == 0 else -update
        for k in range(first, last):
            slot = (slots[k] + offset) & mask
            step = signed * values[k]
            weights[slot, W] += step * weights[slot, RATE] if stateful else step


@kernel
def sensitivity(weights, slots, values, first, last, state, params, gradient2):
    """``(η, X)`` such that a weight-h update moves the prediction like ``η·h·X`` at first order:
    for adaptive/normalized updates VW's stateless pred-per-update on a shadow of the state."""
    return match_sensitivity(weights, slots, values, first, last, 0, 0, False, -1, 0, state,
                             params, gradient2)  # mask -1: the slots as they are


@kernel
def match_sensitivity(weights, slots, values, first, last, offset_a, offset_b, two_sided, mask,
                      model, state, params, gradient2):
    """:func:`sensitivity` of the example as :func:`learn_flat` would learn it: ``x`` at
    sub-model ``offset_a`` and, when ``two_sided`` (a scoring-filter-tree match), ``-x`` at
    ``offset_b``, with normalizer sums ``model``."""
    adaptive = params[P_ADAPTIVE] != 0.0
    normalized = params[P_NORMALIZED] != 0.0
    power_t = params[P_POWER_T]
    sides = 2 if two_sided else 1
    if not (adaptive or normalized):
        X = 0.0
        for k in range(first, last):
            X += max(values[k] * values[k], X2_MIN)
        return params[P_ETA] * power_decay(state[T_SUM] + 1.0, power_t), sides * X
    norm_x = 0.0
    per_update = 0.0
    for side in range(sides):
        offset = offset_a if side == 0 else offset_b
        for k in range(first, last):
            slot = (slots[k] + offset) & mask
            x2 = max(values[k] * values[k], X2_MIN)
            g = np.float64(weights[slot, G]) + gradient2 * x2 if adaptive else 0.0
            norm = max(np.float64(weights[slot, N]), math.sqrt(x2)) if normalized else 1.0
            if normalized:
                norm_x += x2 / (norm * norm) if x2 < X2_MAX else 1.0
            per_update += x2 * _rate(g, norm, adaptive, normalized, power_t)
    if normalized:
        s_sum = state[NORM_BASE + 2 * model] + norm_x
        t_sum = state[NORM_BASE + 2 * model + 1] + 1.0
        per_update *= power_decay(s_sum / t_sum, 1.0 - power_t) if adaptive else t_sum / s_sum
    eta = params[P_ETA] if adaptive else params[P_ETA] * power_decay(state[T_SUM] + 1.0, power_t)
    return eta, per_update


@kernel
def reverting_weight_linear(weights, slots, values, first, last, state, params, sampler, pred):
    """``H = h_min(x*, −ŷ)`` for a linear example (SPEC §C.3; ``inf`` when not reachable)."""
    loss = np.int64(params[P_LOSS])
    if loss == SQUARED:
        low, high = sampler[SAMPLER_LOW], sampler[SAMPLER_HIGH]
        if high <= low:
            return math.inf  # degenerate label range (erratum 3: then query)
        target = 0.5 * (low + high)
        label = low if abs(pred - low) > abs(pred - high) else high
    else:
        target = 0.0
        label = -1.0 if pred >= 0.0 else 1.0
    _, gradient2, _ = loss_terms(loss, pred, label, params[P_TAU])
    eta, X = sensitivity(weights, slots, values, first, last, state, params, gradient2)
    return hmin_linear(loss, pred, label, X, eta, target)


@kernel
def hmin_examples(starts, slots, values, initials, targets, labels, weights, state, params, mask,
                  out):
    """``h_min`` of each example under the current linear model (SPEC §C.1-C.2), with the
    sensitivity the example would be learned with; a label of 0 asks for the reverting weight."""
    loss = np.int64(params[P_LOSS])
    for e in range(targets.shape[0]):
        first = starts[e]
        last = starts[e + 1]
        raw = predict_flat(weights, slots, values, first, last, 0, mask, initials[e])
        pred = min(max(raw, state[MIN_LABEL]), state[MAX_LABEL])
        label = labels[e] if labels[e] != 0.0 else (-1.0 if pred >= 0.0 else 1.0)
        _, gradient2, _ = loss_terms(loss, pred, label, params[P_TAU])
        eta, X = sensitivity(weights, slots, values, first, last, state, params, gradient2)
        out[e] = hmin_linear(loss, pred, label, X, eta, targets[e])


@kernel(inline="always")
def widen_range(state, label):
    """VW clips predictions to the range of the labels learned from so far: widen it by
    ``label`` (binary sub-problems of the multiclass reductions see ±1)."""
    if label < state[MIN_LABEL]:
        state[MIN_LABEL] = label
    if label > state[MAX_LABEL]:
        state[MAX_LABEL] = label


@kernel(inline="always")
def _score_example(e, starts, slots, values, labels, initials, labelled, holdout, weights, state,
                   params, mask, out_pred, out_raw, training, fixed_range, regularized):
    """Example ``e``'s clipped prediction into ``out_pred`` (raw score into ``out_raw``), after
    widening the label range by its label when it trains; ``(prediction, 1 if the raw score was
    NaN and forced to 0 else 0)``."""
    first = starts[e]
    last = starts[e + 1]
    if e + 1 < labels.shape[0]:
        prefetch_example(weights, slots, last, starts[e + 2], 0, 0, mask)
    label = labels[e]
    # VW widens the clip range from the labels it learns from, not from a -t or holdout
    # example's label (which would leak into its own prediction)
    if labelled[e] and training and holdout[e] == 0 and not fixed_range:
        widen_range(state, label)
    if regularized:
        raw = regularized_predict(weights, slots, values, first, last, mask, initials[e], params)
    else:
        raw = predict_flat(weights, slots, values, first, last, 0, mask, initials[e])
    nan = 0
    if math.isnan(raw):
        nan = 1
        raw = 0.0
    pred = min(max(raw, state[MIN_LABEL]), state[MAX_LABEL])
    out_raw[e] = raw
    out_pred[e] = pred
    return pred, nan


@kernel(inline="always")
def _scored_example(e, starts, slots, values, labels, importances, initials, labelled, holdout,
                    weights, state, params, mask, out_pred, out_raw, out_loss):
    """:func:`_score_example` and the example's loss terms (its weighted loss into
    ``out_loss``): ``(prediction, NaN count, label, importance, l, l'², aux, loss code)``."""
    training = params[P_TRAINING] != 0.0
    regularized = params[P_L1] > 0.0 or params[P_L2] > 0.0
    loss = np.int64(params[P_LOSS])
    pred, nan = _score_example(e, starts, slots, values, labels, initials, labelled, holdout,
                               weights, state, params, mask, out_pred, out_raw, training,
                               params[P_FIXED_RANGE] != 0.0, regularized)
    label = labels[e]
    importance = importances[e]
    value, gradient2, aux = loss_terms(loss, pred, label, params[P_TAU])
    out_loss[e] = value * importance if labelled[e] else 0.0
    return pred, nan, label, importance, value, gradient2, aux, loss


@kernel(inline="always")
def _learn_example(weights, slots, values, first, last, state, params, mask, loss, pred, label,
                   importance, value, gradient2, aux):
    state[T_SUM] += importance
    if loss_is_positive(loss, pred, label, value):
        learn_flat(weights, slots, values, first, last, 0, 0, False, mask, 0, state, params,
                   pred, label, importance, gradient2, aux)


@kernel
def learn_passive(starts, slots, values, labels, importances, initials, labelled, holdout,
                  weights, state, params, mask, out_pred, out_raw, out_loss, active, sampler,
                  uniforms, mellowness, requests):
    """:func:`learn_examples` without active learning (same arguments; ``active`` must be 0):
    a kernel that does not call the sampler's code does not compile it, 2.5 of the 20 seconds
    a first run of the default learner spent compiling."""
    training = params[P_TRAINING] != 0.0
    nan_count = 0
    for e in range(labels.shape[0]):
        pred, nan, label, importance, value, gradient2, aux, loss = _scored_example(
            e, starts, slots, values, labels, importances, initials, labelled, holdout, weights,
            state, params, mask, out_pred, out_raw, out_loss)
        nan_count += nan
        if training and labelled[e] and holdout[e] == 0 and importance > 0.0:
            _learn_example(weights, slots, values, starts[e], starts[e + 1], state, params, mask,
                           loss, pred, label, importance, value, gradient2, aux)
    return nan_count


@kernel
def learn_examples(starts, slots, values, labels, importances, initials, labelled, holdout,
                   weights, state, params, mask, out_pred, out_raw, out_loss, active, sampler,
                   uniforms, mellowness, requests):
    """Predict (and, when training, learn) each flattened example in order, with the active
    sampler of ``active`` (SPEC §C; :func:`learn_passive` is the loop without it).

    Writes the clipped prediction, raw score and weighted loss (labelled examples only);
    returns the number of NaN predictions that were forced to 0 (VW does the same).
    """
    training = params[P_TRAINING] != 0.0
    nan_count = 0
    for e in range(labels.shape[0]):
        pred, nan, label, importance, value, gradient2, aux, loss = _scored_example(
            e, starts, slots, values, labels, importances, initials, labelled, holdout, weights,
            state, params, mask, out_pred, out_raw, out_loss)
        nan_count += nan
        first = starts[e]
        last = starts[e + 1]
        if active == REQUEST and not labelled[e] and importance > 0.0:  # under -t too (VW)
            H = reverting_weight_linear(weights, slots, values, first, last, state, params,
                                        sampler, pred)
            requests[e] = request(H, importance, sampler, mellowness, uniforms[e])
        if training and labelled[e] and holdout[e] == 0 and importance > 0.0:
            if active == SIMULATION:
                H = reverting_weight_linear(weights, slots, values, first, last, state, params,
                                            sampler, pred)
                probability = query(H, importance, label, pred, sampler, mellowness,
                                    uniforms[e], loss)
                if probability == 0.0:
                    requests[e] = NOT_QUERIED
                    continue
                importance /= probability
                requests[e] = importance
            elif active == REQUEST:
                returned_label(importance, label, pred, sampler, loss)
            _learn_example(weights, slots, values, first, last, state, params, mask, loss, pred,
                           label, importance, value, gradient2, aux)
    return nan_count
