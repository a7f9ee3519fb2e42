"""A learner's model files: the binary model (``-f``, :mod:`pyvw_lite.io.model_io`'s format) and
VW's text dumps (``--readable_model``, and the lines ``--invert_hash`` writes)."""
from __future__ import annotations

import zlib

import numpy as np

from .._version import __version__
from ..io.atomic import atomic_write
from ..io.model_io import ModelData, save_model, text_header
from ..learners import gd
from .checks import Diverged
from .outputs import check_output, check_outputs


def model_data(learner, predict_only: bool | None = None) -> ModelData:
    """The learner's model as a model file holds it (--l1/--l2's pending steps folded in)."""
    with learner.synced_weights():
        return _model_data(learner, predict_only)


def _model_data(learner, predict_only: bool | None) -> ModelData:
    predict_only = learner.options.predict_only_model if predict_only is None else predict_only
    columns = [gd.W] if predict_only or learner.stride == 1 else [gd.W, gd.G, gd.N]
    values = learner.weights[:, columns + learner.latent_columns]
    nonzero = np.flatnonzero(np.any(values != 0, axis=1))
    values = values[nonzero]
    state = {"learner": learner.state.tolist() if not predict_only
             else [0.0, float(learner.state[gd.MIN_LABEL]), float(learner.state[gd.MAX_LABEL]), 0.0]
             + [0.0] * (2 * learner.models),
             "stride": learner.stride, "predict_only": bool(predict_only),
             "class_stride": int(learner.params[gd.P_CLASS_STRIDE]),
             "slot_multiplier": int(learner.slot_multiplier)}
    if learner.latent:
        state["latent_columns"] = learner.latent
        # the latent rate's decay over the passes so far (a predict-only model learns afresh)
        state["dyad_rate_scale"] = 1.0 if predict_only else float(learner.latent_scale)
    if learner.dyadic is not None and not predict_only:
        # the schedule it follows, which a resumed run keeps (defaults change between versions)
        state["dyad_rate"] = float(learner.dyadic.settings["rate"])
        state["dyad_decay"] = float(learner.dyadic.settings["decay"])
    if not predict_only:
        state["power_t"] = learner.options.power_t
        if learner.active is not None:  # the sampler's evidence, for a later --active run
            state["sampler"] = learner.active.sampler.tolist()
    arrays = {"rows": nonzero.astype(np.uint32), "values": values}
    if learner.dyadic is not None:
        arrays["touched"] = np.packbits(learner.touched)
        arrays["uses"] = learner.touched[nonzero]
    state["kept"] = learner.options.kept_values()
    return ModelData(options=learner.options.kept_argv(resume=not predict_only), state=state,
                     arrays=arrays)


def save(learner, path: str, predict_only: bool | None = None) -> None:
    """Write the model to ``path`` atomically; it may be the ``-i`` model (continued and saved
    back), never the data."""
    check_output(learner.options, "-f", path)
    data = model_data(learner, predict_only)
    check_finite_weights(data.arrays["values"], path)  # -i would refuse it: keep what was there
    save_model(path, data, __version__)


def check_finite_weights(values: np.ndarray, path: str) -> None:
    """:class:`Diverged` naming ``path`` when a weight to be written is not a finite number."""
    if not np.isfinite(values).all():
        raise Diverged(f"{path}: the learned weights are not all finite numbers, so the model "
                       "is not written (lower -l, or check the data's feature values)")


def finish(learner) -> None:
    """Write the files the options name for the end of a run, as VW's ``finish()`` does:
    ``-f`` (the model, atomically) and ``--readable_model``.  The learner stays usable."""
    if learner.options.invert_hash:
        raise ValueError("--invert_hash needs the feature names of a command-line run "
                         "(pyvw-lite -d ...); from Python use write_readable_model")
    check_outputs(learner.options)  # as a run does at its start: no output over an input
    if learner.options.final_regressor:
        save(learner, learner.options.final_regressor)
    if learner.options.readable_model:
        write_readable_model(learner, learner.options.readable_model)


def write_readable_model(learner, path: str) -> None:
    """Write VW's --readable_model text of the learner to ``path`` atomically; it may not be
    an input (the ``-i`` model, the data)."""
    check_output(learner.options, "--readable_model", path)
    with learner.synced_weights():
        _write_readable_model(learner, path)


def _write_readable_model(learner, path: str) -> None:
    predict_only = learner.options.predict_only_model
    resume = None if predict_only else resume_lines(learner)
    shown = [gd.W] + learner.latent_columns
    nonzero = np.flatnonzero(np.any(learner.weights[:, shown] != 0, axis=1))
    body = "".join(weight_text(learner, str(slot), int(slot), predict_only) for slot in nonzero)
    write_text_model(learner, path, body, resume)


def resume_lines(learner) -> list[str]:
    """The learner's state after ``:1`` in a text dump (--readable_model, --invert_hash)."""
    return [f"t {learner.state[gd.T_SUM]:g}", f"norm normalizer {learner.state[gd.NORM_BASE]:g}",
            f"total_weight {learner.state[gd.NORM_BASE + 1]:g}"]


def write_text_model(learner, path: str, body: str, resume: list[str] | None) -> None:
    """VW's text header (checksum = CRC-32 of the body) followed by ``body``; never a model
    whose weights are not all finite."""
    check_finite_weights(learner.weights[:, [gd.W] + learner.latent_columns], path)
    header = text_header(__version__, learner.state[gd.MIN_LABEL], learner.state[gd.MAX_LABEL],
                         learner.bits, learner.options.kept_argv(resume=resume is not None),
                         zlib.crc32(body.encode()), resume)
    with atomic_write(path, binary=False) as handle:
        handle.write(header + body)


def weight_text(learner, name: str, slot: int, predict_only: bool) -> str:
    """``name:w`` (``name:w G N`` with accumulators), VW's line; a dyadic row adds its
    latent vector in brackets."""
    row = learner.weights[slot]
    text = f"{name}:{row[gd.W]:g}"
    if not (predict_only or learner.stride == 1):
        text += f" {row[gd.G]:g} {row[gd.N]:g}"
    if learner.latent:
        text += " [" + " ".join(f"{v:g}" for v in row[learner.latent_columns]) + "]"
    return text + "\n"
