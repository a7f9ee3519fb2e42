"""The options and state a model file brings to a learner: which options a model may set,
the checks every stored field passes, and how stored options merge with the command line's."""
from __future__ import annotations

import math

import numpy as np

from ..io.model_io import ModelData, ModelError
from ..learners import gd
from ..options import BY_NAME, FLAG, LIST, UPDATE_FLAGS, OptionError, Options, convert, parse_argv


def _shown(opt, value) -> str:
    """An option's value as an error shows it: ``with --rank 1``, ``without --oaa``."""
    if not value and (opt.kind == FLAG or value == opt.default):
        return f"without --{opt.name}"
    if opt.kind == FLAG:
        return f"with --{opt.name}"
    if opt.kind == LIST:
        return "with " + " ".join(f"--{opt.name} {item}" for item in value)
    return f"with --{opt.name} {value!r}"


def _model_option(opt) -> bool:
    """Whether a model file may set this option: the ones that define a model (``keep``) and
    VW's learning-rate options (``resume``).  Outputs, inputs, ``--executor`` and every other
    run-time option come from the command line only (docs/security.md)."""
    return opt.keep or opt.resume


def _stored_options(path: str, argv) -> Options:
    """The options a model's header stores, each one a model may set, or a ModelError."""
    try:
        stored = parse_argv(argv)
    except OptionError as exc:
        raise ModelError(f"{path}: malformed model header ({exc})") from None
    for name in sorted(stored.given):
        if not _model_option(BY_NAME[name]):
            raise ModelError(f"{path}: the model's header sets --{name}, which a model may not "
                             "set (a model keeps only the options that define it; give run "
                             "options on the command line)")
    return stored


def _stored_kept(path: str, kept) -> dict:
    """A model's layout values (``state["kept"]``), checked: layout options only, each of its
    option's type, converted as the command line converts it."""
    if not isinstance(kept, dict):
        raise ModelError(f"{path}: malformed model header (kept options are not a table)")
    checked = {}
    for name, value in kept.items():
        opt = BY_NAME.get(name)
        if opt is None or not opt.layout:
            raise ModelError(f"{path}: the model's header sets --{name}, which a model may not "
                             "set")
        if opt.kind == FLAG:
            if not isinstance(value, bool):
                raise ModelError(f"{path}: malformed model header (--{name} = {value!r:.40})")
            checked[name] = value
            continue
        values = value if opt.kind == LIST else [value]
        if not isinstance(values, list) \
                or any(isinstance(v, (dict, list, bool)) for v in values):
            raise ModelError(f"{path}: malformed model header (--{name} = {value!r:.40})")
        if value is None and opt.default is None:
            checked[name] = None
            continue
        try:
            converted = [convert(opt, str(v)) for v in values]
        except OptionError as exc:
            raise ModelError(f"{path}: malformed model header ({exc})") from None
        checked[name] = converted if opt.kind == LIST else converted[0]
    return checked


def _number(value, infinite: bool = False) -> bool:
    """An int or float, finite unless ``infinite``, never NaN: a NaN or infinite rate or sum
    loads a model that never learns."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) \
        and not math.isnan(value) and (infinite or math.isfinite(value))


def check_learner_model(path: str, model: ModelData) -> None:
    """Every state field and array of a learner's model is of the kind a model writes."""
    state, arrays = model.state, model.arrays
    integers = ("stride", "class_stride", "latent_columns")
    problems = [name for name in integers
                if name in state and not (isinstance(state[name], int)
                                          and not isinstance(state[name], bool)
                                          and 0 <= state[name] <= 1 << 16)]
    learner = state.get("learner")
    unbounded = (gd.MIN_LABEL, gd.MAX_LABEL)  # the label range starts at --min/max_prediction
    # sums and counts are never negative (a negative normalizer sum divided by zero in the
    # kernel); only the label range may be negative or infinite
    if not isinstance(learner, list) or not all(
            _number(v) and v >= 0 or i in unbounded and _number(v, infinite=True)
            for i, v in enumerate(learner)):
        problems.append("learner")
    if not isinstance(state.get("stride"), int):
        problems.append("stride")
    for name in ("power_t",):
        if name in state and not _number(state[name]):
            problems.append(name)
    multiplier = state.get("slot_multiplier", 1)
    if not (isinstance(multiplier, int) and not isinstance(multiplier, bool)
            and 0 <= multiplier < 1 << 32):
        problems.append("slot_multiplier")
    if "predict_only" in state and not isinstance(state["predict_only"], bool):
        problems.append("predict_only")
    if "sampler" in state and not (isinstance(state["sampler"], list)
                                   and all(_number(v) for v in state["sampler"])):
        problems.append("sampler")
    rows, values = arrays.get("rows"), arrays.get("values")
    if rows is None or rows.ndim != 1 or rows.dtype.kind not in "iu":
        problems.append("rows")
    if values is None or values.ndim != 2 or values.dtype.kind != "f" \
            or rows is not None and values.shape[0] != rows.shape[0] \
            or values.shape[1] < 1 + int(state.get("latent_columns", 0) or 0):
        problems.append("values")
    # checked as the stored integers, before any cast: a uint64 index of 2^63 or more wraps
    # to a negative int64, which would pass a bound check and index from the top
    if rows is not None and rows.size and rows.dtype.kind in "iu" \
            and not 0 <= int(rows.min()) <= int(rows.max()) < 1 << 32:
        problems.append("rows")
    if values is not None and values.dtype.kind == "f" and values.size and not (
            np.isfinite(values).all() and np.abs(values).max() <= np.finfo(np.float32).max):
        problems.append("values")  # the weight table is float32: 1e200 would become inf
    if "touched" in arrays and (arrays["touched"].ndim != 1 or arrays["touched"].dtype != np.uint8):
        problems.append("touched")
    # the dyadic rows' first-pass uses, one byte per stored row (reductions/dyad.py: row_shrink)
    if "uses" in arrays and (arrays["uses"].ndim != 1 or arrays["uses"].dtype != np.uint8
                             or rows is None or arrays["uses"].shape[0] != rows.shape[0]):
        problems.append("uses")
    if problems:
        raise ModelError(f"{path}: malformed model ({', '.join(sorted(set(problems)))} not as a "
                         "model writes them)")


def _earlier_dyad_defaults(stored: Options) -> dict:
    """A dyadic model saved before the plain form became the default: the form and latent
    schedule it was trained with (shifted unless --dyad_plain; rate 1/(2k), or 1 for the plain
    form; noise 0.01; no L2; the --power_t decay), for the values it did not store."""
    values = {"dyad_shifted": not stored.dyad_plain, "dyad_noise": 0.01, "dyad_l2": 0.0,
              "dyad_power_t": stored.power_t}
    if stored.dyad_plain or stored.dyad_plain_rate:
        values["dyad_rate"] = 1.0
    return {name: value for name, value in values.items() if name not in stored.given}


def merge_model_options(options: Options, model: ModelData) -> Options:
    """Options stored in a model are re-applied; a conflicting command-line value is an error.

    A model keeps the value of every layout option (``state["kept"]``), defaults included;
    other kept options, and every option of older models, only when they were given.
    The learning-rate options a model was trained with (VW's too: ``-l``, ``--power_t`` and
    the update flags) are its defaults: the command line may change them."""
    path = options.initial_regressor
    stored = _stored_options(path, model.options)
    kept = _stored_kept(path, model.state.get("kept", {}))
    for name in stored.given:
        kept.setdefault(name, getattr(stored, name))
    if kept.get("dyad") and "dyad_shifted" not in kept:
        kept.update(_earlier_dyad_defaults(stored))
    # a model without its -b kept was made at VW's 18, --dyad or not (DYAD_BITS came later)
    kept.setdefault("bit_precision", BY_NAME["bit_precision"].default)
    merged = options.as_dict()
    given = set(options.given)
    flags_given = any(name in given for name in UPDATE_FLAGS)
    for name, value in kept.items():
        opt = BY_NAME[name]
        if opt.resume:
            if name not in given and not (name in UPDATE_FLAGS and flags_given):
                merged[name] = value
                given.add(name)
            continue
        if opt.kind == LIST:
            value = tuple(value)
        current = getattr(options, name)
        if name in options.given and (tuple(current) if opt.kind == LIST else current) != value:
            raise OptionError(f"{options.initial_regressor}: the model was trained "
                              f"{_shown(opt, value)}, not {_shown(opt, current)} (its "
                              f"options: {' '.join(model.options) or 'the defaults'})")
        merged[name] = value
        if name in stored.given or value != opt.default:
            given.add(name)
    return Options(merged, given)


def resumed_options(options: Options, model: ModelData) -> Options:
    """The options of a learner that resumes ``model``, the model ``-i`` names, as read: a
    learner's model (not a crowd model), every field checked, its stored options merged with
    ``options`` (:func:`merge_model_options`)."""
    if model.state.get("kind") == "crowd":
        raise ModelError(f"{options.initial_regressor}: a crowd model (from `pyvw-lite "
                         "crowd`); continue it with `pyvw-lite crowd -i`")
    check_learner_model(options.initial_regressor, model)
    return merge_model_options(options, model)
