"""Fixtures compartilhadas pelos testes de ``tests/``."""

from __future__ import annotations

import time
from pathlib import Path

import psutil
import pytest


def _with_temp_dir(temp_dir: str) -> list[int]:
    found = []
    for proc in psutil.process_iter(["pid", "cmdline"]):
        try:
            if temp_dir in " ".join(proc.info["cmdline"] or []):
                found.append(proc.pid)
        except psutil.Error:
            pass
    return found


@pytest.fixture(scope="session")
def local_cluster():
    """Um cluster local de verdade para a sessão inteira: nó principal + 2 workers (1 CPU cada),
    com painel. Subir um custa ~25 s em 2 núcleos; ``test_cluster.py`` e
    ``test_cluster_security.py`` o dividem. O último teste deste o para de propósito (um nó
    principal que some): os arquivos rodam em ordem alfabética, um logo depois do outro (o cluster
    ocioso não fica no ar durante o resto da suíte), e nenhum teste depois dele o usa.

    No fim, o corpo do ``with`` termina com uma exceção de propósito: o cluster precisa parar
    mesmo assim, sem deixar nenhum processo nem a sua pasta temporária para trás.
    """
    from labutils import system
    from labutils.cluster import LocalCluster

    with pytest.raises(RuntimeError, match="fim da sessão"):
        with LocalCluster(num_workers=2, cpus_per_node=1, dashboard=True, verbose=False) as lc:
            assert len(system.alive(lc.pids)) >= 9  # 3 × (`ray start`, raylet, ...) + gcs_server
            yield lc
            raise RuntimeError("fim da sessão")
    pids, temp_dir = lc.pids, lc.temp_dir
    deadline = time.monotonic() + 10
    while (system.alive(pids) or _with_temp_dir(temp_dir)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not system.alive(pids), f"processos do cluster ainda vivos: {system.alive(pids)}"
    assert not _with_temp_dir(temp_dir)
    assert not Path(temp_dir).exists()
    lc.stop()  # idempotente
