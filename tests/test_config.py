"""A escala: ``full`` por padrão, ``smoke`` pelo ambiente, e ``pick`` segue a escala."""

from labutils.config import SCALE_ENV, current_scale, pick, sizes


def test_the_default_is_full_and_the_environment_picks_smoke(monkeypatch):
    monkeypatch.delenv(SCALE_ENV, raising=False)
    assert current_scale() == "full" and pick(full=200, smoke=10) == 200
    assert not sizes().is_smoke
    monkeypatch.setenv(SCALE_ENV, " Smoke ")  # maiúsculas e espaços não importam
    assert sizes().is_smoke and pick(full=200, smoke=10) == 10
