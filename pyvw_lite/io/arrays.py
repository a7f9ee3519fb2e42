"""Numeric matrices as learner batches, without text: column ``j`` is VW feature ``"j"`` of the
default namespace (so its hash is ``j``, VW's rule for digit names), zeros are dropped.

This is how the scikit-learn estimators feed a whole ``X`` to one kernel call.
"""
from __future__ import annotations

import math

import numpy as np

from ..jit import kernel
from .vw_text import (EX_INT_COLUMNS, FEAT_END, FEAT_START, INITIAL, LABEL, NLABEL, OK,
                      SEG_BYTE, SEG_COLUMNS, SEG_END, SEG_FEND, SEG_FSTART, SEG_NAME_END,
                      SEG_NAME_START, SEG_START, STATUS, TAG_END, TAG_START, WEIGHT,
                      ParsedBatch, fits_float32, unusable_weight)

DEFAULT_NAMESPACE = 32


@kernel
def first_beyond_float32(values):
    """The index of the first of ``values`` (float64) that does not :func:`fits_float32`, or
    -1: the parser's rule for labels and feature values, for numbers that come as arrays."""
    for k in range(values.shape[0]):
        if not fits_float32(values[k]):
            return k
    return -1


@kernel
def first_unusable_weight(values):
    """The index of the first of ``values`` that is NaN or an :func:`unusable_weight`, or -1."""
    for k in range(values.shape[0]):
        if math.isnan(values[k]) or unusable_weight(values[k]):
            return k
    return -1


def check_numbers(name: str, values, weights: bool = False) -> None:
    """The text reader's rules for numbers that come as an array ``name`` (features, labels;
    with ``weights``, importance weights): a label or feature value that is not finite or
    beyond float32 is a malformed example there, a weight that is negative, NaN or beyond
    float32 one the learner cannot learn with; here either is a ValueError naming the first
    such entry (an estimator has no log to warn in)."""
    data = values.data if hasattr(values, "tocsr") else values
    flat = np.ascontiguousarray(np.asarray(data, dtype=np.float64).ravel())
    bad = (first_unusable_weight if weights else first_beyond_float32)(flat)
    if bad < 0:
        return
    at = np.unravel_index(bad, np.shape(data)) if not hasattr(values, "tocsr") else (bad,)
    what = "finite, not negative and within float32" if weights else \
        "finite and within float32 (about 3.4e38)"
    index = ", ".join(str(int(k)) for k in at)
    raise ValueError(f"{name}[{index}] = {float(flat[bad])!r}: every value must be {what}, "
                     "as the learner reads numbers")


def matrix_batch(X, labels: np.ndarray | None = None,
                 weights: np.ndarray | None = None) -> ParsedBatch:
    """A ParsedBatch of the rows of ``X`` (dense array or scipy CSR matrix)."""
    if hasattr(X, "tocsr"):
        csr = X.tocsr()
        csr.eliminate_zeros()
        indptr = csr.indptr.astype(np.int64)
        columns = csr.indices.astype(np.uint32)
        values = csr.data.astype(np.float32)
        n = csr.shape[0]
    else:
        X = np.asarray(X, dtype=np.float64)
        n = X.shape[0]
        rows, cols = np.nonzero(X)
        indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(rows, minlength=n), out=indptr[1:])
        columns = cols.astype(np.uint32)
        values = X[rows, cols].astype(np.float32)
    counts = np.diff(indptr)
    has = counts > 0
    seg_of = np.cumsum(has) - has  # index of each example's one segment (if it has one)
    ex_int = np.zeros((n, EX_INT_COLUMNS), dtype=np.int32)
    ex_int[:, STATUS] = OK
    ex_int[:, SEG_START] = seg_of
    ex_int[:, SEG_END] = seg_of + has
    ex_int[:, FEAT_START] = indptr[:-1]
    ex_int[:, FEAT_END] = indptr[1:]
    for column in (TAG_START, TAG_END):
        ex_int[:, column] = -1
    seg = np.zeros((int(has.sum()), SEG_COLUMNS), dtype=np.int32)
    seg[:, SEG_BYTE] = DEFAULT_NAMESPACE
    seg[:, SEG_NAME_START] = 0
    seg[:, SEG_NAME_END] = 0
    seg[:, SEG_FSTART] = indptr[:-1][has]
    seg[:, SEG_FEND] = indptr[1:][has]
    ex_float = np.zeros((n, 3), dtype=np.float64)
    ex_float[:, WEIGHT] = 1.0 if weights is None else weights
    ex_float[:, INITIAL] = 0.0
    if labels is not None:
        ex_float[:, LABEL] = labels
        ex_int[:, NLABEL] = 1
    zeros = np.zeros(n, np.int64)
    return ParsedBatch(buf=np.zeros(0, np.uint8), ex_int=ex_int, ex_float=ex_float, seg=seg,
                       feat_hash=columns, feat_value=values, feat_span=None, first_line=1,
                       source="<array>", line_starts=zeros, line_ends=zeros)
