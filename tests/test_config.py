"""A escala: ``full`` por padrão, ``smoke`` pelo ambiente, ``pick`` segue a escala; o que os
workers do Ray recebem."""

from labutils.config import HIDE_GPUS_ENV, SCALE_ENV, current_scale, forwarded_env, pick, sizes


def test_the_default_is_full_and_the_environment_picks_smoke(monkeypatch):
    monkeypatch.delenv(SCALE_ENV, raising=False)
    assert current_scale() == "full" and pick(full=200, smoke=10) == 200
    assert not sizes().is_smoke
    monkeypatch.setenv(SCALE_ENV, " Smoke ")  # maiúsculas e espaços não importam
    assert sizes().is_smoke and pick(full=200, smoke=10) == 10


def test_ray_workers_get_the_gpu_rule_even_from_a_cluster_started_without_it():
    # init_ray repassa estas variáveis no runtime_env: valem nos workers de um cluster cujos
    # nós (`ray start` de outra pessoa) não as tinham
    assert forwarded_env()[HIDE_GPUS_ENV] == "1"
