"""bench/poison.py's corpora: the committed parts hold together, and a missing cache is said,
not mistaken for a clean result."""

import json

import pytest

from bench import poison_corpus
from projects.memory import poisoning

pytestmark = pytest.mark.db_independent


def test_the_benign_manifest_names_each_file_by_source_and_hash():
    files = json.loads((poison_corpus.HERE / "benign.json").read_text())["files"]
    assert len(files) >= 200
    assert all(set(f) >= {"repo", "path", "commit", "sha256", "kind", "language", "batch"} for f in files)
    assert len({f["sha256"] for f in files}) == len(files)
    assert {f["kind"] for f in files} == set(poison_corpus._BENIGN_KIND)
    assert {"en", "ru"} <= {f["language"] for f in files}


def test_our_attacks_cover_every_family_in_both_languages():
    attacks = json.loads((poison_corpus.HERE / "attacks.json").read_text())["attacks"]
    pairs = {(a["family"], a["lang"]) for a in attacks}
    assert pairs == {(f, lang) for f in poisoning.FAMILIES if f != poisoning.HIDDEN for lang in ("en", "ru")}


def test_a_missing_cache_is_reported(monkeypatch, tmp_path):
    monkeypatch.setattr(poison_corpus, "CACHE", tmp_path)
    real, missing = poison_corpus.benign()
    assert real == [] and len(missing) >= 200
    assert set(poison_corpus.wheels_missing()) == set(poison_corpus.WHEELS.values())


def test_a_cached_file_that_changed_is_not_used(monkeypatch, tmp_path):
    monkeypatch.setattr(poison_corpus, "CACHE", tmp_path)
    entry = json.loads((poison_corpus.HERE / "benign.json").read_text())["files"][0]
    (tmp_path / "benign").mkdir()
    (tmp_path / "benign" / f"{entry['sha256']}.md").write_text("something else")
    real, missing = poison_corpus.benign()
    assert real == [] and entry in missing


def test_every_hiding_place_yields_a_sample_found_by_the_scanner():
    samples = poison_corpus.hidden_attacks()
    assert {s.group.removeprefix("hidden: ") for s in samples} == set(poison_corpus.HIDING)
    assert all(poisoning.scan(s.text, kind=s.kind) for s in samples)
