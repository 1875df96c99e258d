import pytest

import labutils
from labutils.config import SCALE_ENV, current_scale, pick, sizes


def test_default_scale_is_full(monkeypatch):
    monkeypatch.delenv(SCALE_ENV, raising=False)
    assert current_scale() == "full"
    full = sizes()
    assert full.grid == ((100, 10), (200, 15), (300, 20), (400, 25), (500, 30))
    assert full.epochs == 10 and full.batch_per_replica == 64
    assert full.housing_examples is None and full.cifar_train_examples is None


def test_smoke_scale_is_smaller_everywhere(monkeypatch):
    monkeypatch.setenv(SCALE_ENV, " Smoke ")
    smoke, full = sizes(), sizes("full")
    assert smoke.is_smoke and not full.is_smoke
    assert sum(n for n, _ in smoke.grid) < sum(n for n, _ in full.grid)
    assert smoke.epochs < full.epochs
    assert smoke.multiworker_epochs < full.multiworker_epochs
    assert smoke.cifar_train_examples > 0 and smoke.housing_examples > 0


def test_invalid_scale_is_explained_in_portuguese(monkeypatch):
    monkeypatch.setenv(SCALE_ENV, "grande")
    with pytest.raises(ValueError, match=r"LABUTILS_SCALE='grande' não é uma escala válida.*smoke"):
        labutils.sizes()
    with pytest.raises(ValueError, match="Escala desconhecida"):
        sizes("enorme")


def test_pick_follows_the_setting(monkeypatch):
    monkeypatch.setenv(SCALE_ENV, "full")
    assert pick(full=200, smoke=10) == 200
    monkeypatch.setenv(SCALE_ENV, "smoke")
    assert pick(full=200, smoke=10) == 10
    assert pick(full=200, smoke=10, scale="full") == 200
