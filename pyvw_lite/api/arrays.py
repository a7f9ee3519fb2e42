"""Numeric matrices as learner batches (:func:`matrix_batch`, defined in
:mod:`pyvw_lite.io.arrays` beside the other inputs); the estimators import it from here."""
from ..io.arrays import matrix_batch

__all__ = ["matrix_batch"]
