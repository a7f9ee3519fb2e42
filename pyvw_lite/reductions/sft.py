"""``--sft K``: the scoring filter tree (SPEC §D.3).

One shared model scores every class, ``f(x, c)``; a match between the winners ``c1`` (left) and
``c2`` (right) of a node's children is decided by ``f(x, c1) - f(x, c2)``, so the tournament
winner is the argmax of the scores and prediction is an O(K) argmax.  Training keeps the
filter-tree structure: from the pre-update scores, each ancestor of the true class's leaf where
the true class still competes gets the binary example "the true class beats its opponent";
applied bottom-up, each is an exact importance-aware step along ``φ(x,c1) − φ(x,c2)`` that moves
both competitors (``c1`` with ``+s``, ``c2`` with ``−s``).
"""
from __future__ import annotations

import numpy as np

from ..jit import kernel
from ..learners.gd import (MAX_LABEL, MIN_LABEL, P_DYAD_ADAPTIVE, P_ETA, P_FIXED_RANGE, P_LOSS,
                           P_POWER_T, P_TRAINING, T_SUM, _decay, _learn_flat, predict_flat)
from ..learners.losses import loss_is_positive, loss_terms
from ..options import Options
from .dyad import dyadic_class_scores, flow_update, scratch
from .multiclass import (TreeReduction, class_offsets, predicted_class, starts_training,
                         widen_range)


@kernel(inline="always")
def _winner(scores, lo, hi):
    best = lo
    for c in range(lo + 1, hi + 1):
        if scores[c] > scores[best]:
            best = c
    return best


@kernel
def sft_examples(starts, slots, values, classes, importances, initials, holdout, n_classes,
                 left, right, parent, lo, hi, weights, state, params, mask, out_pred, out_scores,
                 record_scores):
    training = params[P_TRAINING] != 0.0
    fixed_range = params[P_FIXED_RANGE] != 0.0
    loss = np.int64(params[P_LOSS])
    scores = np.empty(n_classes)
    offsets = class_offsets(n_classes, mask, params)
    matches = np.empty((max(1, n_classes), 4), dtype=np.int64)  # node, c1, c2, label side
    for e in range(classes.shape[0]):
        first = starts[e]
        last = starts[e + 1]
        for c in range(n_classes):
            scores[c] = predict_flat(weights, slots, values, first, last, offsets[c], mask,
                                     initials[e])
        count = _predict_and_filter(scores, e, out_pred, out_scores, record_scores, classes,
                                    importances, holdout, training, state, left, right, parent,
                                    lo, hi, matches)
        importance = importances[e]
        for m in range(count):  # bottom-up, each from the current weights
            n = matches[m, 0]
            a = offsets[matches[m, 1]]
            b = offsets[matches[m, 2]]
            label = np.float64(matches[m, 3])
            if m == 0:  # nothing has moved yet: the pre-update scores are current
                p0 = scores[matches[m, 1]] - scores[matches[m, 2]]
            else:
                p0 = predict_flat(weights, slots, values, first, last, a, mask, 0.0) \
                    - predict_flat(weights, slots, values, first, last, b, mask, 0.0)
            if not fixed_range:
                widen_range(state, label)
            # as every VW learner, a match sees its prediction clipped to the labels seen (±1):
            # a won match with margin beyond 1 has no squared loss to pull it back
            p0 = min(max(p0, state[MIN_LABEL]), state[MAX_LABEL])
            value, gradient2, aux = loss_terms(loss, p0, label)
            if loss_is_positive(loss, p0, label, value):
                _learn_flat(weights, slots, values, first, last, a, b, True, mask, n, state,
                            params, p0, label, importance, gradient2, aux)


@kernel
def _filter(scores, truth, n_classes, left, right, parent, lo, hi, matches):
    """The matches the true class plays in the pre-update tournament, bottom-up (SPEC §D.3):
    rows ``(node, c1, c2, side)``; returns how many."""
    count = 0
    child = truth
    while parent[child] >= 0:
        if child >= n_classes and _winner(scores, lo[child], hi[child]) != truth:
            break
        node = parent[child]
        n = node - n_classes
        c1 = _winner(scores, lo[left[n]], hi[left[n]])
        c2 = _winner(scores, lo[right[n]], hi[right[n]])
        matches[count, 0] = n
        matches[count, 1] = c1
        matches[count, 2] = c2
        matches[count, 3] = 1 if c1 == truth else -1
        count += 1
        child = node
    return count


@kernel
def _predict_and_filter(scores, e, out_pred, out_scores, record_scores, classes, importances,
                        holdout, training, state, left, right, parent, lo, hi, matches):
    """Argmax prediction from the class scores; when the example trains, count it in the
    schedule and return its matches (0 otherwise)."""
    predicted_class(scores, e, out_pred, out_scores, record_scores)
    truth = classes[e]
    if not starts_training(training, truth, holdout[e], importances[e], state):
        return 0
    return _filter(scores, truth, scores.shape[0], left, right, parent, lo, hi, matches)


@kernel
def sft_dyadic_examples(rows, ex_int, seg, feat_hash, feat_value, ignore, starts, slots, values,
                        classes, importances, initials, holdout, n_classes, left, right, parent,
                        lo, hi, pairs, rank, shift, noise, weights, touched, state, params, mask,
                        rtol, atol, out_pred, out_scores, record_scores):
    """The scoring filter tree over dyadic class scores: every match moves both competitors'
    linear and latent parameters along the exact flow (SPEC §D.3 with §B)."""
    training = params[P_TRAINING] != 0.0
    loss = np.int64(params[P_LOSS])
    scores = np.empty(n_classes)
    offsets = class_offsets(n_classes, mask, params)
    matches = np.empty((max(1, n_classes), 4), dtype=np.int64)
    a, b, ranges, pair_offsets, work = scratch(pairs.shape[0], rank, 2, starts)
    fixed_range = params[P_FIXED_RANGE] != 0.0
    caps = 0
    for e in range(rows.shape[0]):
        first = starts[e]
        last = starts[e + 1]
        dyadic_class_scores(ex_int, seg, rows[e], pairs, ignore, weights, slots, values, first,
                            last, feat_hash, feat_value, ranges, offsets, rank, shift, mask,
                            initials[e], a, b, scores)
        count = _predict_and_filter(scores, e, out_pred, out_scores, record_scores, classes,
                                    importances, holdout, training, state, left, right, parent,
                                    lo, hi, matches)
        importance = importances[e]
        eta = params[P_ETA] * _decay(state[T_SUM], params[P_POWER_T])
        for m in range(count):
            pair_offsets[0] = offsets[matches[m, 1]]
            pair_offsets[1] = offsets[matches[m, 2]]
            label = np.float64(matches[m, 3])
            if not fixed_range:
                widen_range(state, label)
            _, capped = flow_update(weights, touched, slots, values, first, last, feat_hash,
                                    feat_value, ranges, pair_offsets, 2, rank, shift, noise,
                                    mask, loss, label, 0.0, eta, importance, rtol, atol, a, b,
                                    work, params[P_ETA] * params[P_DYAD_ADAPTIVE],
                                    state[MIN_LABEL],
                                    state[MAX_LABEL])
            caps += capped
    return caps


class ScoringFilterTree(TreeReduction):
    name = "sft"
    out_of_range = "skip"

    def run(self, ws, starts, slots, values, classes, importances, initials, holdout, out_pred,
            out_scores, batch=None, rows=None):
        record = out_scores is not None
        scores = out_scores if record else np.empty((1, 1))
        t = self.tree
        if ws.dyadic is not None:
            d = ws.dyadic
            ws.ode_step_caps += sft_dyadic_examples(
                rows, batch.ex_int, batch.seg, batch.feat_hash, batch.feat_value, ws.ignore,
                starts, slots, values, classes, importances, initials, holdout, self.classes,
                t.left, t.right, t.parent, t.lo, t.hi, d.pairs, d.rank, d.shift, d.noise,
                ws.weights, ws.touched, ws.state, ws.params, ws.mask, ws.options.ode_rtol,
                ws.options.ode_atol, out_pred, scores, record)
            return
        sft_examples(starts, slots, values, classes, importances, initials, holdout,
                     self.classes, t.left, t.right, t.parent, t.lo, t.hi, ws.weights, ws.state,
                     ws.params, ws.mask, out_pred, scores, record)


def setup(options: Options) -> ScoringFilterTree | None:
    if not options.sft:
        return None
    return ScoringFilterTree(options, options.sft)
