"""``--lrq abK`` and ``--lrqdropout``: VW 9.11.9's low-rank quadratic reduction (lrq.cc), over
the linear learner's updates.

Feature ``h`` of namespace ``a`` or ``b`` owns, besides its linear weight at row ``h·M`` (``M``:
VW's weights per feature, ``1 + max K`` rounded up to a power of two), the latent weights
``w_h[n]`` at rows ``h·M + n``, ``n = 1..K``.  For an example the reduction appends, for each
left feature ``l``, each ``n`` and each right feature ``r``, the feature of value
``s·w_l[n]·x_l·x_r`` at row ``r·M + n``; the linear learner then predicts and learns with them
as with any feature, so it moves ``w_r[n]`` with ``w_l[n]`` held fixed.  A learned example is
learned twice, ``a`` on the left and then ``b`` (or the other way round, by the example's
counter), and reports its first prediction.  A latent weight that is exactly 0 when its
feature is on the left of a learned example starts at VW's ``merand48`` draw of its own index,
uniform on [0, 1).  ``--lrqdropout`` keeps each ``(l, n)`` of a learned example when a draw of
VW's generator (seeded ``--random_seed | 8675309`` at the start of a run) exceeds ½, with ``s =
1``; elsewhere ``s = ½`` (``s = 1`` without dropout).

One kernel call runs a batch: the examples' flattened features come from the linear learner's
expansion, the latent features are built per example into a reused buffer.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..io.vw_text import SEG_END, SEG_START
from ..jit import kernel
from ..learners.gd import (LINEAR_IGNORED, MAX_LABEL, MIN_LABEL, P_FIXED_RANGE, P_L1, P_L2,
                           P_LOSS, P_TAU, P_TRAINING, T_SUM, W, learn_flat, namespace_range,
                           predict_flat, regularized_predict, widen_range)
from ..learners.losses import loss_is_positive, loss_terms
from ..options import OptionError, Options

# VW's merand48 (a 64-bit linear congruential generator; a draw is 23 bits of its state)
LCG_A = 0xEECE66D5DEECE66D
LCG_C = 2147483647
SEED_BITS = 8675309  # lrq.cc ors the run's random seed with this
MAX_RANK = 1024


@dataclass
class Lrq:
    terms: list[str]  # as VW keeps them: distinct, in byte order
    pairs: np.ndarray  # (P, 3) int64: first namespace byte, second, rank
    width: int  # rows per feature: 1 + the largest rank, rounded up to a power of two (VW's)
    dropout: bool
    seed: int  # the dropout generator's start

    def __post_init__(self):
        self.restart()

    def restart(self) -> None:
        """A run's start: the dropout generator at its seed, the example counter at 0 (VW
        keeps neither in a model)."""
        self.rng = np.array([self.seed], dtype=np.uint64)
        self.counter = 0

    def next_pass(self) -> None:
        """A new pass: VW's end-of-pass example takes one count of the example counter."""
        self.counter += 1

    def message(self) -> str:
        return ("creating low rank quadratic features for pairs: "
                + ("(using dropout) " if self.dropout else "") + " ".join(self.terms) + " ")

    def loop(self, ws, batch, rows):
        """The example loop of the linear learner's signature (``gd.learn_passive``'s) for the
        flattened examples of ``rows`` of ``batch`` (learner ``ws``): :func:`learn_lrq`."""
        shift = int(ws.stride).bit_length() - 1  # VW's stride shift

        def run(starts, slots, values, labels, importances, initials, labelled, holdout, weights,
                state, params, mask, out_pred, out_raw, out_loss, *active) -> int:
            nan = learn_lrq(rows, batch.ex_int, batch.seg, batch.feat_hash, batch.feat_value,
                            ws.ignore, self.pairs, self.width, shift, self.dropout, self.rng,
                            self.counter, starts, slots, values, labels, importances, initials,
                            labelled, holdout, weights, state, params, mask, out_pred, out_raw,
                            out_loss)
            self.counter += int(rows.size)
            return nan
        return run

    @staticmethod
    def kernels() -> tuple:
        """The example loop :meth:`run` calls."""
        return (learn_lrq,)


def setup(options: Options) -> Lrq | None:
    """The ``--lrq`` terms as VW reads them (a set of strings: duplicates merged, byte order;
    ``ab2`` and ``ab3`` are two terms), or ``None`` without ``--lrq``."""
    if not options.lrq:
        return None
    terms = sorted(set(options.lrq), key=lambda t: t.encode("latin-1", "replace"))
    pairs = np.zeros((len(terms), 3), dtype=np.int64)
    for k, term in enumerate(terms):
        raw = term.encode("latin-1", "replace")
        if ":" in term:
            raise OptionError("option '--lrq': wildcards ':' are not supported (VW's --lrq "
                              "refuses them too)")
        if len(raw) < 3 or not raw[2:].isdigit():
            raise OptionError(f"option '--lrq': {term!r} must be two namespace letters and a "
                              "rank (e.g. um7)")
        rank = int(raw[2:])
        if not 1 <= rank <= MAX_RANK:
            raise OptionError(f"option '--lrq': the rank of {term!r} must be 1..{MAX_RANK}")
        pairs[k] = raw[0], raw[1], rank
    seed = (int(options.random_seed) & 0xFFFFFFFFFFFFFFFF) | SEED_BITS
    width = 1
    while width < 1 + int(pairs[:, 2].max()):  # VW rounds its weights per feature up so
        width *= 2
    return Lrq(terms, pairs, width, bool(options.lrqdropout), seed)


@kernel(inline="always")
def lcg_uniform(state):
    """VW's ``merand48`` of a 64-bit state: the advanced state and its draw in [0, 1)."""
    state = state * np.uint64(LCG_A) + np.uint64(LCG_C)
    bits = (state >> np.uint64(25)) & np.uint64(0x7FFFFF)
    return state, np.float64(bits) * (1.0 / 8388608.0)


@kernel(inline="always")
def _latent_count(e, rows, ex_int, seg, ignore, pairs):
    """How many latent features example ``e`` can append (either side on the left)."""
    row = rows[e]
    s0, s1 = ex_int[row, SEG_START], ex_int[row, SEG_END]
    total = 0
    for p in range(pairs.shape[0]):
        a0, a1 = namespace_range(seg, s0, s1, pairs[p, 0], ignore)
        b0, b1 = namespace_range(seg, s0, s1, pairs[p, 1], ignore)
        total += (a1 - a0) * (b1 - b0) * pairs[p, 2]
    return total


@kernel
def _append_latent(row, which, ex_int, seg, feat_hash, feat_value, ignore, pairs, width, shift,
                   mask, weights, start_latent, dropout, scale, rng, buf_slots, buf_values, n):
    """Append an example's latent features to the buffer from position ``n`` (lrq.cc's loop:
    pairs in order, left features, then ``n = 1..K``, then right features); returns the end."""
    s0, s1 = ex_int[row, SEG_START], ex_int[row, SEG_END]
    feature_mask = np.int64(mask)
    for p in range(pairs.shape[0]):
        left = pairs[p, which % 2]
        right = pairs[p, (which + 1) % 2]
        rank = pairs[p, 2]
        l0, l1 = namespace_range(seg, s0, s1, left, ignore)
        r0, r1 = namespace_range(seg, s0, s1, right, ignore)
        pushed = ignore[right] != LINEAR_IGNORED  # VW appends them to a namespace gd skips
        for i in range(l0, l1):
            base = (np.int64(feat_hash[i]) & feature_mask) * width
            x_left = feat_value[i]
            for latent in range(1, rank + 1):
                if dropout:
                    rng[0], u = lcg_uniform(rng[0])
                    if not u > 0.5:
                        continue
                slot = (base + latent) & feature_mask
                if start_latent and weights[slot, W] == 0.0:
                    # lrq.cc: the draw of the weight's own (unmasked) index in VW's table
                    _, u = lcg_uniform(np.uint64((base + latent) << shift))
                    weights[slot, W] = u
                factor = scale * np.float64(weights[slot, W]) * x_left
                if not pushed:
                    continue
                for j in range(r0, r1):
                    buf_slots[n] = ((np.int64(feat_hash[j]) & feature_mask) * width
                                    + latent) & feature_mask
                    buf_values[n] = factor * feat_value[j]
                    n += 1
    return n


@kernel
def learn_lrq(rows, ex_int, seg, feat_hash, feat_value, ignore, pairs, width, shift, dropout,
              rng, counter, starts, slots, values, labels, importances, initials, labelled,
              holdout, weights, state, params, mask, out_pred, out_raw, out_loss):
    """Predict (and, when training, learn) each example of a batch with its latent features, as
    VW's lrq over gd: ``rows`` are the batch rows of the flattened examples ``starts``/``slots``/
    ``values``; ``counter`` is the run's count of examples before this batch (VW's example
    counter: it picks which side of every pair is on the left first); ``rng`` holds the dropout
    generator's state.  Returns the number of NaN predictions forced to 0."""
    training = params[P_TRAINING] != 0.0
    regularized = params[P_L1] > 0.0 or params[P_L2] > 0.0
    fixed_range = params[P_FIXED_RANGE] != 0.0
    loss = np.int64(params[P_LOSS])
    tau = params[P_TAU]
    capacity = 1024
    buf_slots = np.empty(capacity, dtype=np.int64)
    buf_values = np.empty(capacity, dtype=np.float64)
    nan_count = 0
    for e in range(labels.shape[0]):
        first, last = starts[e], starts[e + 1]
        base = last - first
        need = base + _latent_count(e, rows, ex_int, seg, ignore, pairs)
        if need > capacity:
            capacity = max(need, 2 * capacity)
            buf_slots = np.empty(capacity, dtype=np.int64)
            buf_values = np.empty(capacity, dtype=np.float64)
        buf_slots[:base] = slots[first:last]
        buf_values[:base] = values[first:last]
        label = labels[e]
        importance = importances[e]
        learns = training and labelled[e] != 0 and holdout[e] == 0
        if learns and not fixed_range:
            widen_range(state, label)
        if learns:
            state[T_SUM] += importance
        which = counter + e if learns else 0
        scale = 1.0 if (dropout == 0 or learns) else 0.5
        for iteration in range(2 if learns else 1):
            n = _append_latent(rows[e], which + iteration, ex_int, seg, feat_hash, feat_value,
                               ignore, pairs, width, shift, mask, weights, learns,
                               learns and dropout != 0, scale, rng, buf_slots, buf_values, base)
            if regularized:
                raw = regularized_predict(weights, buf_slots, buf_values, 0, n, mask,
                                          initials[e], params)
            else:
                raw = predict_flat(weights, buf_slots, buf_values, 0, n, 0, mask, initials[e])
            if np.isnan(raw):
                raw = 0.0
                if iteration == 0:
                    nan_count += 1
            pred = min(max(raw, state[MIN_LABEL]), state[MAX_LABEL])
            value, gradient2, aux = loss_terms(loss, pred, label, tau)
            if iteration == 0:
                out_pred[e] = pred
                out_raw[e] = raw
                out_loss[e] = value * importance if labelled[e] else 0.0
            if learns and importance > 0.0 and loss_is_positive(loss, pred, label, value):
                learn_flat(weights, buf_slots, buf_values, 0, n, 0, 0, False, mask, 0, state,
                           params, pred, label, importance, gradient2, aux)
    return nan_count
