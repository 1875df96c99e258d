"""Fixtures compartilhadas pelos testes de ``tests/``."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from processes import with_in_cmdline

#: o cluster local da sessão, enquanto no ar, e o último teste coletado que o usa
_CLUSTER = pytest.StashKey[object]()
_LAST_USER = pytest.StashKey[str]()


@pytest.fixture(scope="session")
def local_cluster(request):
    """Um cluster local de verdade para a sessão inteira: nó principal + 2 workers (1 CPU cada),
    com painel. Subir um custa ~25 s em 2 núcleos; os testes de ``test_browser.py``,
    ``test_cluster.py`` e ``test_cluster_security.py`` o dividem. Nenhum deles o para: ele para
    logo depois do último teste coletado que o usa (:func:`pytest_runtest_teardown`), seja qual
    for a ordem dos arquivos, e não fica ocioso no ar durante o resto da suíte.

    No fim, o corpo do ``with`` termina com uma exceção de propósito: o cluster precisa parar
    mesmo assim, sem deixar nenhum processo nem a sua pasta temporária para trás.
    """
    from labutils import system
    from labutils.cluster import LocalCluster

    with pytest.raises(RuntimeError, match="fim da sessão"):
        with LocalCluster(num_workers=2, cpus_per_node=1, dashboard=True, verbose=False) as lc:
            assert len(system.alive(lc.pids)) >= 9  # 3 × (`ray start`, raylet, ...) + gcs_server
            request.config.stash[_CLUSTER] = lc
            yield lc
            raise RuntimeError("fim da sessão")
    pids, temp_dir = lc.pids, lc.temp_dir
    deadline = time.monotonic() + 10
    while (system.alive(pids) or with_in_cmdline(temp_dir)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not system.alive(pids), f"processos do cluster ainda vivos: {system.alive(pids)}"
    assert not with_in_cmdline(temp_dir)
    assert not Path(temp_dir).exists()
    lc.stop()  # idempotente


@pytest.hookimpl(trylast=True)  # a ordem final, depois de quem reordena os testes
def pytest_collection_modifyitems(config, items):
    users = [item.nodeid for item in items if "local_cluster" in getattr(item, "fixturenames", ())]
    if users:
        config.stash[_LAST_USER] = users[-1]


def pytest_runtest_teardown(item, nextitem):
    """Para o cluster local da sessão depois do último teste que o usa."""
    if item.nodeid == item.config.stash.get(_LAST_USER, None):
        cluster = item.config.stash.get(_CLUSTER, None)
        if cluster is not None:
            cluster.stop()
