"""``--sft K``: the scoring filter tree (SPEC §D.3).

One shared model scores every class, ``f(x, c)``; a match between the winners ``c1`` (left) and
``c2`` (right) of a node's children is decided by ``f(x, c1) - f(x, c2)``, so the tournament
winner is the argmax of the scores and prediction is an O(K) argmax.

Training follows the true class up the bracket as VW's filter tree does (SPEC erratum 6, carried
over to §D.3): each match it plays, against the winner of the other subtree on the current
scores, is an exact importance-aware step along ``φ(x,c1) − φ(x,c2)`` that moves both
competitors (``c1`` with ``+s``, ``c2`` with ``−s``), and the class goes on to the next match
only if it wins this one after the update.  SPEC §D.3 as written filters on the pre-update
scores, so a class that first loses inside its own subtree trains one match and stops; that
learned slower (progressive 0/1 loss 0.3301 against 0.3243 over the shared crowd sets).
"""
from __future__ import annotations

import math

import numpy as np

from ..jit import kernel
from ..learners.dyadic import (NOT_QUERIED, REQUEST, SIMULATION, hmin_linear, query, request,
                                returned_label)
from ..learners.gd import (MAX_LABEL, MIN_LABEL, P_LOSS, P_TAU, T_SUM, learn_flat, match_sensitivity,
                           predict_flat, widen_range)
from ..learners.losses import HINGE, loss_is_positive, loss_terms
from ..options import Options
from .dyad import (class_score, classes_share_rows, flow_update, latent_eta,
                   match_reverting_weight, normalizer, score_dyadic_example)
from .multiclass import (TreeReduction, class_buffers, class_loop_settings, predicted_class,
                         requested, score_example, starts_training)


@kernel(inline="always")
def _winner(scores, lo, hi):
    best = lo
    for c in range(lo + 1, hi + 1):
        if scores[c] > scores[best]:
            best = c
    return best


# the sampler counts a wrong class as a wrong sign (as a classification loss would), whatever
# the loss of the matches
CLASS_ERROR = HINGE


@kernel(_nrt=False)
def sft_examples(starts, slots, values, classes, importances, initials, holdout, n_classes,
                 left, right, parent, lo, hi, weights, state, params, mask, out_pred, out_scores,
                 record_scores, scores, offsets, active, sampler, uniforms, mellowness,
                 requests):
    training, loss, _, fixed_range = class_loop_settings(params)
    for e in range(classes.shape[0]):
        first, last = score_example(e, starts, weights, slots, values, offsets, mask, initials,
                                    scores)
        importance = importances[e]
        if active != 0:  # SPEC §C.3-C.4: decide before the example counts in the schedule
            H = math.inf
            if _wants_reverting_weight(classes[e], importance, holdout[e], training, active):
                H = _reverting_weight(first, last, scores, n_classes, left, right, parent, lo,
                                      hi, weights, slots, values, offsets, mask, state, params)
            importance = _sample(e, classes[e], _winner(scores, 0, n_classes - 1), importance,
                                 holdout[e], training, H, active, sampler, uniforms, mellowness,
                                 requests)
        truth = _predict_and_start(scores, e, out_pred, out_scores, record_scores, classes,
                                   importance, holdout, training, state)
        if truth < 0:
            continue
        child = truth
        while True:
            n, c1, c2, label = _next_match(scores, truth, child, n_classes, left, right, parent,
                                           lo, hi, state, fixed_range)
            if n < 0:
                break
            # as every VW learner, a match sees its prediction clipped to the labels seen (±1):
            # a won match with margin beyond 1 has no squared loss to pull it back
            p0 = min(max(scores[c1] - scores[c2], state[MIN_LABEL]), state[MAX_LABEL])
            value, gradient2, aux = loss_terms(loss, p0, label, params[P_TAU])
            if loss_is_positive(loss, p0, label, value):
                learn_flat(weights, slots, values, first, last, offsets[c1], offsets[c2], True,
                           mask, n, state, params, p0, label, importance, gradient2, aux)
                scores[c1] = predict_flat(weights, slots, values, first, last, offsets[c1], mask,
                                          initials[e])
                scores[c2] = predict_flat(weights, slots, values, first, last, offsets[c2], mask,
                                          initials[e])
            if not _truth_wins(scores, c1, c2, label):
                break
            child = n + n_classes


@kernel(inline="always")
def _predict_and_start(scores, e, out_pred, out_scores, record_scores, classes, importance,
                       holdout, training, state):
    """Argmax prediction from the class scores; the true class when the example trains with
    ``importance`` (and is counted in the schedule), -1 otherwise."""
    predicted_class(scores, e, out_pred, out_scores, record_scores)
    truth = classes[e]
    if not starts_training(training, truth, holdout[e], importance, state):
        return -1
    return truth


@kernel(inline="always")
def _wants_reverting_weight(truth, importance, held_out, training, active):
    """Whether the sampler needs the example's reverting weight: an unlabelled example in
    label-request mode, or one the simulation may learn."""
    if importance <= 0.0:
        return False
    if truth < 0:
        return active == REQUEST
    return active == SIMULATION and training and held_out == 0


@kernel(inline="always")
def _sample(e, truth, predicted, importance, held_out, training, H, active, sampler, uniforms,
            mellowness, requests):
    """The active sampler on example ``e`` (SPEC §C.3-C.4) given its reverting weight ``H``:
    the importance to learn a labelled example with (``h/P``, 0 when the simulation does not
    query it); for an unlabelled one in label-request mode, the request into ``requests[e]``.
    The sampler counts a wrong class as a wrong sign."""
    if importance <= 0.0:
        return importance
    if truth < 0:
        if active == REQUEST:
            requests[e] = request(H, importance, sampler, mellowness, uniforms[e])
        return importance
    if not (training and held_out == 0):
        return importance
    sign = 1.0 if predicted == truth else -1.0
    if active == REQUEST:
        returned_label(importance, 1.0, sign, sampler, CLASS_ERROR)
        return importance
    probability = query(H, importance, 1.0, sign, sampler, mellowness, uniforms[e], CLASS_ERROR)
    requests[e] = importance / probability if probability > 0.0 else NOT_QUERIED
    return importance / probability if probability > 0.0 else 0.0


@kernel(inline="always")
def _reverting_weight(first, last, scores, n_classes, left, right, parent, lo, hi, weights,
                      slots, values, offsets, mask, state, params):
    """``H`` of SPEC §C.3 for the tree: the smallest weight that flips one of the matches the
    predicted class wins on its way to the root (losing any of them eliminates it)."""
    loss = np.int64(params[P_LOSS])
    predicted = _winner(scores, 0, n_classes - 1)
    H = math.inf
    n, c1, c2 = _match_above(scores, predicted, predicted, n_classes, left, right, parent, lo, hi)
    while n >= 0:  # the argmax wins every match on its way up
        p0 = min(max(scores[c1] - scores[c2], state[MIN_LABEL]), state[MAX_LABEL])
        label = -1.0 if c1 == predicted else 1.0  # the label that would flip this match
        _, gradient2, _ = loss_terms(loss, p0, label, params[P_TAU])
        eta, X = match_sensitivity(weights, slots, values, first, last, offsets[c1], offsets[c2],
                                   True, mask, n, state, params, gradient2)
        H = min(H, hmin_linear(loss, p0, label, X, eta, 0.0))
        n, c1, c2 = _match_above(scores, predicted, n + n_classes, n_classes, left, right,
                                 parent, lo, hi)
    return H


@kernel
def sft_reverting_weights(starts, slots, values, initials, n_classes, left, right, parent, lo,
                          hi, weights, state, params, mask, scores, offsets, out):
    """:func:`_reverting_weight` of every flattened example (the Python API's ``h_min``)."""
    for e in range(out.shape[0]):
        first, last = score_example(e, starts, weights, slots, values, offsets, mask, initials,
                                    scores)
        out[e] = _reverting_weight(first, last, scores, n_classes, left, right, parent, lo, hi,
                                   weights, slots, values, offsets, mask, state, params)


@kernel(inline="always")
def _dyadic_reverting_weight(first, last, scores, initial, n_classes, left, right, parent, lo, hi,
                             weights, slots, values, feat_hash, feat_value, ranges, sides, known,
                             rank, shift, mask, loss, state, params, importance, a, b, work,
                             offsets):
    """:func:`_reverting_weight` over dyadic class scores: each match's ``h_min`` along its
    two-sided flow (SPEC §C.2-C.3); the scoring pass left every class's ``ã``, ``b̃`` in its
    row block."""
    predicted = _winner(scores, 0, n_classes - 1)
    H = math.inf
    n, c1, c2 = _match_above(scores, predicted, predicted, n_classes, left, right, parent, lo, hi)
    while n >= 0:
        for side, c in enumerate((c1, c2)):
            sides[side, 0] = offsets[c]
            sides[side, 1] = c
            known[side] = scores[c] - initial
        H = min(H, match_reverting_weight(weights, slots, values, first, last, feat_hash,
                                          feat_value, ranges, sides, known, 2, n, rank, shift,
                                          mask, initial, loss, state, params, importance, a, b,
                                          work))
        n, c1, c2 = _match_above(scores, predicted, n + n_classes, n_classes, left, right,
                                 parent, lo, hi)
    return H


@kernel(_nrt=False, error_model="numpy")
def sft_dyadic_reverting_weights(rows, ex_int, seg, feat_hash, feat_value, ignore, starts, slots,
                                 values, initials, n_classes, left, right, parent, lo, hi, pairs,
                                 rank, shift, weights, touched, state, params, mask, scores,
                                 offsets, buffers, out):
    """:func:`_dyadic_reverting_weight` of every flattened example (the API's ``h_min``)."""
    loss = np.int64(params[P_LOSS])
    a, b, ranges, sides, known, work = buffers
    for e in range(rows.shape[0]):
        first, last = score_dyadic_example(e, rows, starts, ex_int, seg, pairs, ignore, weights,
                                           touched, slots, values, feat_hash, feat_value, ranges,
                                           offsets, rank, shift, mask, initials, a, b, scores)
        out[e] = _dyadic_reverting_weight(first, last, scores, initials[e], n_classes, left,
                                          right, parent, lo, hi, weights, slots, values,
                                          feat_hash, feat_value, ranges, sides, known, rank,
                                          shift, mask, loss, state, params, 1.0, a, b, work,
                                          offsets)


@kernel(inline="always")
def _truth_wins(scores, c1, c2, label):
    """Whether the true class (``c1`` when ``label > 0``) wins the match on ``scores``."""
    return (scores[c1] - scores[c2] >= 0.0) == (label > 0.0)


@kernel(inline="always")
def _next_match(scores, truth, child, n_classes, left, right, parent, lo, hi, state,
                fixed_range):
    """:func:`_match_above` and the match's label (+1 when the true class is the left
    competitor); a match that is played widens the binary label range to its label."""
    n, c1, c2 = _match_above(scores, truth, child, n_classes, left, right, parent, lo, hi)
    label = 1.0 if c1 == truth else -1.0
    if n >= 0 and not fixed_range:
        widen_range(state, label)
    return n, c1, c2, label


@kernel(inline="always")
def _match_above(scores, truth, child, n_classes, left, right, parent, lo, hi):
    """The match at ``child``'s parent on the current scores: ``(n, c1, c2)`` with ``n`` the
    binary problem, ``c1``/``c2`` the winners of its left/right subtrees; ``n = -1`` above the
    root or when the true class is not one of them."""
    if parent[child] < 0:
        return -1, 0, 0
    n = parent[child] - n_classes
    c1 = _winner(scores, lo[left[n]], hi[left[n]])
    c2 = _winner(scores, lo[right[n]], hi[right[n]])
    if c1 != truth and c2 != truth:
        return -1, c1, c2
    return n, c1, c2


@kernel(_nrt=False, error_model="numpy")
def sft_dyadic_examples(rows, ex_int, seg, feat_hash, feat_value, ignore, starts, slots, values,
                        classes, importances, initials, holdout, n_classes, left, right, parent,
                        lo, hi, pairs, rank, shift, noise, weights, touched, state, params, mask,
                        rtol, atol, out_pred, out_scores, record_scores, scores, offsets,
                        buffers, active, sampler, uniforms, mellowness, requests):
    """The scoring filter tree over dyadic class scores: every match moves both competitors'
    linear and latent parameters along the exact flow (SPEC §D.3 with §B)."""
    training, loss, solver, fixed_range = class_loop_settings(params)
    a, b, ranges, sides, known, work = buffers
    caps = 0
    for e in range(rows.shape[0]):
        first, last = score_dyadic_example(e, rows, starts, ex_int, seg, pairs, ignore, weights,
                                           touched, slots, values, feat_hash, feat_value, ranges,
                                           offsets, rank, shift, mask, initials, a, b, scores)
        importance = importances[e]
        if active != 0:
            H = math.inf
            if _wants_reverting_weight(classes[e], importance, holdout[e], training, active):
                H = _dyadic_reverting_weight(first, last, scores, initials[e], n_classes, left,
                                             right, parent, lo, hi, weights, slots, values,
                                             feat_hash, feat_value, ranges, sides, known, rank,
                                             shift, mask, loss, state, params, importance, a, b,
                                             work, offsets)
            importance = _sample(e, classes[e], _winner(scores, 0, n_classes - 1), importance,
                                 holdout[e], training, H, active, sampler, uniforms, mellowness,
                                 requests)
        truth = _predict_and_start(scores, e, out_pred, out_scores, record_scores, classes,
                                   importance, holdout, training, state)
        if truth < 0:
            continue
        eta = latent_eta(params, state[T_SUM])
        shared = classes_share_rows(slots, first, last, offsets, mask)
        child = truth
        while True:
            n, c1, c2, label = _next_match(scores, truth, child, n_classes, left, right, parent,
                                           lo, hi, state, fixed_range)
            if n < 0:
                break
            # both classes' ã, b̃ are in their row blocks, from the scoring pass or from the
            # rescoring after the last match that moved them
            for side, c in enumerate((c1, c2)):
                sides[side, 0] = offsets[c]
                sides[side, 1] = c
                known[side] = scores[c] - initials[e]
            s, capped = flow_update(weights, touched, slots, values, first, last, feat_hash,
                                    feat_value, ranges, sides, known, 2, rank, shift, noise,
                                    mask, params, label, 0.0, eta, importance, rtol, atol,
                                    a, b, work, state[MIN_LABEL], state[MAX_LABEL], state,
                                    normalizer(params, n))
            caps += capped
            # rescore the two competitors, or every class when two classes share a weight row
            # (then a match can move any class's score); one call site keeps the loop small
            for i in range(n_classes if shared else 2):
                c = i if shared else (c1 if i == 0 else c2)
                if shared or s != 0.0:
                    scores[c] = class_score(weights, slots, values, first, last, feat_hash,
                                            feat_value, ranges, offsets[c], rank, shift, mask,
                                            initials[e], a, b, c)
                elif known[i] != scores[c] - initials[e]:  # rescored after symmetry noise
                    scores[c] = known[i] + initials[e]
            if not _truth_wins(scores, c1, c2, label):
                break
            child = n + n_classes
    return caps


class ScoringFilterTree(TreeReduction):
    name = "sft"

    def run(self, ws, starts, slots, values, classes, importances, initials, holdout, out_pred,
            out_scores, batch=None, rows=None):
        record = out_scores is not None
        scores = out_scores if record else np.empty((1, 1))
        t = self.tree
        buffers = class_buffers(self.classes, ws.mask, ws.params)
        if ws.dyadic is not None:
            d = ws.dyadic
            ws.ode_step_caps += sft_dyadic_examples(
                rows, batch.ex_int, batch.seg, ws.latent_hashes(batch), batch.feat_value, ws.ignore,
                starts, slots, values, classes, importances, initials, holdout, self.classes,
                t.left, t.right, t.parent, t.lo, t.hi, d.pairs, d.rank, d.shift, d.noise,
                ws.weights, ws.touched, ws.state, ws.params, ws.mask, ws.options.ode_rtol,
                ws.options.ode_atol, out_pred, scores, record, *buffers,
                d.scratch(self.classes, starts), *ws.active_arguments(classes.size))
            return
        sft_examples(starts, slots, values, classes, importances, initials, holdout,
                     self.classes, t.left, t.right, t.parent, t.lo, t.hi, ws.weights, ws.state,
                     ws.params, ws.mask, out_pred, scores, record, *buffers,
                     *ws.active_arguments(classes.size))

    def reverting_weights(self, ws, batch, rows, starts, slots, values, initials, out) -> None:
        """SPEC §C.3's ``H`` of each example under the current model into ``out``."""
        t = self.tree
        scores, offsets = class_buffers(self.classes, ws.mask, ws.params)
        if ws.dyadic is not None:
            d = ws.dyadic
            sft_dyadic_reverting_weights(
                rows, batch.ex_int, batch.seg, ws.latent_hashes(batch), batch.feat_value, ws.ignore,
                starts, slots, values, initials, self.classes, t.left, t.right, t.parent, t.lo,
                t.hi, d.pairs, d.rank, d.shift, ws.weights, ws.touched, ws.state, ws.params,
                ws.mask, scores, offsets, d.scratch(self.classes, starts), out)
            return
        sft_reverting_weights(starts, slots, values, initials, self.classes, t.left, t.right,
                              t.parent, t.lo, t.hi, ws.weights, ws.state, ws.params, ws.mask,
                              scores, offsets, out)

    def kernels(self, dyadic: bool) -> tuple:
        return (sft_dyadic_examples if dyadic else sft_examples,)


def setup(options: Options) -> ScoringFilterTree | None:
    if not requested(options, "sft"):
        return None
    return ScoringFilterTree(options, options.sft)
