"""From a registered set's source files to the files the package reads.

Each converter takes the source files' bytes (by path, as the registry names them) and the
entry's ``convert`` settings, and returns the converted files' bytes by name: ``answers.csv``
(``task,worker,label``) and ``truth.csv`` (``task,label``) for a crowd set, ``NAME.train.vw`` and
``NAME.test.vw`` for a ratings set.  Source files are data: they are parsed as text, never run,
and a row that does not fit the described layout stops the conversion with the file, the line
and the text.  Answers keep the source's order; the truth is sorted by task (as text).
"""
from __future__ import annotations

import csv
import io
import random
import re
import tarfile


class SourceError(ValueError):
    """A source file that does not have the layout its registry entry describes."""


def bad(path: str, line: int, text: str, why: str) -> SourceError:
    shown = text if len(text) <= 80 else text[:77] + "..."
    return SourceError(f"{path}:{line}: {why}: {shown!r}")


def text_of(data: bytes, path: str) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise SourceError(f"{path}: not UTF-8 text (byte {exc.start})") from None


def rows_of(data: bytes, path: str, delimiter: str = ","):
    """(line number, fields) of each non-blank row of a delimited text file."""
    lines = text_of(data, path).splitlines()
    for number, fields in enumerate(csv.reader(lines, delimiter=delimiter), start=1):
        if fields and any(field.strip() for field in fields):
            yield number, [field.strip() for field in fields]


def fields_of(data: bytes, path: str, count: int, delimiter: str | None = None):
    """(line number, the first ``count`` whitespace- or ``delimiter``-separated fields)."""
    for number, line in enumerate(text_of(data, path).splitlines(), start=1):
        if not line.strip():
            continue
        fields = line.split(delimiter) if delimiter else line.split()
        if len(fields) < count:
            raise bad(path, number, line, f"expected {count} fields")
        yield number, [field.strip() for field in fields[:count]]


def crowd_files(answers: list[tuple[str, str, str]], truth: dict[str, str]) -> dict[str, bytes]:
    """answers.csv in the given order and truth.csv sorted by task, written as Python's csv
    module writes them (CRLF line ends, quoting only where needed)."""
    out = {}
    for name, header, rows in (("answers.csv", ("task", "worker", "label"), answers),
                               ("truth.csv", ("task", "label"), sorted(truth.items()))):
        buffer = io.StringIO()
        writer = csv.writer(buffer)
        writer.writerow(header)
        writer.writerows(rows)
        out[name] = buffer.getvalue().encode("utf-8")
    return out


def add_truth(truth: dict[str, str], task: str, label: str, where: tuple[str, int, str]) -> None:
    if truth.get(task, label) != label:
        raise bad(*where, f"task {task!r} has two true labels ({truth[task]!r}, {label!r})")
    truth[task] = label


def skip_header(rows, first_field: str | None):
    """Rows without a header row whose first field is ``first_field`` (case-insensitive)."""
    for number, fields in rows:
        if number == 1 and first_field is not None and fields[0].lower() == first_field:
            continue
        yield number, fields


# ---------------------------------------------------------------------------------------------
# the source layouts


def active_crowd_toolkit(files: dict[str, bytes], settings: dict) -> dict[str, bytes]:
    """ActiveCrowdToolkit ``Data/*.csv``: ``worker,task,label,gold[,extra]`` per answer; the
    gold label repeats on every answer of a task."""
    (path,) = files
    answers, truth = [], {}
    for number, fields in rows_of(files[path], path):
        if len(fields) < 4:
            raise bad(path, number, ",".join(fields), "expected worker,task,label,gold")
        worker, task, label, gold = fields[:4]
        answers.append((task, worker, label))
        add_truth(truth, task, gold, (path, number, ",".join(fields)))
    return crowd_files(answers, truth)


def answers_and_truth_csv(files: dict[str, bytes], settings: dict) -> dict[str, bytes]:
    """Two CSV files: answers ``task,worker,label`` and truth ``task,label``, each with a header
    row (Zheng et al.'s ``answer.csv``/``truth.csv``; ``label.csv``/``truth.csv`` of
    truth-inference-at-scale)."""
    answers_path, truth_path = settings["answers"], settings["truth"]
    answers, truth = [], {}
    for number, fields in skip_header(rows_of(files[answers_path], answers_path),
                                      settings.get("answers_header")):
        if len(fields) < 3:
            raise bad(answers_path, number, ",".join(fields), "expected task,worker,label")
        answers.append(tuple(fields[:3]))
    for number, fields in skip_header(rows_of(files[truth_path], truth_path),
                                      settings.get("truth_header")):
        if len(fields) < 2:
            raise bad(truth_path, number, ",".join(fields), "expected task,label")
        add_truth(truth, fields[0], fields[1], (truth_path, number, ",".join(fields)))
    return crowd_files(answers, truth)


def whitespace_triples(files: dict[str, bytes], settings: dict) -> dict[str, bytes]:
    """Spectral-methods-meet-EM's ``*_crowd.txt`` (``item worker label``) and ``*_truth.txt``
    (``item label``; a task may repeat with the same label)."""
    answers_path, truth_path = settings["answers"], settings["truth"]
    answers = [tuple(fields) for _, fields in fields_of(files[answers_path], answers_path, 3)]
    truth = {}
    for number, (task, label) in fields_of(files[truth_path], truth_path, 2):
        add_truth(truth, task, label, (truth_path, number, f"{task} {label}"))
    return crowd_files(answers, truth)


def tab_labels_and_gold(files: dict[str, bytes], settings: dict) -> dict[str, bytes]:
    """Get-Another-Label's ``labels.txt`` (``worker<TAB>object<TAB>label``) and ``gold.txt``
    (``object<TAB>label``); gold objects nobody labelled are left out."""
    answers_path, truth_path = settings["answers"], settings["truth"]
    answers = [(task, worker, label) for _, (worker, task, label)
               in fields_of(files[answers_path], answers_path, 3, "\t")]
    seen = {task for task, _, _ in answers}
    truth = {}
    for number, (task, label) in fields_of(files[truth_path], truth_path, 2, "\t"):
        if task in seen:
            add_truth(truth, task, label, (truth_path, number, f"{task}\t{label}"))
    return crowd_files(answers, truth)


def snow_tarball(files: dict[str, bytes], settings: dict) -> dict[str, bytes]:
    """Snow et al.'s ``all_collected_data.tgz``: the member ``*/NAME.standardized.tsv`` has
    ``annotation id, worker, task, response, gold`` per answer (a header row first)."""
    (path,) = files
    member_name = settings["member"]
    try:
        with tarfile.open(fileobj=io.BytesIO(files[path]), mode="r:gz") as archive:
            members = [m for m in archive.getmembers()
                       if m.isfile() and m.name.rsplit("/", 1)[-1] == member_name]
            if len(members) != 1:
                raise SourceError(f"{path}: expected one member named {member_name}, "
                                  f"found {len(members)}")
            data = archive.extractfile(members[0]).read()  # read as bytes; nothing is extracted
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise SourceError(f"{path}: not a readable .tgz ({exc})") from None
    where = f"{path}:{member_name}"
    answers, truth = [], {}
    for number, fields in fields_of(data, where, 5, "\t"):
        if number == 1 and not fields[3].lstrip("-").isdigit():
            continue  # the header row
        _, worker, task, label, gold = fields
        answers.append((task, worker, label))
        add_truth(truth, task, gold, (where, number, "\t".join(fields)))
    return crowd_files(answers, truth)


def cubam_yaml(files: dict[str, bytes], settings: dict) -> dict[str, bytes]:
    """CUBAM's bluebirds demo: ``labels.yaml`` ``{worker: {image: bool}}`` and ``gt.yaml``
    ``{image: bool}``; true/false become 1/0, answers in the file's order."""
    answers_path, truth_path = settings["answers"], settings["truth"]
    labels = flow_yaml(text_of(files[answers_path], answers_path), answers_path)
    answers = []
    for worker, images in labels.items():
        if not isinstance(images, dict):
            raise SourceError(f"{answers_path}: worker {worker!r} has no mapping of images")
        answers.extend((image, worker, binary(value, answers_path))
                       for image, value in images.items())
    gold = flow_yaml(text_of(files[truth_path], truth_path), truth_path)
    return crowd_files(answers, {image: binary(value, truth_path) for image, value in gold.items()})


def cubam_ducks(files: dict[str, bytes], settings: dict) -> dict[str, bytes]:
    """CUBAM's ducks demo: ``labels.txt`` (a count line, then ``image worker label``) and
    ``classes.yaml`` (the species of each image); the truth is 1 where the species is one of
    ``settings["positive"]``."""
    answers_path, classes_path = settings["answers"], settings["classes"]
    rows = list(fields_of(files[answers_path], answers_path, 3))
    answers = [tuple(fields) for number, fields in rows[1:]]
    if rows and int(rows[0][1][2]) != len(answers):
        raise SourceError(f"{answers_path}: the first line counts {rows[0][1][2]} answers, "
                          f"the file has {len(answers)}")
    classes = flow_yaml(text_of(files[classes_path], classes_path), classes_path)
    try:
        species = classes["species"]
        positive = {str(species[name]) for name in settings["positive"]}
        truth = {str(image): "1" if str(kind) in positive else "0"
                 for image, kind in classes["labels"].items()}
    except (KeyError, TypeError, AttributeError) as exc:
        raise SourceError(f"{classes_path}: no labels/species mapping ({exc})") from None
    return crowd_files(answers, truth)


def labelme_matrix(files: dict[str, bytes], settings: dict) -> dict[str, bytes]:
    """PyLearningCrowds' LabelMe ``answers.txt`` (images x workers, -1 where a worker did not
    answer) and ``LabelMe_Z_train.txt`` (the true class per image); answers sorted by task and
    worker (ids zero-padded: ``img0002``, ``w07``)."""
    answers_path, truth_path = settings["answers"], settings["truth"]
    image_id = "img{:0%dd}" % settings.get("image_digits", 4)
    worker_id = "w{:0%dd}" % settings.get("worker_digits", 2)
    answers = []
    for image, (number, line) in enumerate(nonblank(files[answers_path], answers_path)):
        for worker, label in enumerate(line.split()):
            if not label.lstrip("-").isdigit():
                raise bad(answers_path, number, line, "expected integer labels")
            if int(label) >= 0:
                answers.append((image_id.format(image), worker_id.format(worker),
                                str(int(label))))
    answers.sort()
    truth = {image_id.format(image): line.strip()
             for image, (_, line) in enumerate(nonblank(files[truth_path], truth_path))}
    return crowd_files(answers, truth)


def psychophysics_csvs(files: dict[str, bytes], settings: dict) -> dict[str, bytes]:
    """model-vs-human's ``raw-data/*/*_subject-NN_session_1.csv``, one file per participant:
    ``subj,...,object_response,category,...,imagename`` with a header row.  The task is the
    image name without its per-participant prefix (``0004_ske_s01_``), the label the response
    (``na``, no answer, is left out), the truth the image's category."""
    answers, truth = [], {}
    for path in files:  # the registry's order: participant by participant
        columns = None
        for number, fields in rows_of(files[path], path):
            if columns is None:
                columns = {name: k for k, name in enumerate(fields)}
                missing = {"subj", "object_response", "category", "imagename"} - set(columns)
                if missing:
                    raise bad(path, number, ",".join(fields), f"no column {sorted(missing)[0]}")
                continue
            if len(fields) < len(columns):
                raise bad(path, number, ",".join(fields), f"expected {len(columns)} fields")
            image = fields[columns["imagename"]].split("_", 3)
            if len(image) < 4:
                raise bad(path, number, ",".join(fields), "an image name without its prefix")
            task, response = image[3], fields[columns["object_response"]]
            add_truth(truth, task, fields[columns["category"]], (path, number, ",".join(fields)))
            if response != "na":
                answers.append((task, fields[columns["subj"]], response))
    return crowd_files(answers, truth)


def nonblank(data: bytes, path: str):
    return [(number, line) for number, line in enumerate(text_of(data, path).splitlines(), 1)
            if line.strip()]


def binary(value, path: str) -> str:
    if value not in (True, False):
        raise SourceError(f"{path}: expected true or false, found {value!r}")
    return "1" if value else "0"


def ratings_split(files: dict[str, bytes], settings: dict) -> dict[str, bytes]:
    """A ``user item rating`` file (one rating per line) as VW lines ``RATING |u USER |m ITEM``,
    split by ``random.Random(seed).shuffle`` of the lines: the first ``test_fraction`` (rounded
    down) is the test half."""
    (path,) = files
    lines = []
    for number, (user, item, rating) in fields_of(files[path], path, 3):
        try:
            float(rating)
        except ValueError:
            raise bad(path, number, f"{user} {item} {rating}", "the rating is no number") from None
        lines.append(f"{rating} |u {user} |m {item}\n")
    random.Random(settings["seed"]).shuffle(lines)
    n_test = int(len(lines) * settings["test_fraction"])
    name = settings["name"]
    return {f"{name}.train.vw": "".join(lines[n_test:]).encode(),
            f"{name}.test.vw": "".join(lines[:n_test]).encode()}


CONVERTERS = {
    "active_crowd_toolkit": active_crowd_toolkit,
    "answers_and_truth_csv": answers_and_truth_csv,
    "whitespace_triples": whitespace_triples,
    "tab_labels_and_gold": tab_labels_and_gold,
    "snow_tarball": snow_tarball,
    "cubam_yaml": cubam_yaml,
    "cubam_ducks": cubam_ducks,
    "labelme_matrix": labelme_matrix,
    "psychophysics_csvs": psychophysics_csvs,
    "ratings_split": ratings_split,
}


# ---------------------------------------------------------------------------------------------
# the little YAML the CUBAM demos use: flow mappings of numbers, words and booleans


TOKEN = re.compile(r"\s*(?:([{}:,])|([^{}:,\s][^{}:,]*))")


def flow_yaml(text: str, path: str) -> dict:
    """A file of flow mappings: ``{k: v, ...}`` or top-level ``key: {k: v, ...}`` lines.
    Scalars are integers, ``true``/``false`` or words; nothing else of YAML is read."""
    text = text.strip()
    if text.startswith("{"):
        value, end = flow_value(text, 0, path)
        if text[end:].strip():
            raise SourceError(f"{path}: text after the mapping: {text[end:end + 40]!r}")
        return value
    out = {}
    for match in re.finditer(r"^([^\s:{}][^:{}]*):\s*", text, re.M):
        value, _ = flow_value(text, match.end(), path)
        out[match.group(1).strip()] = value
    if not out:
        raise SourceError(f"{path}: no mapping found")
    return out


def flow_value(text: str, at: int, path: str):
    """The value starting at ``at`` and where it ends."""
    match = TOKEN.match(text, at)
    if match is None:
        raise SourceError(f"{path}: unexpected end of the mapping")
    if match.group(1) != "{":
        if match.group(2) is None:
            raise SourceError(f"{path}: unexpected {match.group(1)!r} at character {at}")
        return scalar(match.group(2).strip()), match.end()
    out, at = {}, match.end()
    while True:
        match = TOKEN.match(text, at)
        if match and match.group(1) == "}":
            return out, match.end()
        key, at = flow_value(text, at, path)
        colon = TOKEN.match(text, at)
        if colon is None or colon.group(1) != ":":
            raise SourceError(f"{path}: expected ':' after {key!r}")
        out[str(key)], at = flow_value(text, colon.end(), path)
        match = TOKEN.match(text, at)
        if match is None or match.group(1) not in (",", "}"):
            raise SourceError(f"{path}: expected ',' or '}}' after the value of {key!r}")
        at = match.end()
        if match.group(1) == "}":
            return out, at


def scalar(word: str):
    if word in ("true", "True"):
        return True
    if word in ("false", "False"):
        return False
    return word
