"""The dataset loader: registry, mirror, cache, SHA-256 refusal, the converters against rebuilt
sources, and `pyvw-lite datasets` end to end.

Tests that read real sets use the mirror beside the checkout (``../shared/datasets``, laid out
as the loader's ``PYVW_LITE_DATASETS_MIRROR`` expects) and skip with the reason where it is
missing; no test downloads anything.
"""
import csv
import hashlib
import io
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from pyvw_lite import datasets
from pyvw_lite.datasets import convert

MIRROR = Path(__file__).resolve().parents[2] / "shared" / "datasets"
needs_mirror = pytest.mark.skipif(not (MIRROR / "crowd").is_dir(),
                                  reason=f"no dataset mirror at {MIRROR}")
CLI = [sys.executable, "-m", "pyvw_lite"]


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """An empty cache of its own, no mirror, and no network: a download fails the test."""
    home = tmp_path / "cache"
    monkeypatch.setenv(datasets.HOME_VARIABLE, str(home))
    monkeypatch.delenv(datasets.MIRROR_VARIABLE, raising=False)

    def no_network(url):
        raise AssertionError(f"a test tried to download {url}")
    monkeypatch.setattr(datasets, "_download", no_network)
    return home


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_registry_entries_name_their_source_licence_and_checksums():
    entries = datasets.registry()
    assert len(entries) == 27
    for name, entry in entries.items():
        assert entry["kind"] in ("crowd", "ratings")
        assert len(entry["paths"]) == len(entry["urls"]) >= 1
        for path, url in zip(entry["paths"], entry["urls"]):
            assert url.startswith(f"https://raw.githubusercontent.com/{entry['repository']}/"
                                  f"{entry['commit']}/")
        assert entry["licence"]
        files = ({"answers.csv", "truth.csv"} if entry["kind"] == "crowd"
                 else {f"{name}.train.vw", f"{name}.test.vw"})
        assert set(entry["files"]) == files
        for file in entry["files"].values():
            assert len(file["sha256"]) == 64 and file["bytes"] > 0
        if entry["convert"]:
            assert entry["convert"]["format"] in convert.CONVERTERS
        else:
            assert entry["convert_note"]


def test_an_unknown_name_is_refused_with_the_names_there_are(cache):
    with pytest.raises(datasets.DatasetError) as error:
        datasets.fetch("smem_cat")
    message = str(error.value)
    assert "no dataset 'smem_cat'" in message and "smem_dog" in message and "act_CF" in message
    assert "\n" not in message and not cache.exists()


def test_the_cache_folder_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.delenv(datasets.HOME_VARIABLE, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert datasets.cache_home() == tmp_path / "xdg" / "pyvw-lite" / "datasets"
    monkeypatch.setenv(datasets.HOME_VARIABLE, str(tmp_path / "mine"))
    assert datasets.cache_home() == tmp_path / "mine"
    monkeypatch.delenv(datasets.HOME_VARIABLE)
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert datasets.cache_home() == tmp_path / "home" / ".cache" / "pyvw-lite" / "datasets"


def test_bundled_sets_need_no_cache(cache):
    assert datasets.fetch("act_MS") == datasets.folder("act_MS")
    answers, truth = datasets.load("act_MS", as_frame=False)
    assert len(answers["task"]) == 2945 and len(truth) == 700
    assert not cache.exists()


def test_a_set_without_a_converter_says_to_use_a_mirror(cache):
    with pytest.raises(datasets.DatasetError, match="no converter for its source yet.*"
                                                    "PYVW_LITE_DATASETS_MIRROR"):
        datasets.fetch("roitero_politifact_s6")
    assert list(cache.iterdir()) == []


@needs_mirror
def test_fetch_copies_from_the_mirror_checks_and_caches(cache, monkeypatch):
    monkeypatch.setenv(datasets.MIRROR_VARIABLE, str(MIRROR))
    where = datasets.fetch("smem_dog")
    assert where == cache / "smem_dog"
    for file in ("answers.csv", "truth.csv"):
        assert (where / file).read_bytes() == (MIRROR / "crowd" / "smem_dog" / file).read_bytes()
    assert sorted(path.name for path in cache.iterdir()) == ["smem_dog"]  # no staging left
    answers, truth = datasets.load("smem_dog", as_frame=False)
    assert len(answers["task"]) == 8070 and len(truth) == 807
    # once cached, the mirror is not needed
    monkeypatch.setenv(datasets.MIRROR_VARIABLE, str(cache / "nowhere"))
    assert datasets.fetch("smem_dog") == where


@needs_mirror
def test_load_gives_a_ratings_set_as_its_two_vw_files(cache, monkeypatch):
    monkeypatch.setenv(datasets.MIRROR_VARIABLE, str(MIRROR))
    train, test = datasets.load("filmtrust")
    assert train == cache / "filmtrust" / "filmtrust.train.vw"
    assert sum(1 for _ in open(train)) == 31949 and sum(1 for _ in open(test)) == 3549
    assert open(test).readline().count("|") == 2


@needs_mirror
def test_a_corrupted_mirror_copy_is_refused_and_nothing_is_cached(cache, tmp_path, monkeypatch):
    mirror = tmp_path / "mirror"
    (mirror / "crowd" / "smem_web").mkdir(parents=True)
    for file in ("answers.csv", "truth.csv"):
        data = (MIRROR / "crowd" / "smem_web" / file).read_bytes()
        if file == "truth.csv":
            data = data.replace(b"1,5", b"1,4", 1)  # one true label changed
        (mirror / "crowd" / "smem_web" / file).write_bytes(data)
    monkeypatch.setenv(datasets.MIRROR_VARIABLE, str(mirror))
    with pytest.raises(datasets.DatasetError) as error:
        datasets.fetch("smem_web")
    message = str(error.value)
    assert message.startswith("smem_web: truth.csv from the mirror") and "SHA-256" in message
    assert "\n" not in message
    assert list(cache.iterdir()) == []  # neither the set nor a staging folder
    result = subprocess.run(CLI + ["datasets", "fetch", "smem_web"], capture_output=True,
                            text=True, env={**os.environ})
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.startswith("pyvw-lite: error: smem_web: truth.csv")
    assert len(result.stderr.splitlines()) == 1


@needs_mirror
def test_a_mirror_without_the_set_is_named(cache, tmp_path, monkeypatch):
    monkeypatch.setenv(datasets.MIRROR_VARIABLE, str(tmp_path))
    with pytest.raises(datasets.DatasetError, match="lacks .*crowd/snow_rte/answers.csv"):
        datasets.fetch("snow_rte")


@needs_mirror
def test_a_cached_file_changed_later_is_refused_with_the_remedy(cache, monkeypatch):
    monkeypatch.setenv(datasets.MIRROR_VARIABLE, str(MIRROR))
    where = datasets.fetch("snow_wsd")
    with open(where / "answers.csv", "ab") as handle:
        handle.write(b"extra,row,1\r\n")
    with pytest.raises(datasets.DatasetError, match=f"the cached copy.*remove {where}"):
        datasets.fetch("snow_wsd")


def test_a_failed_conversion_leaves_the_cache_as_it_was(cache, monkeypatch):
    """A download that does not convert: no folder appears, no staging folder stays."""
    monkeypatch.setattr(datasets, "_download", lambda url: b"not,a\nsmem file\n")
    with pytest.raises(datasets.DatasetError, match=r"smem_dog: src/dog_crowd.txt:1: expected 3 "
                                                    r"fields: 'not,a'"):
        datasets.fetch("smem_dog")
    assert list(cache.iterdir()) == []


# ---------------------------------------------------------------------------------------------
# converters: each source layout rebuilt from the mirror's converted files, converted back, and
# held to the registry's SHA-256 through fetch's download path (downloads served from memory)


def rows(path: Path) -> list[list[str]]:
    return list(csv.reader(io.StringIO(path.read_text())))[1:]


def rebuilt_sources(name: str) -> dict[str, bytes]:
    """The set's source files in the layout its converter reads, made from the converted files
    (the source order of the answers is theirs; the truth's order is not kept, so the sources'
    truth comes in reverse to show the converter sorts it)."""
    entry = datasets.registry()[name]
    folder = MIRROR / "crowd" / name
    settings, paths = entry["convert"], entry["paths"]
    fmt = settings["format"]
    if fmt == "ratings_split":
        return {paths[0]: ratings_source(name)}
    answers, truth = rows(folder / "answers.csv"), rows(folder / "truth.csv")[::-1]
    gold = dict(truth)
    if fmt == "active_crowd_toolkit":
        return {paths[0]: "".join(f"{w},{t},{l},{gold[t]}\n" for t, w, l in answers).encode()}
    if fmt == "answers_and_truth_csv":
        head = settings["answers_header"]
        return {settings["answers"]: as_csv([[head, "worker", "answer"]] + answers),
                settings["truth"]: as_csv([[settings["truth_header"], "truth"]] + truth)}
    if fmt == "whitespace_triples":
        return {settings["answers"]: "".join(f"{t} {w} {l}\n" for t, w, l in answers).encode(),
                settings["truth"]: "".join(f"{t} {l}\n" for t, l in truth * 2).encode()}
    if fmt == "tab_labels_and_gold":
        lines = [f"{t}\t{l}\n" for t, l in truth] + ["http://nobody.example/\tYes\n"]
        return {settings["answers"]: "".join(f"{w}\t{t}\t{l}\n" for t, w, l in answers).encode(),
                settings["truth"]: "".join(lines).encode()}
    if fmt == "snow_tarball":
        table = "!amt_annotation_ids\t!amt_worker_ids\torig_id\tresponse\tgold\n" + "".join(
            f"a{k}\t{w}\t{t}\t{l}\t{gold[t]}\n" for k, (t, w, l) in enumerate(answers))
        return {paths[0]: tarball({f"all_collected_data/{settings['member']}": table.encode(),
                                   "all_collected_data/other.tsv": b"x\n"})}
    if fmt == "labelme_matrix":
        images = sorted(gold)
        workers = 1 + max(int(w[1:]) for _, w, _ in answers)
        matrix = {(t, int(w[1:])): l for t, w, l in answers}
        return {settings["answers"]: "".join(
                    " ".join(matrix.get((t, k), "-1") for k in range(workers)) + "\n"
                    for t in images).encode(),
                settings["truth"]: "".join(f"{gold[t]}\n" for t in images).encode()}
    if fmt == "psychophysics_csvs":
        out = {}
        for path in paths:
            subject = "subject-" + path.split("_subject-")[1][:2]
            mine = [(t, l) for t, w, l in answers if w == subject] + [(truth[0][0], "na")]
            out[path] = as_csv([["subj", "session", "trial", "rt", "object_response", "category",
                                 "condition", "imagename"]] + [
                [subject, "1", str(k), "0.5", label, gold[task], "0", f"{k:04d}_ske_s01_{task}"]
                for k, (task, label) in enumerate(mine, start=1)])
        return out
    raise AssertionError(f"no rebuild for {fmt}")


def ratings_source(name: str) -> bytes:
    """``user item rating`` lines in the source's order, recovered from the seeded split: the
    split shuffled the source's lines with random.Random(seed), test first."""
    import random
    combined = ((MIRROR / "ratings" / f"{name}.test.vw").read_text().splitlines()
                + (MIRROR / "ratings" / f"{name}.train.vw").read_text().splitlines())
    order = list(range(len(combined)))
    random.Random(datasets.registry()[name]["convert"]["seed"]).shuffle(order)
    source = [""] * len(combined)
    for position, line in zip(order, combined):
        rating, rest = line.split(" |u ")
        user, item = rest.split(" |m ")
        source[position] = f"{user} {item} {rating}"
    return "\n".join(source).encode()


def as_csv(table) -> bytes:
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerows(table)
    return buffer.getvalue().encode()


def tarball(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for member, data in members.items():
            info = tarfile.TarInfo(member)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


CONVERTIBLE = sorted(name for name, entry in datasets.registry().items()
                     if entry["convert"] and entry["convert"]["format"] not in
                     ("cubam_yaml", "cubam_ducks"))


@needs_mirror
@pytest.mark.parametrize("name", CONVERTIBLE)
def test_the_converter_reproduces_the_registered_bytes(name, cache, monkeypatch):
    sources = rebuilt_sources(name)
    entry = datasets.registry()[name]
    by_url = {url: sources[path] for path, url in zip(entry["paths"], entry["urls"])}
    monkeypatch.setattr(datasets, "_download", lambda url: by_url[url])
    where = datasets.fetch(name)
    for file, expected in entry["files"].items():
        assert sha((where / file).read_bytes()) == expected["sha256"]


@needs_mirror
def test_the_ratings_split_recovers_the_source_order():
    """Undoing the seeded shuffle gives the source's order: users ascending, and FilmTrust's
    last lines as pyRec_v7's data/filmtrust/ratings.txt ends."""
    lines = ratings_source("filmtrust").decode().splitlines()
    users = [int(line.split()[0]) for line in lines]
    assert users == sorted(users)
    assert lines[-6:] == ["1508 486 2.5", "1508 84 3.5", "1508 17 4", "1508 669 1",
                          "1508 686 2.5", "1508 806 3.5"]


def test_the_little_yaml_reader_reads_flow_mappings_and_refuses_the_rest():
    text = "labels: {0: 1, 1: 0,\n  2: 2}\nspecies: {Mallard: 0, Canada Goose: 1}\n"
    assert convert.flow_yaml(text, "c.yaml") == {"labels": {"0": "1", "1": "0", "2": "2"},
                                                 "species": {"Mallard": "0", "Canada Goose": "1"}}
    assert convert.flow_yaml("{7: {1: true, 2: false}}", "l") == {"7": {"1": True, "2": False}}
    for broken in ("{1: true", "{1 true}", "{1: true} tail", "- a list"):
        with pytest.raises(convert.SourceError):
            convert.flow_yaml(broken, "l.yaml")


def test_cubam_ducks_truth_is_the_positive_species():
    labels = b"3 2 4\n0 0 1\n1 0 0\n2 1 1\n0 1 1\n"
    classes = b"labels: {0: 0, 1: 1, 2: 2}\nspecies: {Mallard: 0, Canada Goose: 1, " \
              b"American Black Duck: 2}\n"
    out = convert.cubam_ducks({"l": labels, "c": classes},
                              {"answers": "l", "classes": "c",
                               "positive": ["Mallard", "American Black Duck"]})
    assert out["answers.csv"] == b"task,worker,label\r\n0,0,1\r\n1,0,0\r\n2,1,1\r\n0,1,1\r\n"
    assert out["truth.csv"] == b"task,label\r\n0,1\r\n1,0\r\n2,1\r\n"
    with pytest.raises(convert.SourceError, match="counts 5 answers, the file has 4"):
        convert.cubam_ducks({"l": labels.replace(b"3 2 4", b"3 2 5"), "c": classes},
                            {"answers": "l", "classes": "c", "positive": ["Mallard"]})


def test_a_task_with_two_true_labels_is_located():
    source = b"w1,t1,0,0\nw2,t1,1,1\n"
    with pytest.raises(convert.SourceError, match=r"^D.csv:2: task 't1' has two true labels"):
        convert.active_crowd_toolkit({"D.csv": source}, {})


# ---------------------------------------------------------------------------------------------
# the command line


@needs_mirror
def test_cli_fetch_prints_each_folder_and_list_shows_it_cached(tmp_path):
    env = {**os.environ, datasets.HOME_VARIABLE: str(tmp_path / "c"),
           datasets.MIRROR_VARIABLE: str(MIRROR)}
    done = subprocess.run(CLI + ["datasets", "fetch", "snow_temp", "act_CF", "ciao"],
                          capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [str(tmp_path / "c" / "snow_temp"),
                                        str(datasets.folder("act_CF")),
                                        str(tmp_path / "c" / "ciao")]
    listed = subprocess.run(CLI + ["datasets", "list"], capture_output=True, text=True, env=env)
    assert listed.returncode == 0
    by_name = {line.split()[0]: line for line in listed.stdout.splitlines()[1:-1]}
    assert set(by_name) == set(datasets.available())
    assert " cached " in by_name["snow_temp"] and " to fetch " in by_name["snow_rte"]
    assert " bundled " in by_name["act_CF"]
    assert "ratings" in by_name["ciao"] and "MaJingMusShuang/pyRec_v7" in by_name["ciao"]
    assert "Clear BSD" in by_name["cubam_ducks"]
    assert listed.stdout.splitlines()[-1] == f"cache: {tmp_path / 'c'}"


def test_cli_fetch_of_an_unknown_name_fails_in_one_line(tmp_path):
    env = {**os.environ, datasets.HOME_VARIABLE: str(tmp_path)}
    done = subprocess.run(CLI + ["datasets", "fetch", "nope"], capture_output=True, text=True,
                          env=env)
    assert done.returncode == 1
    assert done.stderr.startswith("pyvw-lite: error: no dataset 'nope'; available: act_CF")
    assert len(done.stderr.splitlines()) == 1


def test_psychophysics_rows_convert_as_the_source_writes_them():
    """The first rows of model-vs-human's raw-data/sketch/sketch_subject-01_session_1.csv (as
    the source has them) give the mirror's first answers of geirhos_sketch."""
    source = (b"subj,session,trial,rt,object_response,category,condition,imagename\n"
              b"subject-01,1,1,0.586625099182129,boat,boat,0,"
              b"0001_ske_s01_0_boat_00_boat-0068-sketch-23.png\n"
              b"subject-01,1,4,1.1105329990387,bird,cat,0,"
              b"0004_ske_s01_0_cat_00_cat-0251-sketch-6.png\n"
              b"subject-01,1,9,0.7,na,knife,0,0009_ske_s01_0_knife_00_knife-0044-sketch-48.png\n")
    out = convert.psychophysics_csvs({"s.csv": source}, {})
    assert out["answers.csv"].decode().splitlines() == [
        "task,worker,label", "0_boat_00_boat-0068-sketch-23.png,subject-01,boat",
        "0_cat_00_cat-0251-sketch-6.png,subject-01,bird"]
    assert out["truth.csv"].decode().splitlines()[1:] == [
        "0_boat_00_boat-0068-sketch-23.png,boat", "0_cat_00_cat-0251-sketch-6.png,cat",
        "0_knife_00_knife-0044-sketch-48.png,knife"]
    with pytest.raises(convert.SourceError, match="s.csv:1: no column imagename"):
        convert.psychophysics_csvs({"s.csv": b"subj,object_response,category\n"}, {})


@needs_mirror
def test_the_test_suites_helper_reaches_the_mirror_through_the_loader(cache, monkeypatch):
    sys.path.insert(0, str(Path(__file__).parent))
    import crowd_shared
    monkeypatch.setenv(datasets.MIRROR_VARIABLE, str(crowd_shared.MIRROR))
    where = crowd_shared.folder("d_sentiment")
    assert where == cache / "d_sentiment"
    assert (where / "answers.csv").read_bytes() == \
        (crowd_shared.SHARED / "d_sentiment" / "answers.csv").read_bytes()
