"""work/patches holds the series of one tree at a time: a run drops what a later
--verify-only would take for its own (another tree's series and records, or after
a whole run every series it did not make)."""

import json
from pathlib import Path

from classify.convert import cli, series


def make_dir(root: Path, name: str, version: str | None) -> Path:
    d = root / name
    d.mkdir(parents=True)
    data = {"subsystem": name, "patches": [{"patch": "0001-x.patch", "id": f"{name}:s"}],
            "refused": []}
    if version:
        data["kernel_version"] = version
    (d / "series.json").write_text(json.dumps(data))
    (d / "0001-x.patch").write_text("patch\n")
    return d


def test_a_whole_run_drops_every_series_it_did_not_make(tmp_path):
    mine = make_dir(tmp_path, "mine", "6.1.192")
    same = make_dir(tmp_path, "same-tree", "6.1.192")
    other = make_dir(tmp_path, "amd-kfd", "6.12.118")
    series.drop_stale_series(tmp_path, "6.1.192", {mine}, whole=True)
    assert mine.is_dir() and not same.exists() and not other.exists()


def test_a_narrow_run_drops_only_another_trees_series(tmp_path):
    mine = make_dir(tmp_path, "mine", "6.1.192")
    same = make_dir(tmp_path, "same-tree", "6.1.192")
    other = make_dir(tmp_path, "amd-kfd", "6.12.118")
    series.drop_stale_series(tmp_path, "6.1.192", {mine}, whole=False)
    assert mine.is_dir() and same.is_dir() and not other.exists()


def test_verify_only_reads_the_series_of_its_version(tmp_path):
    make_dir(tmp_path, "mine", "6.1.192")
    make_dir(tmp_path, "old-index", None)        # made before series.json had a version
    make_dir(tmp_path, "amd-kfd", "6.12.118")
    assert [s.slug for s in series.read_series(tmp_path, "6.1.192")] == ["mine", "old-index"]
    assert len(series.read_series(tmp_path)) == 3


def test_records_of_another_tree_are_not_merged_into_this_ones(tmp_path):
    path = tmp_path / "patches.json"
    cli.merge_json(path, {"a:x": {"status": "converted"}}, {"kernel_version": "6.12.118"})
    cli.merge_json(path, {"b:y": {"status": "converted"}}, {"kernel_version": "6.12.118"})
    assert set(json.loads(path.read_text())["semaphores"]) == {"a:x", "b:y"}
    cli.merge_json(path, {"c:z": {"status": "refused"}}, {"kernel_version": "6.1.192"})
    data = json.loads(path.read_text())
    assert set(data["semaphores"]) == {"c:z"} and data["kernel_version"] == "6.1.192"
