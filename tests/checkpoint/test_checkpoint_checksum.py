"""Checkpoint checksums: the ``gridsum`` algorithm (format version 2) and format-version-1 (CRC-32) checkpoints."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import shardarray as sa
from shardarray.checkpoint.stfile import GRID_BYTES, Crc32, GridSum, checksum

SIZES = [0, 1, 7, 8, 9, 4096, GRID_BYTES - 1, GRID_BYTES, GRID_BYTES + 5, 2 * GRID_BYTES + 12345]


def _bytes(n: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, n, dtype=np.uint8)


@settings(max_examples=20, deadline=None)
@given(n=st.sampled_from(SIZES), cuts=st.lists(st.integers(0, 3 * GRID_BYTES), max_size=6))
def test_gridsum_is_the_same_whatever_pieces_the_bytes_come_in(n, cuts):
    a = _bytes(n)
    h = GridSum()
    edges = sorted({0, n, *(c for c in cuts if c < n)})
    for lo, hi in itertools.pairwise(edges):
        h.update(memoryview(a)[lo:hi])
    assert h.hexdigest() == checksum(a)


def test_gridsum_equals_its_definition_zero_padded_grids_then_the_length():
    import hashlib

    for n in SIZES[1:]:
        a = _bytes(n, seed=n)
        pad = np.zeros(-(-n // GRID_BYTES) * GRID_BYTES, np.uint8)
        pad[:n] = a
        ref = hashlib.blake2b(digest_size=8)
        for lo in range(0, len(pad), GRID_BYTES):
            g = pad[lo:lo + GRID_BYTES].view("<u8").reshape(256, 256)
            ref.update(g.sum(axis=0, dtype=np.uint64))
            ref.update(g.sum(axis=1, dtype=np.uint64))
        ref.update(n.to_bytes(8, "little"))
        assert checksum(a) == f"gridsum:{ref.hexdigest()}"


@settings(max_examples=30, deadline=None)
@given(n=st.sampled_from(SIZES[1:]), data=st.data())
def test_gridsum_catches_any_flipped_byte_any_truncation_and_swapped_words(n, data):
    a = _bytes(n, seed=1)
    good = checksum(a)
    i = data.draw(st.integers(0, n - 1))
    bad = a.copy()
    bad[i] ^= data.draw(st.integers(1, 255))
    assert checksum(bad) != good
    assert checksum(a[:data.draw(st.integers(0, n - 1))]) != good
    if n >= 16:  # two words exchanged (distinct values), anywhere
        w = n // 8
        j, k = data.draw(st.integers(0, w - 1)), data.draw(st.integers(0, w - 1))
        words = a[:w * 8].copy().view("<u8")
        if words[j] != words[k]:
            words[[j, k]] = words[[k, j]]
            swapped = np.concatenate([words.view(np.uint8), a[w * 8:]])
            assert checksum(swapped) != good


def test_gridsum_catches_any_error_confined_to_three_words_of_a_chunk():
    a = _bytes(GRID_BYTES, seed=2)
    good = checksum(a)
    rng = np.random.default_rng(3)
    for _ in range(200):
        w = a.copy().view("<u8")
        idx = rng.choice(len(w), size=3, replace=False)
        w[idx] += rng.integers(1, 2**63, size=3, dtype=np.uint64)  # nonzero changes that could cancel in a plain sum
        assert checksum(w.view(np.uint8)) != good
    w = a.copy().view("<u8")
    w[0] += np.uint64(5)
    w[1] -= np.uint64(5)  # the total sum is unchanged; the column sums are not
    assert checksum(w.view(np.uint8)) != good


def _save(path):
    mesh = sa.Mesh({"row": 2, "col": 2})
    value = np.arange(7 * 5, dtype=np.float32).reshape(7, 5)
    x = sa.asarray(value, dims=("a", "b"), mesh=mesh, layout={"a": "row", "b": "col"})
    sa.checkpoint.save(path, {"x": x})
    return value, mesh


def _as_version_1(path):
    """Rewrite a checkpoint as format version 1 wrote it: CRC-32 checksums of each block's bytes."""
    from safetensors import safe_open

    m = json.loads((path / "manifest.json").read_text())
    m["version"] = 1
    for entry in m["arrays"].values():
        for b in entry["blocks"]:
            with safe_open(str(path / b["file"]), framework="np") as f:
                h = Crc32()
                h.update(np.ascontiguousarray(f.get_tensor(b["key"])))
            b["checksum"] = h.hexdigest()
    (path / "manifest.json").write_text(json.dumps(m))


def test_new_checkpoints_are_version_3_with_a_gridsum_per_block_and_a_manifest_checksum(tmp_path):
    from shardarray.checkpoint.manifest import manifest_checksum

    _save(tmp_path / "c")
    m = json.loads((tmp_path / "c" / "manifest.json").read_text())
    assert m["version"] == 3
    assert all(b["checksum"].startswith("gridsum:") for b in m["arrays"]["x"]["blocks"])
    assert m["checksum"] == manifest_checksum(m) and m["checksum"].startswith("sha256:")


def test_an_edited_manifest_fails_its_checksum(tmp_path):
    """One changed digit of a saved scalar (or of anything else in the manifest) is caught."""
    mesh = sa.Mesh({"row": 2, "col": 2})
    sa.checkpoint.save(tmp_path / "c", {"step": 400, "x": sa.ones(mesh, {"a": 4})})
    f = tmp_path / "c" / "manifest.json"
    text = f.read_text()
    assert text.count("400") == 1
    f.write_text(text.replace("400", "410"))
    with pytest.raises(sa.CheckpointError, match="manifest.json fails its checksum"):
        sa.checkpoint.load(tmp_path / "c", mesh=mesh)


def test_blocks_without_checksums_need_verify_false(tmp_path):
    """An older (version 2) checkpoint whose blocks carry no checksums loads only with verify=False."""
    value, _ = _save(tmp_path / "c")
    f = tmp_path / "c" / "manifest.json"
    m = json.loads(f.read_text())
    m["version"] = 2
    del m["checksum"]
    for b in m["arrays"]["x"]["blocks"]:
        del b["checksum"]
    f.write_text(json.dumps(m))
    with pytest.raises(sa.CheckpointError, match=r"\['x'\] have blocks without checksums.*verify=False"):
        sa.checkpoint.load(tmp_path / "c", mesh=sa.Mesh({"d": 1}))
    out = sa.checkpoint.load(tmp_path / "c", mesh=sa.Mesh({"d": 1}), verify=False)
    assert np.array_equal(out["x"].numpy(), value)
    m["version"] = 3  # a version-3 manifest must have them: damaged
    from shardarray.checkpoint.manifest import manifest_checksum

    m["checksum"] = manifest_checksum(m)
    f.write_text(json.dumps(m))
    with pytest.raises(sa.CheckpointError, match="has no checksum"):
        sa.checkpoint.load(tmp_path / "c", mesh=sa.Mesh({"d": 1}), verify=False)


@pytest.mark.parametrize("layout", [{"a": "row", "b": "col"}, {"b": "all"}])  # whole blocks; parts of blocks
def test_version_1_crc32_checkpoints_still_load_and_are_still_verified(tmp_path, layout):
    value, _ = _save(tmp_path / "c")
    _as_version_1(tmp_path / "c")
    mesh = sa.Mesh({"row": 2, "col": 2}) if "a" in layout else sa.Mesh({"all": 4})
    target = {"x": sa.zeros(mesh, {"a": 7, "b": 5}, layout=layout)}
    out = sa.checkpoint.load(tmp_path / "c", target)
    assert np.array_equal(out["x"].numpy(), value)
    f = tmp_path / "c" / "blocks-00000.safetensors"
    raw = bytearray(f.read_bytes())
    raw[-3] ^= 0x10  # inside the last block's data
    f.write_bytes(bytes(raw))
    with pytest.raises(sa.CheckpointError, match=r"fails its checksum \(crc32:"):
        sa.checkpoint.load(tmp_path / "c", target)
    assert sa.checkpoint.load(tmp_path / "c", target, verify=False)["x"].shape == (7, 5)


@pytest.mark.parametrize("layout", [{"a": "row", "b": "col"}, {"b": "all"}])
def test_a_flipped_byte_fails_the_gridsum_on_whole_and_partial_block_reads(tmp_path, layout):
    _save(tmp_path / "c")
    f = tmp_path / "c" / "blocks-00000.safetensors"
    raw = bytearray(f.read_bytes())
    raw[-3] ^= 0x10
    f.write_bytes(bytes(raw))
    mesh = sa.Mesh({"row": 2, "col": 2}) if "a" in layout else sa.Mesh({"all": 4})
    with pytest.raises(sa.CheckpointError, match="'x'.*fails its checksum.*gridsum:"):
        sa.checkpoint.load(tmp_path / "c", {"x": sa.zeros(mesh, {"a": 7, "b": 5}, layout=layout)})


def test_an_unknown_checksum_algorithm_is_refused_before_reading(tmp_path):
    _save(tmp_path / "c")
    m = json.loads((tmp_path / "c" / "manifest.json").read_text())
    m["arrays"]["x"]["blocks"][0]["checksum"] = "xxh3:0123456789abcdef"
    from shardarray.checkpoint.manifest import manifest_checksum

    m["checksum"] = manifest_checksum(m)  # a consistent manifest, from a newer writer
    (tmp_path / "c" / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(sa.CheckpointError, match=r"'x'.*xxh3.*\['gridsum', 'crc32'\].*shardarray version"):
        sa.checkpoint.load(tmp_path / "c", mesh=sa.Mesh({"d": 1}))


def test_crc32_of_version_1_checkpoints_is_zlibs_whichever_implementation_runs():
    import zlib

    for n in SIZES:
        a = _bytes(n, seed=5)
        h = Crc32()
        for lo in range(0, n, 100_000):
            h.update(memoryview(a)[lo:lo + 100_000])
        assert h.hexdigest() == f"crc32:{zlib.crc32(a.tobytes()):08x}" == checksum(a, "crc32")
