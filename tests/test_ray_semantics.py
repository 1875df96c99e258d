"""O que as lições 01 e 03 afirmam do Ray e conferem ao vivo, num Ray local de 2 CPUs: o joblib
no Ray distribui os jobs na vez dos atores, não a quem está livre (lição 03)."""

from __future__ import annotations

import joblib
import pytest
import ray
from ray.util.joblib import register_ray

from labutils import raytools, tuning
from tools.lesson_code import load


@pytest.fixture(scope="module")
def ray_local():
    raytools.init_ray(num_cpus=2, dashboard=False)
    yield
    ray.shutdown()


@pytest.mark.timeout(120)
def test_joblib_on_ray_hands_each_job_to_the_next_actor_even_if_busy(ray_local):
    # o 1º job é longo: um worker livre pegaria o 3º; o Pool do Ray o dá ao ator do 1º, na vez
    wait = load("03_ray_tune_joblib").espera_cronometrada
    register_ray()
    with joblib.parallel_backend("ray"):
        bars = joblib.Parallel(n_jobs=2, batch_size=1)(
            joblib.delayed(wait)(s) for s in [1.0, 0.05, 0.05, 0.05, 0.05]
        )
    pids = [pid for pid, _, _ in bars]
    assert tuning.round_robin_difference(pids, 2) is None, pids
    assert bars[2][1] >= bars[0][2], "o 3º job esperou o 1º terminar no mesmo ator"
