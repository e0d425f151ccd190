"""`draftgen.testing.sglang` finds the set-up of the checkout it runs in, or $DRAFTGEN_CACHE, not
only the one beside the source it was imported from (a second clone)."""

from __future__ import annotations

from draftgen.testing.sglang import cache_dir, repo_root


def test_a_second_clone_finds_its_own_cache(tmp_path, monkeypatch):
    clone = tmp_path / "clone"
    (clone / ".cache").mkdir(parents=True)
    (clone / "pyproject.toml").write_text("")
    (clone / "docs").mkdir()
    monkeypatch.delenv("DRAFTGEN_CACHE", raising=False)
    monkeypatch.chdir(clone / "docs")
    assert cache_dir() == clone / ".cache"
    assert cache_dir() != repo_root() / ".cache"
    monkeypatch.setenv("DRAFTGEN_CACHE", str(tmp_path / "shared"))
    assert cache_dir() == (tmp_path / "shared").resolve()
