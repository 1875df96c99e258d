"""O que as lições 01 e 03 afirmam do Ray, conferido num Ray local de 2 CPUs: só a referência
passada direto a uma tarefa vira valor (lição 01); o joblib no Ray distribui os jobs na vez dos
atores, não a quem está livre (lição 03). E o tamanho da demonstração do ``ray.put`` (lição 01)."""

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


def test_the_put_demo_fits_in_half_of_the_object_store():
    size_mb = load("01_fundamentos_ray").tamanho_demo_mb
    gib = 1024**3
    assert size_mb(20 * gib, 11, teto_mb=200) == 200  # cabe: o teto da escala
    assert size_mb(2 * gib, 11, teto_mb=200) == 93  # macOS: 11 cópias de 93 MB em 1 GiB
    assert 11 * size_mb(2 * gib, 11, teto_mb=200) * 1024**2 <= gib
    assert size_mb(10 * 1024**2, 11, teto_mb=200) == 1  # ao menos 1 MB


@pytest.mark.timeout(60)
def test_only_top_level_refs_arrive_as_values(ray_local):
    @ray.remote
    def kinds(direct, nested):
        return isinstance(direct, ray.ObjectRef), isinstance(nested["x"][0], ray.ObjectRef)

    ref = ray.put([1, 2, 3])
    assert ray.get(kinds.remote(ref, {"x": [ref]})) == (False, True)


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
