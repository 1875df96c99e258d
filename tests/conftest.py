"""Fixtures compartilhadas pelos testes de ``tests/``."""

from __future__ import annotations

import contextlib
import time
from pathlib import Path

import pytest
from processes import with_in_cmdline

#: os recursos divididos pelos testes (um de cada por processo do pytest): o cluster local e um
#: Ray local simples; e os arquivos com testes que usam cada um
_SHARED = pytest.StashKey[dict]()
_FILES = pytest.StashKey[dict]()


def _run_cluster():
    """Sobe o cluster (``next``) e o para (o seguinte) por uma exceção: tem de parar inteiro."""
    from labutils import system
    from labutils.cluster import LocalCluster

    with pytest.raises(RuntimeError, match="fim do uso"):
        with LocalCluster(num_workers=2, cpus_per_node=1, dashboard=True, verbose=False) as lc:
            assert len(system.alive(lc.pids)) >= 9  # 3 × (`ray start`, raylet, ...) + gcs_server
            yield lc
            raise RuntimeError("fim do uso")
    pids, temp_dir = lc.pids, lc.temp_dir
    deadline = time.monotonic() + 10
    while (system.alive(pids) or with_in_cmdline(temp_dir)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not system.alive(pids), f"processos do cluster ainda vivos: {system.alive(pids)}"
    assert not with_in_cmdline(temp_dir)
    assert not Path(temp_dir).exists()
    lc.stop()  # idempotente


class Shared:
    """Um recurso de verdade dividido pelos testes, que sobe no primeiro atributo lido:
    ``run()`` é um gerador que o sobe (``next``) e o para (o ``next`` seguinte)."""

    def __init__(self, run) -> None:
        self._make_run = run
        self._run = None
        self._value = None

    def start(self) -> Shared:
        if self._value is None:
            self._run = self._make_run()
            self._value = next(self._run)
        return self

    def __getattr__(self, name: str):
        return getattr(self.start()._value, name)

    @property
    def running(self) -> bool:
        return self._value is not None

    def stop(self) -> None:
        run, self._run, self._value = self._run, None, None
        if run is not None:
            with contextlib.suppress(StopIteration):
                next(run)


def _run_local_ray():
    """O Ray local dos testes de unidade com Ray (2 CPUs, sem painel), como o das lições."""
    import ray

    from labutils import raytools

    yield raytools.init_ray(num_cpus=2, dashboard=False)
    ray.shutdown()


def _shared(request, name: str, run) -> Shared:
    return request.config.stash.setdefault(_SHARED, {}).setdefault(name, Shared(run))


@pytest.fixture(scope="session")
def local_cluster(request) -> Shared:
    """O cluster local dos testes (principal + 2 workers, 1 CPU cada, com painel; subir custa
    ~25 s), dividido pelos testes dos arquivos que o usam; nenhum teste o para."""
    return _shared(request, "local_cluster", _run_cluster)


@pytest.fixture(scope="session")
def local_ray(request) -> Shared:
    """O Ray local dos testes (``init_ray(num_cpus=2, dashboard=False)``), um só para os arquivos
    que o usam (uma partida, não uma por arquivo); nenhum teste o para."""
    return _shared(request, "local_ray", _run_local_ray).start()  # os testes usam o ``ray``


def pytest_collection_modifyitems(config, items):
    config.stash[_FILES] = {
        name: {i.path for i in items if name in getattr(i, "fixturenames", ())}
        for name in ("local_cluster", "local_ray")
    }


def pytest_runtest_teardown(item, nextitem):
    """Para cada recurso dividido se o próximo teste deste processo não é de um arquivo que o usa
    (ou não há próximo)."""
    for name, shared in item.config.stash.get(_SHARED, {}).items():
        files = item.config.stash.get(_FILES, {}).get(name, set())
        if shared.running and (nextitem is None or nextitem.path not in files):
            shared.stop()


@pytest.hookimpl(tryfirst=True)  # antes da busca de processos deixados para trás
def pytest_sessionfinish(session):
    """Uma sessão interrompida (``-x``, Ctrl+C) também para os recursos divididos."""
    for shared in session.config.stash.get(_SHARED, {}).values():
        shared.stop()
