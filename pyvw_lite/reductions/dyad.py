"""``--dyad LR --rank k``: the dyadic (low-rank rater × task) base learner, SPEC §B.

For every pair of namespace letters ``(L, R)`` each feature ``f`` owns a latent vector ``V_f`` of
``k`` coordinates, kept in the last ``k`` columns of its linear weight's row (see
:func:`latent_column`), and

    p = Σ_pairs (ã·b̃ − σk) + Σ_j x_j W_j,   ã = σ1 + Σ_{f∈L} x_f V_f,   b̃ = σ1 + Σ_{g∈R} x_g V_g

(``σ = 0`` in the plain form, the default; 1 in SPEC §B's shifted form, ``--dyad_shifted``).  An
update moves every parameter along the exact gradient flow of ``p`` (closed form in the flow
coordinate ``s``): hinge and quantile in closed form, logistic and squared by the
one-dimensional ODE of ``learners.dyadic``.  The latent rate is ``-l × --dyad_rate`` (constant
by default, :func:`latent_eta`), the linear terms take VW's adaptive normalized rates, and
proximal ridge steps follow: under squared loss ALS's per-row ridge on the biases and latent
vectors of the ``--dyad`` namespaces (:func:`row_shrink`, rows counted in the first pass),
otherwise an L2 step sized by the data (:func:`sized_l2`).  On a latent vector's first
update a small seeded perturbation breaks the symmetry of the all-zero start (SPEC §B.8).
``--lrqdropout`` drops half the latent coordinates of each step, as VW's ``lrq``
(:func:`drop_coordinates`).  Choices and measurements: docs/dyadic.md.
"""
from __future__ import annotations

import math

import numpy as np

from ..io.hashing import murmur3_u32, murmur_ranges
from ..io.vw_text import SEG_END, SEG_START
from ..jit import kernel, prefetch_row
from ..learners.dyadic import (NOT_QUERIED, REQUEST, SIMULATION, dyad_terms, expm1_pair, hinge_step,
                               hmin_dyadic, increments, quantile_step, query, request,
                               returned_label, series_scratch, solve_flow)
from ..learners.gd import (G, L2_REFERENCE_USES, LATENT_ROWS, LATENT_USES, MAX_LABEL,
                           MIN_LABEL, N, NORM_BASE, P_DYAD_ADAPTIVE, P_DYAD_COUNT,
                           P_DYAD_BIAS_L2, P_DYAD_DROPOUT, P_DYAD_L2, P_DYAD_L2_POWER,
                           P_DYAD_POWER_T, P_DYAD_ROW_L2,
                           P_DYAD_SEED, P_ETA, P_FIXED_RANGE, P_L2, P_LATENT_RATE, P_LOSS,
                           P_NORMALIZED, P_ODE_SOLVER, P_TAU, P_TRAINING, T_SUM, W, X2_MAX,
                           namespace_range, power_decay, predict_flat, prefetch_example,
                           widen_range)
from ..learners.losses import HINGE, QUANTILE, loss_terms
from ..options import DYAD_SEED, OptionError, Options

MAX_RANK = 1024  # each latent coordinate is a column of the 2^b-row weight table


@kernel(inline="always")
def latent_eta(params, t):
    """The flow's (latent) rate at schedule time ``t``: ``-l`` times ``--dyad_rate``, decayed
    by ``--dyad_power_t``."""
    return params[P_ETA] * params[P_LATENT_RATE] * power_decay(t, params[P_DYAD_POWER_T])


# --dyad_l2's default under the quantile loss.  The penalty's step is the same whatever the
# loss, but quantile's gradient is tau or 1 - tau (0.5 at the median) where squared loss's is
# 2(p - y), about three times larger at this data's errors, so 0.15 held every latent vector
# near zero.  On VW's movielens demo line (--loss_function quantile -l 0.45 -b 24 --passes 100
# --lrq um14 --lrqdropout), gen_dyadic seeds 1 and 2, test MAE at 0.15 / 0.08 / 0.05 / 0.03 /
# 0.015: 0.788 / 0.782 / 0.738 / 0.759 / 0.793 and 0.778 / 0.772 / 0.734 / 0.754 / 0.788
# (docs/dyadic.md).
QUANTILE_L2 = 0.05


# The default latent penalty follows how often each latent vector is used: per update it is
# --dyad_l2's base × (n̄ / 60)^-0.6, n̄ the mean number of updates per latent row in a pass.  A
# vector updated n times a pass is shrunk n times, so a fixed per-update penalty grows with n
# where the data's evidence about the vector grows too; the best penalty falls as n̄^-0.6 over
# eight gen_dyadic sets of 44,000 to 893,000 ratings and n̄ 41 to 225 (docs/dyadic.md: fitted
# on five, predicted the other three within 0.0006 of their best test MSE).
L2_SIZE_POWER = 0.6

# Per-row ridge penalties, in ALS's units: the objective of a pass is the squared error plus
# lambda·|w|² per row whatever its count (Koren's biased matrix factorisation), so an update of a
# row used n times takes lambda/n of it (:func:`row_shrink`).  Rows are counted in the first pass
# (the ``touched`` byte, saturating at 255).  Chosen on gen_dyadic sets (docs/dyadic.md).
BIAS_L2 = 3.0
ROW_L2 = 8.0
COUNT_CAP = 255

# The latent rate.  Under the per-row ridge (squared loss, the ratings defaults) it starts at 0.09
# and is multiplied by 0.93 after each pass (0.047 in pass 10, 0.023 in pass 20): the latent
# vectors start small and grow only as fast as the rate lets them, so a constant 0.03 was still far
# from converged after 20 passes (gen_dyadic sets where 60 passes from any start came out ahead of
# a tuned ALS, and 20 spread over 0.02 of test MSE from start to start).  Chosen among eight
# schedules on seeds 101, 102 and 501-504 and scored on fresh seeds 601-606 (docs/dyadic.md); a
# faster start (0.15 decayed by 0.9) overfitted in its first passes and VW's early termination
# stopped it there.  Elsewhere the rate is a constant 0.03.
PLAIN_RATE = 0.03
RIDGE_RATE = 0.09
RIDGE_DECAY = 0.93
# --dyad_rate's range (a fraction of -l; beyond it the flow overflows to NaN), --dyad_decay's is
# (0, 1]: a rate that grows over passes is refused
MIN_LATENT_RATE, MAX_LATENT_RATE = 1e-9, 100.0


def in_schedule_range(name: str, value: float) -> bool:
    """Whether the flow can take ``value`` as the latent ``rate`` (``MIN_LATENT_RATE`` to
    ``MAX_LATENT_RATE``) or as a factor per pass or reached so far (above 0, at most 1)."""
    low, high = (MIN_LATENT_RATE, MAX_LATENT_RATE) if name == "rate" else (0.0, 1.0)
    return low <= value <= high and value > 0.0


def lowest_latent_scale(rate: float) -> float:
    """The smallest factor the latent ``rate`` may take from ``--dyad_decay``: the one that
    brings it to ``MIN_LATENT_RATE`` (a rate of 0 makes the flow NaN), or 1 for a rate at the
    bound already.  A decayed rate stops there, and a model's stored factor is checked
    against it."""
    return min(MIN_LATENT_RATE / rate, 1.0)


@kernel(inline="always")
def row_shrink(rate, importance, penalty, count):
    """The proximal factor of the per-row ridge ``penalty`` (ALS's lambda) on one update of a
    row used ``count`` times, moved at ``rate``: ``1/(1 + 2·rate·h·penalty/count)``, the exact
    minimiser of ``rate·h·penalty/count·w² + (w − w_step)²/2``; 1 for an uncounted row."""
    if penalty == 0.0 or count == 0:
        return 1.0
    return 1.0 / (1.0 + 2.0 * rate * importance * penalty / count)


@kernel(inline="always")
def sized_l2(params, state):
    """The latent penalty of this update: ``--dyad_l2`` itself when it was given, otherwise its
    default × ``(n̄/60)^-0.6``, ``n̄`` the uses per latent row counted so far (at least 1).

    While the first pass counts, ``n̄`` so far underestimates the pass's (rows are found faster
    than they are reused), so the factor is capped at 1 there: uncapped, the first pass's larger
    penalty slowed the latent part (gen_dyadic seed 1, 5 and 10 passes: test MSE 0.006 and 0.004
    above the fixed penalty the rule ends at)."""
    l2 = params[P_DYAD_L2]
    power = params[P_DYAD_L2_POWER]
    if power == 0.0 or l2 == 0.0:
        return l2
    uses = max(state[LATENT_USES] / max(state[LATENT_ROWS], 1.0), 1.0)
    factor = (uses / L2_REFERENCE_USES) ** -power
    if params[P_DYAD_COUNT] != 0.0:  # still counting: n̄ so far is low, never raise the penalty
        factor = min(factor, 1.0)
    return l2 * factor


def shared_rows(rows: int, table: int) -> int:
    """About how many of the dyadic features share their weight row with another, from the
    ``rows`` distinct rows they filled in a ``table`` of rows: ``F`` features hashed at random
    fill ``R(1 − e^(−F/R))`` rows on average, so ``F ≈ −R·ln(1 − rows/R)`` and ``F − rows`` of
    them landed on a row already taken.  Features that share a row share its bias and latent
    vector: on Ciao (112,000 users and items in the 2^18 rows of -b 18) the biases alone lost
    0.014 of held-out MSE to the same learner at -b 22 (tests/accuracy/dyad_real.py)."""
    if rows <= 0 or table <= 0:
        return 0
    if rows >= table:
        return table
    return max(int(round(-table * math.log1p(-rows / table))) - rows, 0)


def dyad_settings(options: Options) -> dict:
    """The dyadic learner's form and latent schedule, each given value or its form's default.

    The plain form ``p = a·b`` with a constant latent rate of 0.03·``-l``, a 0.1 start and an
    L2 penalty of 0.15 sized by the uses per latent row (:func:`sized_l2`) is the default:
    chosen on gen_dyadic sets other than seed 7, it reached test MSE 0.780 on seed 7 (0.772
    over six start seeds) and 0.689 at 1,000,000 ratings, where SPEC §B's shifted form with its
    schedule (``--dyad_shifted``) stayed at the bias-only 0.90 (its latent vectors start along
    the all-ones direction and their rate decays as ``t^-1/2``; docs/dyadic.md).
    ``l2_power``: the size exponent, 0 when ``--dyad_l2`` is given.  ``bias_l2``, ``row_l2``:
    the per-row ridge penalties (:func:`row_shrink`); under squared loss they default to 3 and 8
    (issue 41: within 0.01 of, or ahead of, a tuned batch ALS on generated long-tailed ratings)
    and the per-row latent one replaces the sized default; there the latent rate starts at 0.09
    and ``decay``, its factor per pass (``--dyad_decay``), is 0.93 (elsewhere 0.03 and 1)."""
    if options.dyad_plain and options.dyad_shifted:
        raise OptionError("--dyad_plain and --dyad_shifted name two forms; give one")
    shifted = bool(options.dyad_shifted)
    # --lrqdropout drops coordinates of binary and regression updates; then it is the latent
    # penalty, as in VW (with the default one as well the latent part stayed near zero)
    dropout = bool(options.lrqdropout) and not (options.oaa or options.ect or options.sft)
    # ALS's ridge per row (Koren's biased MF): lambda/n per update of a row used n times.  Its
    # defaults are in squared error's units, chosen on ratings (binary and regression learning,
    # no dropout): elsewhere they are 0.  Where the per-row latent penalty is on, it replaces
    # the default per-update one (--dyad_l2 still adds one when given), and the latent rate
    # starts faster and decays over passes (RIDGE_RATE, RIDGE_DECAY).
    ratings = options.loss_function == "squared" and not shifted and not dropout and not (
        options.oaa or options.ect or options.sft)
    bias_l2 = float(options.dyad_bias_l2 if options.dyad_bias_l2 is not None
                    else BIAS_L2 if ratings else 0.0)
    row_l2 = float(options.dyad_row_l2 if options.dyad_row_l2 is not None
                   else ROW_L2 if ratings else 0.0)
    ridge = ratings and row_l2 > 0.0
    if options.dyad_rate is not None:
        rate = options.dyad_rate
    elif options.dyad_plain_rate:
        rate = 1.0
    else:
        rate = 1.0 / (2.0 * options.rank) if shifted else RIDGE_RATE if ridge else PLAIN_RATE
    chosen = dict(shift=1.0 if shifted else 0.0, rate=float(rate),
                  noise=options.dyad_noise if options.dyad_noise is not None
                  else (0.01 if shifted else 0.1),
                  l2=options.dyad_l2 if options.dyad_l2 is not None else (
                      0.0 if shifted or dropout
                      else QUANTILE_L2 if options.loss_function == "quantile" else 0.15),
                  power_t=options.dyad_power_t if options.dyad_power_t is not None
                  else (options.power_t if shifted else 0.0))
    # a given --dyad_l2 is the penalty itself; the default one follows the uses per row
    chosen["l2_power"] = L2_SIZE_POWER if options.dyad_l2 is None and not shifted else 0.0
    chosen["dropout"] = dropout
    chosen["bias_l2"], chosen["row_l2"] = bias_l2, row_l2
    chosen["decay"] = float(options.dyad_decay if options.dyad_decay is not None
                            else RIDGE_DECAY if ridge else 1.0)
    if chosen["row_l2"] > 0.0 and options.dyad_l2 is None:
        chosen["l2"] = 0.0
        chosen["l2_power"] = 0.0
    if dropout and shifted:
        raise OptionError("--lrqdropout drops latent coordinates of the plain form p = a·b; "
                          "it cannot go with --dyad_shifted")
    for name, limits in (("rate", f"between {MIN_LATENT_RATE:g} and {MAX_LATENT_RATE:g}"),
                         ("decay", "above 0 and at most 1")):
        if not in_schedule_range(name, chosen[name]):
            raise OptionError(f"option '--dyad_{name}': {chosen[name]:g} must be {limits}")
    for name in ("noise", "l2", "power_t", "bias_l2", "row_l2"):
        if not 0.0 <= chosen[name] < math.inf:
            raise OptionError(f"option '--dyad_{name}': {chosen[name]:g} must be a finite "
                              "number, at least 0")
    return chosen


@kernel(inline="always")
def latent_column(weights, rank):
    """Column of latent coordinate 0: a feature's latent vector for class ``c`` lives in the
    last ``rank`` columns of the row of its linear weight, ``(place(fh) + c·P_C) & mask``.

    SPEC §D.5 hashes each coordinate to a row of its own, ``(fh + c·P_C + (q+1)·P_L) & mask``.
    That triples the rows a rank-2 model fills, and a latent coordinate that lands on another
    feature's linear weight adds that weight to ``ã = 1 + Σ x V``: at -b 18 the rank-2 model of
    s4_Relevance (20,232 tasks and 766 raters, four classes) filled 250,000 of 262,144 rows and
    lost 0.009 of progressive 0/1 loss to the linear model, where at -b 24 it ties (README).
    Kept with the linear weight, the latent vector collides exactly when the weight does, as
    VW keeps every parameter of a feature in one stride, and scoring a feature reads one row,
    not ``k + 1`` scattered ones."""
    return weights.shape[1] - rank


@kernel(inline="always")
def _noise(key, seed):
    """``u(key) = murmur3(key as 4 little-endian bytes, seed)/2^31 − 1`` in [-1, 1), ``key =
    row·k + q`` for latent coordinate ``q`` of a row (SPEC §B.8's slot index, for the latent
    table of ``k`` columns; ``seed`` is ``--dyad_seed``, SPEC's ``dyad_seed``)."""
    return murmur3_u32(key, seed) / 2147483648.0 - 1.0


@kernel(inline="always")
def _side(weights, feat_hash, feat_value, first, last, offset, rank, shift, mask, out, row):
    """``shift·1 + Σ x_f V_f`` (class ``offset``) into ``out[row]``; returns ``Σ x_f²``."""
    norm = 0.0
    column = latent_column(weights, rank)
    for q in range(rank):
        out[row, q] = shift
    for j in range(first, last):
        x = np.float64(feat_value[j])
        norm += x * x
        slot = (np.int64(feat_hash[j]) + offset) & mask
        for q in range(rank):
            out[row, q] += x * weights[slot, column + q]
    return norm


@kernel(inline="always")
def _move(weights, feat_hash, feat_value, first, last, offset, rank, mask, delta, scale):
    """``V_f += (x_f / c)·Δ`` for the features of one side (SPEC §B.2 write-back)."""
    column = latent_column(weights, rank)
    for j in range(first, last):
        x = np.float64(feat_value[j]) * scale
        slot = (np.int64(feat_hash[j]) + offset) & mask
        for q in range(rank):
            weights[slot, column + q] += x * delta[q]


@kernel(inline="always")
def namespace_ranges(ex_int, seg, row, pairs, ignore, ranges):
    """Feature ranges ``[L first, L last, R first, R last]`` of every pair in one example."""
    s0 = ex_int[row, SEG_START]
    s1 = ex_int[row, SEG_END]
    for m in range(pairs.shape[0]):
        ranges[m, 0], ranges[m, 1] = namespace_range(seg, s0, s1, pairs[m, 0], ignore)
        ranges[m, 2], ranges[m, 3] = namespace_range(seg, s0, s1, pairs[m, 1], ignore)


@kernel(inline="always")
def class_score(weights, slots, values, first, last, feat_hash, feat_value, ranges, offset,
                rank, shift, mask, initial, a, b, side):
    """``f(x, c)``: linear part plus ``Σ_pairs (ã·b̃ − σk)`` for the class at ``offset``;
    leaves the pairs' ``ã``, ``b̃`` in rows ``side·pairs + m`` of ``a``, ``b`` (whole buffers
    indexed by row: a view per call would cost an atomic reference count)."""
    score = predict_flat(weights, slots, values, first, last, offset, mask, initial)
    for m in range(ranges.shape[0]):
        row = side * ranges.shape[0] + m
        _side(weights, feat_hash, feat_value, ranges[m, 0], ranges[m, 1], offset, rank, shift,
              mask, a, row)
        _side(weights, feat_hash, feat_value, ranges[m, 2], ranges[m, 3], offset, rank, shift,
              mask, b, row)
        for q in range(rank):
            score += a[row, q] * b[row, q]
        score -= shift * rank
    return score


@kernel(error_model="numpy")
def rescore(weights, slots, values, first, last, feat_hash, feat_value, ranges, offset, rank,
            shift, mask, initial, a, b, side):
    """:func:`class_score` as a call of its own, for the rare rescoring inside a match."""
    return class_score(weights, slots, values, first, last, feat_hash, feat_value, ranges,
                       offset, rank, shift, mask, initial, a, b, side)


@kernel(inline="always")
def match_statistics(weights, slots, values, first, last, feat_hash, feat_value, ranges, sides,
                     known, n_sides, rank, shift, mask, initial, a, b, U, V, r, ca, cb):
    """``(p, X)`` of a binary example ``f(x, c_0) [− f(x, c_1)]`` and its ``U``, ``V``, ``r``,
    ``c_a``, ``c_b`` written into the given arrays (SPEC §B.3): the second competitor's dyads
    enter with ``U`` and ``V`` swapped (``−a·b = a·(−b)``), an absent side adds its
    linearisation to ``X``.

    Side ``i`` is the class at slot offset ``sides[i, 0]`` whose ``ã``, ``b̃`` live in row block
    ``sides[i, 1]`` of ``a``, ``b`` (rows ``block·pairs + m``).  ``known[i]``: the class score
    ``f(x, c_i)`` without the initial prediction when those rows already hold its current
    ``ã``, ``b̃`` (a multiclass loop scored the class and nothing it reads has moved since), NaN
    to score it here (which fills the rows and ``known[i]``)."""
    n_pairs = ranges.shape[0]
    X = 0.0
    for k in range(first, last):
        X += values[k] * values[k]
    X *= n_sides
    for d in range(U.shape[0]):  # unused entries (one competitor) stay zero: skipped dyads
        U[d] = 0.0
        V[d] = 0.0
        r[d] = 0.0
    p = initial
    for side in range(n_sides):
        block = sides[side, 1]
        score = known[side]
        if np.isnan(score):
            score = rescore(weights, slots, values, first, last, feat_hash, feat_value, ranges,
                            sides[side, 0], rank, shift, mask, 0.0, a, b, block)
            known[side] = score
        p += score if side == 0 else -score
        for m in range(n_pairs):
            ca[m] = 0.0
            cb[m] = 0.0
            for j in range(ranges[m, 0], ranges[m, 1]):
                ca[m] += np.float64(feat_value[j]) ** 2
            for j in range(ranges[m, 2], ranges[m, 3]):
                cb[m] += np.float64(feat_value[j]) ** 2
            d = side * n_pairs + m
            if ca[m] > 0.0 and cb[m] > 0.0:
                u, v, rate = dyad_terms(a, b, block * n_pairs + m, ca[m], cb[m])
                U[d], V[d], r[d] = (u, v, rate) if side == 0 else (v, u, rate)
            elif ca[m] > 0.0 or cb[m] > 0.0:  # an absent side: linear in s (SPEC §B.2)
                X += (ca[m] + cb[m]) * shift * shift * rank
    return p, X


@kernel(inline="always")
def classes_share_rows(slots, first, last, offsets, mask):
    """Whether the example's weight rows of two different classes can coincide (a hash
    collision): ``(slot_k + off_c) & mask == (slot_j + off_d) & mask`` with ``c != d``, i.e. a
    difference of two of its slots equals a difference of two class offsets.  Then an update
    of one class can move another's score, and the multiclass loops score every match from the
    current weights instead of reusing the scores of the class scoring pass.  A class's rows
    are its linear slots: its dyadic features' latent vectors live in the same rows."""
    span = offsets.shape[0] - 1
    consecutive = True
    for c in range(1, offsets.shape[0]):
        if (offsets[c] - offsets[0]) & mask != c:
            consecutive = False
            break
    if consecutive:  # offsets 0 .. K-1 apart: a gap of 1 .. K-1 either way
        for k in range(first, last):
            for j in range(k + 1, last):
                gap = (slots[k] - slots[j]) & mask
                if (gap != 0 and gap <= span) or gap >= mask + 1 - span:
                    return True
        return False
    for k in range(first, last):
        for j in range(first, last):
            gap = (slots[k] - slots[j]) & mask
            for c in range(1, offsets.shape[0]):
                if gap == (offsets[c] - offsets[0]) & mask:
                    return True
    return False


@kernel(inline="always")
def linear_rates(weights, slots, values, first, last, sides, n_sides, mask, loss, p, label,
                 tau, importance, eta0, eta, rates, commit, state, norm_index):
    """Per-feature rates of the linear terms relative to the flow's ``eta``, the rates VW's
    default update (adaptive, normalized) gives them: feature k moves at
    ``eta0 / (sqrt(G_k) · N_k) · M``, ``G_k`` the importance-weighted squared gradients
    including this example's at ``p``, ``N_k`` the largest ``|x_k|`` seen at the slot and
    ``M = (Σ h·Σ x²/N² / Σ h)^-1/2`` the global normalizer of ``state[norm_index]`` (``N_k = M
    = 1`` when ``norm_index < 0``: adaptive only).  ``commit`` stores the new ``G_k``, ``N_k``
    (rescaling the weight as VW does when ``N_k`` grows) and normalizer sums; otherwise the
    rates are what the example would get, as VW's stateless sensitivity.  Fills ``rates`` and
    returns ``sum rate_k x_k^2 - sum x_k^2`` over the sides: what to add to the plain ``X``."""
    _, gradient2, _ = loss_terms(loss, p, label, tau)
    normalized = norm_index >= 0
    norm_x = 0.0
    for side in range(n_sides):
        for k in range(first, last):
            slot = (slots[k] + sides[side, 0]) & mask
            x = values[k]
            x2 = x * x
            total = weights[slot, G] + importance * gradient2 * x2
            if commit:
                weights[slot, G] = total
            norm = 1.0
            if normalized:
                norm = max(np.float64(weights[slot, N]), abs(x))
                if commit and norm > weights[slot, N]:
                    if weights[slot, N] > 0.0:
                        weights[slot, W] *= weights[slot, N] / norm
                    weights[slot, N] = norm
                    norm = np.float64(weights[slot, N])
                if norm > 0.0:
                    norm_x += x2 / (norm * norm) if x2 < X2_MAX else 1.0
            rates[side, k - first] = eta0 / (eta * np.sqrt(total) * norm) \
                if total > 0.0 and norm > 0.0 else 0.0
    multiplier = 1.0
    if normalized:
        total_x = state[norm_index] + importance * norm_x
        total_h = state[norm_index + 1] + importance
        if commit:
            state[norm_index] = total_x
            state[norm_index + 1] = total_h
        if total_x > 0.0:
            multiplier = 1.0 / np.sqrt(total_x / total_h)
    change = 0.0
    for side in range(n_sides):
        for k in range(first, last):
            rates[side, k - first] *= multiplier
            change += (rates[side, k - first] - 1.0) * values[k] * values[k]
    return change


@kernel(inline="always")
def normalizer(params, model):
    """Index of sub-model ``model``'s normalizer sums in the state, -1 without --normalized."""
    return NORM_BASE + 2 * model if params[P_NORMALIZED] != 0.0 else -1


def symmetry_noise(rows: np.ndarray, rank: int, noise: float, seed: int = DYAD_SEED
                   ) -> np.ndarray:
    """What :func:`flow_update` adds to the latent coordinates of each row when it first
    touches it: an array of ``rows.size × rank``."""
    keys = (rows.astype(np.int64)[:, None] * rank + np.arange(rank)) & 0xFFFFFFFF
    buf = np.ascontiguousarray(keys.ravel(), dtype="<u4").view(np.uint8)
    starts = np.arange(keys.size, dtype=np.int64) * 4
    u = murmur_ranges(buf, starts, starts + 4, seed & 0xFFFFFFFF) / 2147483648.0 - 1.0
    return noise * u.reshape(rows.size, rank)


# VW's --lrqdropout keeps each latent coordinate of a learned example with probability 1/2 and
# predicts with the latent term halved (lrq.cc: `scale = 0.5` outside training).  The coordinates
# kept are bits of murmur3 of the schedule time (the importance seen so far) under this salt and
# --dyad_seed: seeded, so a run repeats exactly, and different in every pass.
DROPOUT_SALT = 0x6C727164  # "lrqd"
DROPOUT_SCALE = 0.5


@kernel(inline="always")
def latent_sum(a, b, rows, rank):
    """``Σ ã·b̃`` over the first ``rows`` rows of ``a``, ``b`` (the plain form's latent term of
    class 0)."""
    total = 0.0
    for row in range(rows):
        for q in range(rank):
            total += a[row, q] * b[row, q]
    return total


@kernel(inline="always")
def drop_coordinates(weights, slots, values, first, last, feat_hash, feat_value, ranges, sides,
                     known, n_sides, rank, mask, a, b, key, seed):
    """``--lrqdropout``: zero the dropped coordinates of every pair's ``ã``, ``b̃`` and take
    their products out of the sides' scores ``known`` (scoring a side first where it is NaN).

    The flow then moves only the kept coordinates: a dropped one has ``ã_q = b̃_q = 0``, so its
    increments (:func:`increments`) are zero, and the step is the exact flow of the model with
    those coordinates removed, as VW's step sees the example without them."""
    n_pairs = ranges.shape[0]
    for side in range(n_sides):
        block = sides[side, 1]
        if np.isnan(known[side]):
            known[side] = rescore(weights, slots, values, first, last, feat_hash, feat_value,
                                  ranges, sides[side, 0], rank, 0.0, mask, 0.0, a, b, block)
        bits = 0
        for q in range(rank):
            if q % 32 == 0:
                bits = murmur3_u32((key + (q // 32) * 0x9E3779B9) & 0xFFFFFFFF, seed)
            if (bits >> (q % 32)) & 1 == 0:
                for m in range(n_pairs):
                    row = block * n_pairs + m
                    known[side] -= a[row, q] * b[row, q]
                    a[row, q] = 0.0
                    b[row, q] = 0.0


@kernel(inline="always")
def flow_update(weights, touched, slots, values, first, last, feat_hash, feat_value, ranges,
                sides, known, n_sides, rank, shift, noise, mask, params, label, initial, eta,
                importance, rtol, atol, a, b, work, low, high, state, norm_index):
    """One exact importance-aware step of a binary example whose prediction is
    ``f(x, c_0) [− f(x, c_1)]`` (one class, or a scoring-filter-tree match moving both).

    Breaks the symmetry of untouched latent vectors, rebuilds the statistics
    (:func:`match_statistics`), solves for ``s`` and writes every parameter back along its
    closed-form curve (the second competitor at ``−s``, SPEC §D.3).  Returns ``(s, capped)``.

    With ``params[P_DYAD_ADAPTIVE]`` set, the linear terms take VW's per-feature adaptive (and,
    with ``norm_index >= 0``, normalized: :func:`linear_rates`) rates, fixed for the step,
    instead of the flow's plain ``eta``; the flow stays exact, the linear part of ``X`` is just
    weighted by the rates.  Unset: every parameter at the plain rate (SPEC §B as written).

    The step is solved from the prediction clipped to ``[low, high]``: the multiclass
    reductions pass their binary problems' ±1 range, as their linear versions (and VW) clip, so
    a class far on the wrong side moves as one at the edge of the range instead of by its whole
    margin; the flow's curve is the same up to that shift.

    ``sides``, ``known``: the competitors' slot offsets, ``ã``/``b̃`` row blocks and cached
    scores, as :func:`match_statistics` takes them (a side whose latent vectors get their
    symmetry noise here is rescored, and ``known`` holds its score with the noise).  ``work``:
    the buffers of :func:`scratch`, reused from step to step.

    Inlined into each example loop: passing some twenty arrays field by field to a separate
    kernel cost the ``--sft 5 --dyad rt --rank 2`` loop about 20%.  Keep it under 31
    parameters: beyond 30, CPython passes a call's arguments as one tuple, which numba cannot
    inline.
    """
    n_pairs = ranges.shape[0]
    loss = np.int64(params[P_LOSS])
    solver = np.int64(params[P_ODE_SOLVER])
    adaptive_eta0 = params[P_ETA] * params[P_DYAD_ADAPTIVE]
    seed = np.int64(params[P_DYAD_SEED])
    U, V, r, ca, cb, rates, delta_a, delta_b, series = work
    column = latent_column(weights, rank)
    counting = params[P_DYAD_COUNT] != 0.0
    for side in range(n_sides):
        for m in range(n_pairs):
            for half in range(2):
                for j in range(ranges[m, 2 * half], ranges[m, 2 * half + 1]):
                    slot = (np.int64(feat_hash[j]) + sides[side, 0]) & mask
                    if touched[slot] == 0:
                        for q in range(rank):
                            weights[slot, column + q] += noise * _noise(slot * rank + q, seed)
                        touched[slot] = 1
                        known[side] = np.nan
                        state[LATENT_ROWS] += 1.0
                    elif counting and touched[slot] < COUNT_CAP:
                        touched[slot] += 1  # the row's uses in the first pass (row_shrink)
                    if counting:
                        state[LATENT_USES] += importance
    if params[P_DYAD_DROPOUT] != 0.0:
        drop_coordinates(weights, slots, values, first, last, feat_hash, feat_value, ranges, sides,
                         known, n_sides, rank, mask, a, b, np.int64(state[T_SUM] * 4096.0),
                         (seed ^ DROPOUT_SALT) & 0xFFFFFFFF)
    p, X = match_statistics(weights, slots, values, first, last, feat_hash, feat_value, ranges,
                            sides, known, n_sides, rank, shift, mask, initial, a, b, U, V, r, ca,
                            cb)
    for side in range(n_sides):
        for k in range(last - first):
            rates[side, k] = 1.0
    p = min(max(p, low), high)
    if adaptive_eta0 > 0.0:
        X += linear_rates(weights, slots, values, first, last, sides, n_sides, mask, loss, p,
                          label, params[P_TAU], importance, adaptive_eta0, eta, rates, True,
                          state, norm_index)
    if loss == HINGE:
        s = hinge_step(p, label, X, U, V, r, eta, importance)
        capped = False
    elif loss == QUANTILE:
        s = quantile_step(p, label, params[P_TAU], X, U, V, r, eta, importance)
        capped = False
    else:
        s, capped = solve_flow(loss, p, label, X, U, V, r, eta, importance, rtol, atol, 100000,
                               solver, series)
    if s == 0.0:
        return s, capped
    down = up = 0.0
    l2 = sized_l2(params, state)
    # --l2 on the linear weights: the same proximal step, on the example's weights only
    keep = 1.0 / (1.0 + eta * importance * params[P_L2])
    bias_l2 = params[P_DYAD_BIAS_L2]
    row_l2 = params[P_DYAD_ROW_L2]
    for side in range(n_sides):
        move = s if side == 0 else -s
        offset = sides[side, 0]
        block = sides[side, 1]
        for k in range(first, last):
            slot = (slots[k] + offset) & mask
            weights[slot, W] -= move * values[k] * rates[side, k - first]
            if keep != 1.0:
                weights[slot, W] *= keep
            if bias_l2 > 0.0:  # a --dyad namespace's feature: its row is counted
                weights[slot, W] *= row_shrink(eta * rates[side, k - first], importance,
                                               bias_l2, touched[slot])
        for m in range(n_pairs):
            if ca[m] > 0.0 and cb[m] > 0.0:
                if side == 0:  # expm1(−r s), expm1(r s); the other competitor's are swapped
                    down, up = expm1_pair(r[m] * s)
                increments(a, b, block * n_pairs + m, ca[m], cb[m], down if side == 0 else up,
                           up if side == 0 else down, delta_a, delta_b)
                _move(weights, feat_hash, feat_value, ranges[m, 0], ranges[m, 1], offset, rank,
                      mask, delta_a, 1.0 / ca[m])
                _move(weights, feat_hash, feat_value, ranges[m, 2], ranges[m, 3], offset, rank,
                      mask, delta_b, 1.0 / cb[m])
            elif ca[m] > 0.0:  # b̃ ≡ σ1: dV_f/ds = -x_f σ1
                for q in range(rank):
                    delta_a[q] = -move * ca[m] * shift
                _move(weights, feat_hash, feat_value, ranges[m, 0], ranges[m, 1], offset, rank,
                      mask, delta_a, 1.0 / ca[m])
            elif cb[m] > 0.0:
                for q in range(rank):
                    delta_b[q] = -move * cb[m] * shift
                _move(weights, feat_hash, feat_value, ranges[m, 2], ranges[m, 3], offset, rank,
                      mask, delta_b, 1.0 / cb[m])
            if l2 > 0.0 or row_l2 > 0.0:  # the penalty's proximal step, after the loss's
                shrink = 1.0 / (1.0 + eta * importance * l2)
                for half in range(2):
                    for j in range(ranges[m, 2 * half], ranges[m, 2 * half + 1]):
                        slot = (np.int64(feat_hash[j]) + offset) & mask
                        factor = shrink * row_shrink(eta, importance, row_l2, touched[slot])
                        for q in range(rank):
                            weights[slot, column + q] *= factor
    return s, capped


@kernel
def reverting_weight(weights, slots, values, first, last, feat_hash, feat_value, ranges, sides,
                     known, rank, shift, mask, initial, loss, state, params, importance, a, b,
                     work):
    """``h_min`` that flips a binary dyadic prediction, at the rate the example would get
    (SPEC §C.3-C.4); ``known`` as :func:`match_statistics`."""
    return match_reverting_weight(weights, slots, values, first, last, feat_hash, feat_value,
                                  ranges, sides, known, 1, 0, rank, shift, mask, initial, loss,
                                  state, params, importance, a, b, work)


@kernel
def match_reverting_weight(weights, slots, values, first, last, feat_hash, feat_value, ranges,
                           sides, known, n_sides, model, rank, shift, mask, initial, loss, state,
                           params, importance, a, b, work):
    """:func:`reverting_weight` of ``f(x, c_0) [− f(x, c_1)]``: with two sides a scoring filter
    tree's match, whose linear rates use the normalizer sums of node ``model``."""
    eta = latent_eta(params, state[T_SUM] + importance)
    U, V, r, ca, cb, rates, _, _, _ = work
    p, X = match_statistics(weights, slots, values, first, last, feat_hash, feat_value, ranges,
                            sides, known, n_sides, rank, shift, mask, initial, a, b, U, V, r, ca,
                            cb)
    label = -1.0 if p >= 0.0 else 1.0
    X += _adaptive_part(weights, slots, values, first, last, sides, n_sides, model, mask, loss,
                        p, label, state, params, eta, rates)
    return hmin_dyadic(loss, p, label, X, U, V, r, eta, 0.0)


@kernel
def _adaptive_part(weights, slots, values, first, last, sides, n_sides, model, mask, loss, p,
                   label, state, params, eta, rates):
    """What the linear rates (at importance 1, stateless) add to X; 0 at the plain rate.
    ``rates``: a work buffer of :func:`scratch`."""
    if params[P_DYAD_ADAPTIVE] == 0.0:
        return 0.0
    return linear_rates(weights, slots, values, first, last, sides, n_sides, mask, loss, p,
                        label, params[P_TAU], 1.0, params[P_ETA], eta, rates, False, state,
                        normalizer(params, model))


@kernel
def scratch(n_pairs, rank, classes, starts):
    """Per-call scratch, reused example after example (no allocation per step): ``ã``, ``b̃``
    per class and pair (a row block per class), namespace ranges, the two sides' slot offsets
    and row blocks (all 0) and cached scores (NaN: unknown) of :func:`match_statistics`, and the
    work buffers of :func:`flow_update` (``U``, ``V``, ``r`` for two sides, ``c_a``, ``c_b``,
    per-feature rates as wide as the widest example in ``starts``, latent increments, the
    Taylor solver's series)."""
    width = 1
    for e in range(starts.shape[0] - 1):
        width = max(width, starts[e + 1] - starts[e])
    work = (np.zeros(2 * n_pairs), np.zeros(2 * n_pairs), np.zeros(2 * n_pairs),
            np.zeros(n_pairs), np.zeros(n_pairs), np.ones((2, width)), np.zeros(rank),
            np.zeros(rank), series_scratch(2 * n_pairs))
    return (np.empty((classes * n_pairs, rank)), np.empty((classes * n_pairs, rank)),
            np.empty((n_pairs, 4), dtype=np.int64), np.zeros((2, 2), dtype=np.int64),
            np.full(2, np.nan), work)


@kernel(inline="always")
def dyadic_class_scores(ex_int, seg, row, pairs, ignore, weights, slots, values, first, last,
                        feat_hash, feat_value, ranges, offsets, rank, shift, mask, initial, a, b,
                        scores):
    """``f(x, c)`` of every class (``offsets``) into ``scores``, class ``c``'s ``ã``, ``b̃`` into
    row block ``c`` of ``a``, ``b``; fills the example's namespace ``ranges`` first."""
    namespace_ranges(ex_int, seg, row, pairs, ignore, ranges)
    for c in range(offsets.shape[0]):
        scores[c] = class_score(weights, slots, values, first, last, feat_hash, feat_value,
                                ranges, offsets[c], rank, shift, mask, initial, a, b, c)


@kernel(inline="always")
def prefetch_dyadic(weights, touched, slots, first, last, low, high, mask):
    """:func:`prefetch_example` and the rows' first-touch flags, which every update reads (a
    missed flag load was 5% of the ``--sft 5 --dyad rt --rank 2`` loop's time)."""
    prefetch_example(weights, slots, first, last, low, high, mask)
    for k in range(first, last):
        prefetch_row(touched, (slots[k] + low) & mask)


@kernel(inline="always")
def score_dyadic_example(e, rows, starts, ex_int, seg, pairs, ignore, weights, touched, slots,
                         values, feat_hash, feat_value, ranges, offsets, rank, shift, mask,
                         initials, a, b, scores):
    """Example ``e`` of a multiclass dyadic loop: prefetches the next example's rows
    (:func:`prefetch_dyadic`), scores every class (:func:`dyadic_class_scores`) and returns the
    example's ``(first, last)``."""
    first = starts[e]
    last = starts[e + 1]
    if e + 1 < rows.shape[0]:
        prefetch_dyadic(weights, touched, slots, last, starts[e + 2], offsets[0], offsets[-1],
                        mask)
    dyadic_class_scores(ex_int, seg, rows[e], pairs, ignore, weights, slots, values, first, last,
                        feat_hash, feat_value, ranges, offsets, rank, shift, mask, initials[e], a,
                        b, scores)
    return first, last


@kernel(_nrt=False, error_model="numpy")
def dyadic_examples(rows, ex_int, seg, feat_hash, feat_value, ignore, starts, slots, values,
                    labels, importances, initials, labelled, holdout, pairs, rank, shift,
                    noise, weights, touched, state, params, mask, rtol, atol, out_pred,
                    out_loss, active, sampler, uniforms, mellowness, requests, buffers):
    """Predict and learn each example with the binary dyadic model; returns ODE cap hits.

    A prediction is clipped to the range of the labels learned from, as the linear learner's
    (and VW's), and a step starts from the clipped prediction; under ``--lrqdropout`` it carries
    half the latent term, and a step drops half the latent coordinates
    (:func:`drop_coordinates`).

    With ``active`` an example is learned only if the sampler queries it (SPEC §C.4), then with
    importance ``h/P``; its reverting weight is the dyadic ``h_min`` at the rate it would get."""
    training = params[P_TRAINING] != 0.0
    loss = np.int64(params[P_LOSS])
    dropout = params[P_DYAD_DROPOUT] != 0.0
    fixed_range = params[P_FIXED_RANGE] != 0.0
    a, b, ranges, sides, known, work = buffers
    caps = 0
    for e in range(rows.shape[0]):
        if e + 1 < rows.shape[0]:
            prefetch_dyadic(weights, touched, slots, starts[e + 1], starts[e + 2], 0, 0, mask)
        namespace_ranges(ex_int, seg, rows[e], pairs, ignore, ranges)
        known[0] = class_score(weights, slots, values, starts[e], starts[e + 1], feat_hash,
                               feat_value, ranges, 0, rank, shift, mask, 0.0, a, b, 0)
        label = labels[e]
        importance = importances[e]
        # as the linear learner (and VW): the clip range widens with the labels learned from
        if training and labelled[e] and holdout[e] == 0 and not fixed_range:
            widen_range(state, label)
        p0 = initials[e] + known[0]
        if dropout:  # the expected latent term of a model trained with half its coordinates
            p0 -= (1.0 - DROPOUT_SCALE) * latent_sum(a, b, ranges.shape[0], rank)
        p0 = min(max(p0, state[MIN_LABEL]), state[MAX_LABEL])
        out_pred[e] = p0
        value, _, _ = loss_terms(loss, p0, label, params[P_TAU])
        out_loss[e] = value * importance if labelled[e] else 0.0
        if active == REQUEST and not labelled[e] and importance > 0.0:  # under -t too (VW)
            H = reverting_weight(weights, slots, values, starts[e], starts[e + 1], feat_hash,
                                 feat_value, ranges, sides, known, rank, shift, mask,
                                 initials[e], loss, state, params, importance, a, b, work)
            requests[e] = request(H, importance, sampler, mellowness, uniforms[e])
        if not (training and labelled[e] and holdout[e] == 0 and importance > 0.0):
            continue
        if active == REQUEST:
            returned_label(importance, label, p0, sampler, loss)
        elif active == SIMULATION:
            H = reverting_weight(weights, slots, values, starts[e], starts[e + 1], feat_hash,
                                 feat_value, ranges, sides, known, rank, shift, mask,
                                 initials[e], loss, state, params, importance, a, b, work)
            probability = query(H, importance, label, p0, sampler, mellowness, uniforms[e], loss)
            if probability == 0.0:
                requests[e] = NOT_QUERIED
                continue
            importance /= probability
            requests[e] = importance
        state[T_SUM] += importance
        eta = latent_eta(params, state[T_SUM])
        _, capped = flow_update(weights, touched, slots, values, starts[e], starts[e + 1],
                                feat_hash, feat_value, ranges, sides, known, 1, rank, shift,
                                noise, mask, params, label, initials[e], eta, importance, rtol,
                                atol, a, b, work,
                                state[MIN_LABEL], state[MAX_LABEL],  # from the clipped p
                                state, normalizer(params, 0))
        caps += capped
    return caps


class Dyadic:
    name = "dyad"

    def __init__(self, options: Options):
        letters: set[str] = set()
        pairs = []
        for term in options.dyad:
            raw = term.encode("latin-1", "replace")
            if len(raw) != 2:
                raise OptionError(f"option '--dyad': {term!r} must name two namespace letters")
            if raw[0] == raw[1]:
                raise OptionError(f"option '--dyad': {term!r} pairs a namespace with itself")
            for letter in term:
                if letter in letters:
                    raise OptionError(f"option '--dyad': namespace {letter!r} is in two pairs")
                letters.add(letter)
            pairs.append(list(raw))
        if not 1 <= options.rank <= MAX_RANK:
            raise OptionError(f"option '--rank': {options.rank} must lie in 1..{MAX_RANK}")
        tolerances = (options.ode_rtol, options.ode_atol)
        if not all(0.0 <= tol < math.inf for tol in tolerances) or not any(tolerances):
            raise OptionError(f"options '--ode_rtol {options.ode_rtol:g} --ode_atol "
                              f"{options.ode_atol:g}': tolerances must be finite, at least 0, "
                              "and not both 0")
        self.pairs = np.array(pairs, dtype=np.int64).reshape(-1, 2)
        self.rank = options.rank
        self.settings = dyad_settings(options)
        self.shift = self.settings["shift"]
        self.noise = self.settings["noise"]
        self.seed = options.dyad_seed

    def run(self, ws, batch, rows, starts, slots, values, labels, importances, initials,
            labelled, holdout, out_pred, out_loss) -> int:
        return dyadic_examples(rows, batch.ex_int, batch.seg, ws.latent_hashes(batch),
                               batch.feat_value, ws.ignore, starts, slots, values, labels,
                               importances, initials, labelled, holdout, self.pairs,
                               self.rank, self.shift, self.noise, ws.weights, ws.touched,
                               ws.state, ws.params, ws.mask,
                               ws.options.ode_rtol, ws.options.ode_atol, out_pred, out_loss,
                               *ws.active_arguments(labels.size), self.scratch(1, starts))

    def kernels(self) -> tuple:
        """The example loop :meth:`run` calls."""
        return (dyadic_examples,)

    def scratch(self, classes: int, starts: np.ndarray):
        """The example loops' buffers (:func:`scratch`) for ``classes`` class scores."""
        return scratch(self.pairs.shape[0], self.rank, classes, starts)


def setup(options: Options) -> Dyadic | None:
    if not options.dyad:
        alone = [name for name in ("rank", "dyad_plain", "dyad_shifted", "dyad_rate",
                                   "dyad_power_t", "dyad_noise", "dyad_l2", "dyad_bias_l2",
                                   "dyad_row_l2", "dyad_decay")
                 if name in options.given]
        if alone:
            pairs = [pair for pair in options.quadratic if len(pair) == 2 and ":" not in pair]
            rank = f" --rank {options.rank}" if "rank" in options.given else ""
            example = (f"; for the low-rank form of -q {pairs[0]}: --dyad {pairs[0]}{rank}"
                       if pairs else f", e.g. --dyad ab{rank} for namespaces a and b")
            raise OptionError(f"--{alone[0]} needs --dyad LR{example}")
        return None
    return Dyadic(options)


@kernel
def dyadic_hmin_examples(rows, ex_int, seg, feat_hash, feat_value, ignore, starts, slots, values,
                         initials, targets, labels, pairs, rank, shift, weights, state, params,
                         mask, out):
    """``h_min`` of each example under the current dyadic model (SPEC §C.2); a label of 0 asks
    for the reverting weight (the label opposite to the prediction)."""
    loss = np.int64(params[P_LOSS])
    a, b, ranges, sides, known, work = scratch(pairs.shape[0], rank, 1, starts)
    U, V, r, ca, cb, rates, _, _, _ = work
    eta = latent_eta(params, state[T_SUM] + 1.0)
    for e in range(rows.shape[0]):
        namespace_ranges(ex_int, seg, rows[e], pairs, ignore, ranges)
        p, X = match_statistics(weights, slots, values, starts[e], starts[e + 1], feat_hash,
                                feat_value, ranges, sides, known, 1, rank, shift, mask,
                                initials[e], a, b, U, V, r, ca, cb)
        label = labels[e] if labels[e] != 0.0 else (-1.0 if p >= 0.0 else 1.0)
        X += _adaptive_part(weights, slots, values, starts[e], starts[e + 1], sides, 1, 0, mask,
                            loss, p, label, state, params, eta, rates)
        out[e] = hmin_dyadic(loss, p, label, X, U, V, r, eta, targets[e])
