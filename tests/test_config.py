"""A escala: ``full`` por padrão, ``smoke`` menor em todo tamanho, ``pick`` segue a escala; o que
os workers do Ray recebem."""

from dataclasses import fields

from labutils.config import HIDE_GPUS_ENV, SCALE_ENV, current_scale, forwarded_env, pick, sizes


def test_the_default_is_full_and_smoke_is_smaller_in_every_size(monkeypatch):
    monkeypatch.delenv(SCALE_ENV, raising=False)
    assert current_scale() == "full" and pick(full=200, smoke=10) == 200
    full = sizes()
    monkeypatch.setenv(SCALE_ENV, " Smoke ")  # maiúsculas e espaços não importam
    smoke = sizes()
    assert smoke.is_smoke and not full.is_smoke and pick(full=200, smoke=10) == 10
    assert pick(full=200, smoke=10, scale="full") == 200

    def total(value):  # None = o conjunto inteiro; tuplas somam seus números
        if value is None:
            return float("inf")
        if isinstance(value, tuple):
            return sum(total(v) for v in value)
        return value

    for field in fields(full):
        if field.name not in ("scale", "batch_per_replica", "num_workers"):
            big, small = getattr(full, field.name), getattr(smoke, field.name)
            assert total(small) < total(big), (field.name, small, big)


def test_ray_workers_get_the_gpu_rule_even_from_a_cluster_started_without_it():
    # init_ray repassa estas variáveis no runtime_env: valem nos workers de um cluster cujos
    # nós (`ray start` de outra pessoa) não as tinham
    assert forwarded_env()[HIDE_GPUS_ENV] == "1"
