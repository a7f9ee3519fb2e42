"""Hashing identical to VW 9.11.9: MurmurHash3 vectors and the index table of VW_FACTS §2."""
import random

import pytest

from pyvw_lite.io.hashing import hash_bytes, murmur3_u32, murmur_bytes
from pyvw_lite.workspace import Workspace

# SPEC §P.2 [H1]
MURMUR_VECTORS = [
    ("", 0, 0x00000000), ("", 1, 0x514E28B7), ("", 0xFFFFFFFF, 0x81F16F39),
    ("\0\0\0\0", 0, 0x2362F9DE), ("aaaa", 0x9747B28C, 0x5A97808A), ("abc", 0, 0xB3DD93FA),
    ("Hello, world!", 0x9747B28C, 0x24884CBA), ("hello", 0, 0x248BFA47),
]


@pytest.mark.parametrize("text,seed,expected", MURMUR_VECTORS)
def test_murmur3_reference_vectors(text, seed, expected):
    assert murmur_bytes(text, seed) == expected


def test_murmur3_of_an_integer_is_that_of_its_four_little_endian_bytes():
    rng = random.Random(5)
    for _ in range(200):
        value, seed = rng.getrandbits(32), rng.getrandbits(32)
        assert murmur3_u32(value, seed) == murmur_bytes(value.to_bytes(4, "little"), seed)


def test_murmur3_agrees_with_mmh3_on_random_inputs():
    mmh3 = pytest.importorskip("mmh3")
    rng = random.Random(5)
    for _ in range(2000):
        data = bytes(rng.randrange(256) for _ in range(rng.randrange(0, 40)))
        seed = rng.randrange(1 << 32)
        assert murmur_bytes(data, seed) == mmh3.hash(data, seed, signed=False)


def test_digit_rule_and_trimming():
    seed = hash_bytes("a")
    assert hash_bytes("123", seed) == (123 + seed) & 0xFFFFFFFF
    assert hash_bytes("0123", seed) == hash_bytes("123", seed)
    assert hash_bytes(" 123 ", seed) == hash_bytes("123", seed)
    assert hash_bytes("-5", seed) == murmur_bytes("-5", seed)
    assert hash_bytes("123", seed, hash_all=True) == murmur_bytes("123", seed)
    assert hash_bytes("", 77) == 77  # VW: an empty name hashes to its seed


def audit_slots(args: str, line: str) -> dict[str, int]:
    ws = Workspace(args + " --quiet")
    batch = ws.parse(line, record_spans=True)
    return {name: slot for name, slot, _ in ws.feature_names(batch, 0)}


# VW_FACTS §2 test vectors (b = 18, seed 0), verified there with VW's --audit
@pytest.mark.parametrize("args,line,name,slot", [
    ("", "|a x", "a^x", 55432),
    ("", "|a 123", "a^123", 92717),
    ("", "|a 0123", "a^0123", 92717),
    ("", "|a -5", "a^-5", 20435),
    ("", "|a 1.5", "a^1.5", 110738),
    ("", "|b x:2", "b^x", 143313),
    ("", "|a y", "a^y", 42847),
    ("", "|a z", "a^z", 202246),
    ("", "|c z", "c^z", 243768),
    ("", "| x", "x", 170779),
    ("", "| y", "y", 102934),
    ("", "|abc x", "abc^x", 189681),
    ("", "|a x:abc", "a^x^abc", 249710),
    ("", "|a x", "Constant", 116060),
    ("-b 10", "|a x", "Constant", 348),
    ("-q ab", "|a x |b y", "a^x*b^y", 167114),
    ("--cubic abc", "|a x |b y |c z", "a^x*b^y*c^z", 6598),
    ("--hash_seed 5", "|a x", "a^x", 87490),
    ("--hash_seed 5", "| y", "y", 147998),
    ("--hash_seed 5", "|b y", "b^y", 55191),
    ("--hash_seed 5", "|b y", "Constant", 116060),
    ("--hash all", "|a 123", "a^123", 248789),
    ("--hash_seed 7", "|a 123", "a^123", 97954),
    ("--hash all --hash_seed 7", "|a 123", "a^123", 165794),  # checked with VW 9.11.9 --audit
])
def test_vw_index_table(args, line, name, slot):
    assert audit_slots(args, line)[name] == slot


def test_anonymous_features_count_up_from_the_namespace_hash():
    ws = Workspace("--quiet --noconstant")
    batch = ws.parse("|a :2 :3", record_spans=True)
    assert [slot for _, slot, _ in ws.feature_names(batch, 0)] == [92594, 92595]


def test_wildcard_pairs_every_namespace_but_not_the_constant():
    slots = audit_slots("-q ::", "|a x |b y |c z")
    crossed = sorted(name for name in slots if "*" in name)
    assert crossed == ["a^x*a^x", "a^x*b^y", "a^x*c^z", "b^y*b^y", "b^y*c^z", "c^z*c^z"]
    assert slots["a^x*b^y"] == 167114


def test_duplicate_interactions_are_removed_unless_asked():
    ws = Workspace("-q ab -q ba --quiet")
    assert ws.interactions.terms == ["ab"]
    assert "Removed: 1" in ws.interactions.warnings[0]
    ws = Workspace("-q ab -q ba --leave_duplicate_interactions --quiet")
    assert ws.interactions.terms == ["ab", "ba"]


def test_ignore_and_keep_drop_namespaces_by_first_letter():
    assert "a^x" not in audit_slots("--ignore a", "|apple x |b y")
    assert "b^y" in audit_slots("--ignore a", "|apple x |b y")
    linear_off = audit_slots("--ignore_linear a -q ab", "|apple x |b y")
    assert "apple^x" not in linear_off and "b^y" in linear_off
    assert linear_off["apple^x*b^y"] == audit_slots("-q ab", "|apple x |b y")["apple^x*b^y"]
    assert "apple^x*b^y" not in audit_slots("--ignore a --ignore_linear a -q ab", "|apple x |b y")
    # VW's driver lines, letters ascending
    assert Workspace("--ignore rx --ignore_linear tr --keep t --keep r --quiet").interactions \
        .messages == ["ignoring namespaces beginning with: r x",
                      "ignoring linear terms for namespaces beginning with: r t",
                      "using namespaces beginning with: r t"]
    kept = audit_slots("--keep b", "|apple x |b y | z")
    assert "b^y" in kept and "z" not in kept and "apple^x" not in kept
