"""The VW text format (SPEC §P.1, VW_FACTS §1): every rule, and random bytes never crash."""
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from pyvw_lite.io import vw_text
from pyvw_lite.io.vw_text import (EMPTY, INITIAL, LABEL, MALFORMED, NLABEL, OK, STATUS, TAG_END,
                                  TAG_START, WEIGHT, describe_error, parse_buffer, split_lines)
from pyvw_lite.workspace import ParseError, Workspace


def parse(text: bytes | str, **kw):
    data = text.encode() if isinstance(text, str) else text
    buf = np.frombuffer(data, np.uint8) if data else np.zeros(0, np.uint8)
    starts, ends, _ = split_lines(buf, final=True)
    return parse_buffer(buf, starts, ends, record_spans=True, source="t.vw", **kw)


def tag(batch, row=0):
    s = batch.ex_int[row, TAG_START]
    return None if s < 0 else bytes(batch.buf[s:batch.ex_int[row, TAG_END]]).decode()


def names(line: str, args: str = "--noconstant") -> list[tuple[str, float]]:
    ws = Workspace(args + " --quiet")
    batch = ws.parse(line, record_spans=True)
    return [(name, value) for name, _, value in ws.feature_names(batch, 0)]


@pytest.mark.parametrize("line,label,tag_text,labelled", [
    ("1 'tg|a x", 1.0, "tg", True),
    ("1 'tg |a x", 1.0, "tg", True),
    ("1 tg|a x", 1.0, "tg", True),       # a tag touching the bar
    ("1|a x", 0.0, "1", False),          # "1" touches the bar: a tag, no label
    ("1", 0.0, "1", False),              # a bare token touching the end of the line
    ("1 ", 1.0, None, True),
    ("lbl\t1 |a x", 1.0, None, True),    # everything up to the first TAB is dropped
    ("1\t|a x", 0.0, None, False),
    (" |a x", 0.0, None, False),         # unlabelled
])
def test_label_and_tag_rules(line, label, tag_text, labelled):
    batch = parse(line)
    assert batch.ex_int[0, STATUS] == OK
    assert (batch.ex_int[0, NLABEL] > 0) == labelled
    assert batch.ex_float[0, LABEL] == label
    assert tag(batch) == tag_text


def test_importance_and_initial():
    batch = parse("0.5 2 0.25 |a x")
    assert tuple(batch.ex_float[0]) == (0.5, 2.0, 0.25)
    assert batch.ex_float[0, WEIGHT] == 2.0 and batch.ex_float[0, INITIAL] == 0.25


@pytest.mark.parametrize("line,code", [
    ("x |a b", vw_text.ERR_LABEL_NOT_NUMBER),
    ("1 2 3 4 |a b", vw_text.ERR_TOO_MANY_LABEL_TOKENS),
    ("1 tg |a b", vw_text.ERR_BAD_IMPORTANCE),        # VW would take "tg" as weight 0
    ("1 1 x |a b", vw_text.ERR_BAD_INITIAL),
    ("1 |:a b", vw_text.ERR_NAMESPACE_COLON),
    ("1 |a:zz b", vw_text.ERR_NAMESPACE_WEIGHT),
    ("1 |a: b", vw_text.ERR_NAMESPACE_WEIGHT),
    ("1 |a x:1.5abc", vw_text.ERR_VALUE_TRAILING),
    ("1 |a x:1:2", vw_text.ERR_VALUE_TRAILING),
    ("1 |a x:nan", vw_text.ERR_VALUE_NOT_FINITE),
    ("1 |a x:inf", vw_text.ERR_VALUE_NOT_FINITE),
    # finite doubles that overflow the C floats VW keeps them in (VW learns NaNs from them)
    ("1e40 |a b", vw_text.ERR_BEYOND_FLOAT32),
    ("1 1 -1e39 |a b", vw_text.ERR_BEYOND_FLOAT32),
    ("1 |a x:1e40", vw_text.ERR_BEYOND_FLOAT32),
    ("1 |a:1e30 x:1e10", vw_text.ERR_SCALED_BEYOND_FLOAT32),
])
def test_malformed_lines_are_flagged_with_location(line, code):
    batch = parse("1 |a ok\n" + line)
    assert batch.ex_int[0, STATUS] == OK
    assert batch.ex_int[1, STATUS] == MALFORMED
    assert batch.ex_int[1, vw_text.ERR_CODE] == code
    message = describe_error(batch, 1)
    assert message.startswith("t.vw:2: ") and repr(line) in message


@pytest.mark.parametrize("weight", ["-2", "-inf", "inf", "1e39"])
def test_an_unusable_importance_weight_keeps_the_example_with_a_note(weight):
    # a number, but no weight to learn with: VW predicts such an example (it writes its -p
    # line) and does not learn it; the parser keeps the features and notes the weight (1e39,
    # beyond float32, is infinite as VW stores it: one rule with inf, issue 25 item 11)
    batch = parse(f"1 |a ok\n1 {weight} 'tg |a b")
    assert batch.ex_int[1, STATUS] == OK
    assert batch.ex_int[1, vw_text.ERR_CODE] == vw_text.ERR_NEGATIVE_IMPORTANCE
    assert batch.ex_int[1, vw_text.FEAT_END] - batch.ex_int[1, vw_text.FEAT_START] == 1  # a^b
    assert tag(batch, 1) == "tg"
    assert describe_error(batch, 1).startswith(f"t.vw:2: importance weight '{weight}' must be")


def test_a_message_about_a_runaway_token_stays_short():
    batch = parse("1 |a ok\n1 |a:" + "y" * 5000 + " b")
    message = describe_error(batch, 1)
    assert message.startswith("t.vw:2: namespace weight in '|a:yyy") and len(message) < 400


def test_empty_whitespace_crlf_and_bom_lines():
    batch = parse("\n   \n1 |a x\r\n\xef\xbb\xbf1 |a x\n".encode("latin-1"))
    status = list(batch.ex_int[:, STATUS])
    assert status == [EMPTY, OK, OK, OK]
    assert batch.ex_int[1, NLABEL] == 0  # whitespace-only: an unlabelled example
    assert batch.feat_hash[0] == batch.feat_hash[1]  # CR and BOM do not reach the features


def test_namespace_index_is_the_first_byte_and_the_hash_uses_the_full_name():
    batch = parse("|abc x |a x")
    assert list(batch.seg[:, vw_text.SEG_BYTE]) == [ord("a"), ord("a")]
    assert batch.feat_hash[0] != batch.feat_hash[1]


def test_namespace_weight_scales_values_and_zero_values_vanish():
    assert names("|a:0.5 x y:4 z:0 w:-0 v:-") == [("a^x", 0.5), ("a^y", 2.0)]


def test_vw_number_grammar():
    got = dict(names("|a r:1e t:.5 s:5. p:1e-2 o:-.5e1 n:1.5e+2 z:+2 u:0x10 q:-e3"))
    assert got == {"a^r": 1.0, "a^t": 0.5, "a^s": 5.0, "a^p": pytest.approx(0.01),
                   "a^o": -5.0, "a^n": 150.0, "a^z": 2.0, "a^u": 16.0}


def test_string_values_chain_hash_and_the_space_quirk():
    assert names("|a x:abc") == [("a^x^abc", 1.0)]
    assert names("| happiness:    true sadness:false") == [("happiness^true", 1.0),
                                                          ("sadness^false", 1.0)]
    assert names("|a x:") == [("a^x", 1.0)]


def test_duplicates_are_kept_and_repeated_namespaces_grouped():
    assert names("|a x |b y |a x") == [("a^x", 1.0), ("a^x", 1.0), ("b^y", 1.0)]


def test_anonymous_features_and_default_namespace():
    assert names("| :2 x :3") == [("", 2.0), ("x", 1.0), ("", 3.0)]


def test_no_escaping_and_utf8_names():
    assert names("|a x\\ y 'q' héllo") == [("a^x\\", 1.0), ("a^y", 1.0), ("a^'q'", 1.0),
                                           ("a^héllo", 1.0)]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.binary(max_size=60), min_size=1, max_size=20))
def test_random_bytes_never_crash_and_each_line_is_an_example_or_located(lines):
    lines = [line.replace(b"\n", b" ") for line in lines]
    batch = parse(b"\n".join(lines))
    expected = len(lines) - (1 if lines[-1] == b"" else 0)  # no line after a final newline
    assert batch.ex_int.shape[0] == expected
    for row in range(expected):
        status = batch.ex_int[row, STATUS]
        assert status in (OK, MALFORMED, EMPTY)
        if status == MALFORMED:
            assert describe_error(batch, row).startswith(f"t.vw:{row + 1}: ")
        if status == OK:
            first, last = batch.ex_int[row, vw_text.FEAT_START], batch.ex_int[row, vw_text.FEAT_END]
            assert np.all(np.isfinite(batch.feat_value[first:last]))
            assert np.all(batch.feat_value[first:last] != 0)
            assert math.isfinite(batch.ex_float[row, LABEL])
            assert batch.ex_float[row, WEIGHT] >= 0


@pytest.mark.parametrize("compressed", [False, True])
def test_line_chunks_grow_from_the_first_size_and_keep_every_line(tmp_path, compressed):
    """Reads start small and double up to the chunk size; every line comes back once, whole,
    in order, numbered from 1, including a last line without a newline."""
    import gzip

    from pyvw_lite.io.source import LineChunks
    lines = [f"{k % 3} |f a{k} b{'x' * (k % 37)}" for k in range(400)]
    raw = ("\n".join(lines)).encode()
    path = tmp_path / ("data.vw.gz" if compressed else "data.vw")
    path.write_bytes(gzip.compress(raw) if compressed else raw)
    seen, sizes = [], []
    for buf, starts, ends, first_line in LineChunks(str(path), chunk_bytes=2048, first_bytes=128):
        assert first_line == len(seen) + 1
        seen += [bytes(buf[s:e]).decode() for s, e in zip(starts, ends)]
        sizes.append(int(ends[-1] - starts[0]))
    assert seen == lines
    longest = max(len(line) for line in lines) + 1
    assert sizes[0] <= 128 and all(a < b for a, b in zip(sizes[:5], sizes[1:5]))
    assert 2048 - longest < max(sizes) <= 2048 + longest  # a read plus the carried partial line


def _gz_lines(path, **options):
    from pyvw_lite.io.source import LineChunks
    seen = []
    for buf, starts, ends, _ in LineChunks(str(path), chunk_bytes=4096, first_bytes=256,
                                           **options):
        seen += [bytes(buf[s:e]).decode() for s, e in zip(starts, ends)]
    return seen


def test_gzip_members_and_zero_padding_read_like_gunzip(tmp_path):
    import gzip
    lines = [f"{k % 2} |a x{k} y{k * 7}" for k in range(3000)]
    half = len(lines) // 2
    path = tmp_path / "two.vw.gz"
    path.write_bytes(gzip.compress(("\n".join(lines[:half]) + "\n").encode())
                     + gzip.compress(("\n".join(lines[half:]) + "\n").encode()) + b"\0" * 64)
    assert _gz_lines(path) == lines


@pytest.mark.parametrize("damage", ["truncated", "corrupt"])
def test_a_damaged_gzip_gives_its_whole_lines_before_the_damage_and_says_so(tmp_path, damage):
    """VW reads what it can of a damaged .gz in silence; here the lines before the damage come
    back (never a line cut short), and the report names the file and the last line read."""
    import gzip
    import random
    lines = [f"{k % 2} |a x{random.Random(k).random()}" for k in range(20000)]
    data = bytearray(gzip.compress(("\n".join(lines) + "\n").encode()))
    if damage == "truncated":
        data = data[:len(data) // 2]
    else:
        data[len(data) // 2] ^= 0xFF
    path = tmp_path / "d.vw.gz"
    path.write_bytes(bytes(data))
    reports = []
    seen = _gz_lines(path, damaged=reports.append)
    assert len(reports) == 1
    assert reports[0].startswith(f"{path}: ")
    assert ("ends early" if damage == "truncated" else "corrupt compressed data") in reports[0]
    assert f"after line {len(seen)}" in reports[0]
    assert len(seen) > 1000
    if damage == "truncated":
        assert seen == lines[:len(seen)]
    with pytest.raises(ValueError, match="d.vw.gz: "):
        _gz_lines(path)


def test_cli_learns_a_truncated_gzip_up_to_the_damage(tmp_path):
    import gzip

    from conftest import run_workspace
    lines = [f"{1 if k % 3 else -1} |a x{k % 50} |b y{k % 7}" for k in range(6000)]
    full = gzip.compress(("\n".join(lines) + "\n").encode())
    path = tmp_path / "cut.vw.gz"
    path.write_bytes(full[:len(full) * 2 // 3])
    out, err, code = run_workspace(["-d", str(path), "-p", str(tmp_path / "p.txt")])
    assert code == 0
    assert f"[warning] {path}: compressed data ends early" in out
    learned = len((tmp_path / "p.txt").read_text().splitlines())
    assert f"after line {learned};" in out
    plain = tmp_path / "head.vw"
    plain.write_text("\n".join(lines[:learned]) + "\n")
    run_workspace(["-d", str(plain), "-p", str(tmp_path / "q.txt")])
    assert (tmp_path / "p.txt").read_text() == (tmp_path / "q.txt").read_text()
    with pytest.raises(ParseError, match="cut.vw.gz: compressed data ends early"):
        run_workspace(["-d", str(path), "--strict_parse"])


def test_string_values_audit_as_vw(tmp_path):
    """Issue 29 items 8-9 against VW 9.11.9's --audit: a string-valued feature has value 1
    whatever its namespace's weight (|a:2 x:red), and its value runs to the next space, so a
    '|' inside it is part of it (|a x:red|b y:1 is a^x^red|b, and y stays in a); after a
    numeric value '|' starts a namespace, as in VW."""
    from pathlib import Path

    from conftest import run_workspace
    golden = Path(__file__).parent / "golden" / "strings"
    out, _, code = run_workspace(["-d", str(golden / "string_values.vw"), "--audit", "-b", "20",
                                  "--quiet"])
    assert code == 0
    assert out == (golden / "vw.audit").read_text()
    assert names("1 |a:2 x:red y:3") == [("a^x^red", 1.0), ("a^y", 6.0)]
    assert names("1 |a x:red|b y:1") == [("a^x^red|b", 1.0), ("a^y", 1.0)]
    assert names("1 |a x:1|b y:1") == [("a^x", 1.0), ("b^y", 1.0)]
