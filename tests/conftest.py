"""Fixtures compartilhadas pelos testes de ``tests/``."""

from __future__ import annotations

import contextlib
import time
from pathlib import Path

import pytest
from processes import with_in_cmdline

#: o cluster local dos testes (um por processo do pytest)
_CLUSTER = pytest.StashKey["SharedCluster"]()
#: os arquivos com testes que usam o cluster local
_FILES = pytest.StashKey[set]()


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


class SharedCluster:
    """Um cluster local de verdade (principal + 2 workers, 1 CPU cada, com painel) dividido pelos
    testes de um arquivo (subir custa ~25 s): sobe no primeiro atributo lido."""

    def __init__(self) -> None:
        self._run = None
        self._cluster = None

    def __getattr__(self, name: str):
        if self._cluster is None:
            self._run = _run_cluster()
            self._cluster = next(self._run)
        return getattr(self._cluster, name)

    @property
    def running(self) -> bool:
        return self._cluster is not None

    def stop(self) -> None:
        run, self._run, self._cluster = self._run, None, None
        if run is not None:
            with contextlib.suppress(StopIteration):
                next(run)


@pytest.fixture(scope="session")
def local_cluster(request) -> SharedCluster:
    """O cluster local dos testes (:class:`SharedCluster`); nenhum teste o para."""
    return request.config.stash.setdefault(_CLUSTER, SharedCluster())


def pytest_collection_modifyitems(config, items):
    config.stash[_FILES] = {
        i.path for i in items if "local_cluster" in getattr(i, "fixturenames", ())
    }


def pytest_runtest_teardown(item, nextitem):
    """Para o cluster local se o próximo teste deste processo não o usa (ou não há próximo)."""
    cluster = item.config.stash.get(_CLUSTER, None)
    if cluster is not None and cluster.running:
        if nextitem is None or nextitem.path not in item.config.stash.get(_FILES, set()):
            cluster.stop()


@pytest.hookimpl(tryfirst=True)  # antes da busca de processos deixados para trás
def pytest_sessionfinish(session):
    """Uma sessão interrompida (``-x``, Ctrl+C) também para o cluster."""
    cluster = session.config.stash.get(_CLUSTER, None)
    if cluster is not None:
        cluster.stop()
