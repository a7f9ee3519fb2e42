"""Numeric matrices as learner batches (:func:`matrix_batch`, defined in
:mod:`pyvw_lite.io.arrays` beside the other inputs) and the reader's rules for their numbers
(:func:`check_numbers`); the estimators import them from here."""
from ..io.arrays import check_numbers, matrix_batch

__all__ = ["check_numbers", "matrix_batch"]
