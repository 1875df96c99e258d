"""Lição 03: o ``Tuner`` da célula ``roda_tuner`` grava em ``results/tune``, minimiza o ``mse``, com
1 CPU por trial e tantos trials juntos quantas CPUs (com um dublê do ``tune.Tuner``, sem Ray)."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from ray import tune

LESSON_03 = Path(__file__).resolve().parents[1] / "notebooks" / "03_ray_tune_joblib.ipynb"


def tuner_cell() -> str:
    cells = [
        c.source
        for c in nbformat.read(LESSON_03, as_version=4).cells
        if c.cell_type == "code" and "def roda_tuner(" in c.source
    ]
    assert len(cells) == 1, f"a lição 03 deveria definir roda_tuner numa célula; achei {len(cells)}"
    return cells[0]


class FakeTuner:
    """Guarda o que a lição passou ao ``tune.Tuner``; ``fit()`` devolve a si mesmo."""

    created: list[FakeTuner] = []

    def __init__(self, trainable, *, param_space, tune_config, run_config):
        self.trainable, self.param_space = trainable, param_space
        self.tune_config, self.run_config = tune_config, run_config
        FakeTuner.created.append(self)

    def fit(self):
        return self


@pytest.fixture
def lesson(tmp_path, monkeypatch):
    """O namespace da célula de ``roda_tuner``, com ``results/`` numa pasta temporária."""
    FakeTuner.created.clear()
    monkeypatch.setattr(tune, "Tuner", FakeTuner)
    ns = {
        "tune": tune,
        "results_dir": lambda: tmp_path,
        "dados": ([[0.0]], [0.0], [[0.0]], [0.0]),
        "NUCLEOS": 3,
    }
    exec(tuner_cell(), ns)  # noqa: S102  (o código é o da própria lição)
    return ns


def trial(config, dados):
    return None


def test_the_tuner_writes_under_results_tune_with_one_cpu_per_trial(lesson, tmp_path):
    space = {"max_depth": tune.grid_search([2, 4]), "n_estimators": 5}
    lesson["roda_tuner"](trial, space, "03_grade")
    (made,) = FakeTuner.created
    assert made.run_config.storage_path == str((tmp_path / "tune").resolve())
    assert made.run_config.name == "03_grade"
    assert (made.tune_config.metric, made.tune_config.mode) == ("mse", "min")
    assert made.tune_config.max_concurrent_trials == lesson["NUCLEOS"]
    assert made.trainable._resources.required_resources == {"CPU": 1}
    assert made.param_space == space


def test_concorrentes_fixes_how_many_trials_run_together(lesson):
    # o ASHA da seção 5 roda com 2 trials juntos em qualquer máquina (a ordem de chegada conta)
    lesson["roda_tuner"](trial, {"max_depth": tune.grid_search([2, 4])}, "03_asha", concorrentes=2)
    assert FakeTuner.created[-1].tune_config.max_concurrent_trials == 2
    assert FakeTuner.created[-1].tune_config.reuse_actors is True
