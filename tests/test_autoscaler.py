"""O autoscaler de verdade numa máquina só: os nós sobem com a demanda e voltam depois da
ociosidade (``labutils.cluster.autoscaler``, lição 04). Para só o que iniciou."""

from __future__ import annotations

import time

import psutil
import pytest

from labutils.cluster import autoscaler

#: limite da demonstração inteira (subir o nó principal, crescer, voltar, parar)
LIMIT_S = 150


def _alive(pids: set[int]) -> set[int]:
    alive = set()
    for pid in pids:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                alive.add(pid)
        except psutil.NoSuchProcess:
            pass
    return alive


def test_autoscaling_config_has_the_local_provider_and_the_idle_timeout():
    config = autoscaler.autoscaling_config("127.0.0.1:1", max_workers=3, idle_timeout_s=6)
    assert config["provider"]["type"] == "fake_multinode"
    assert config["provider"]["gcs_address"] == "127.0.0.1:1"
    assert config["available_node_types"][autoscaler.WORKER_TYPE]["max_workers"] == 3
    assert config["idle_timeout_minutes"] == pytest.approx(0.1)


@pytest.mark.slow
def test_nodes_go_up_with_demand_and_back_down_when_idle():
    start = time.monotonic()
    run = autoscaler.autoscaling_demo(max_workers=2, timeout_s=LIMIT_S, verbose=False)
    elapsed = time.monotonic() - start
    print(
        f"autoscaler: nó principal em {run.head_start_s:.0f} s, 1º worker em "
        f"{run.first_scale_up_s:.0f} s, volta a 1 nó em {run.scale_down_s:.0f} s, "
        f"total {elapsed:.0f} s, pico {run.peak} nós"
    )
    assert run.samples[0][1] == 1, "a demonstração deveria começar só com o nó principal"
    assert run.peak >= 2, f"o autoscaler não adicionou nós: {run.samples}"
    assert run.final == 1, f"os nós ociosos não foram removidos: {run.samples}"
    assert run.task_nodes and len(run.task_nodes) >= 1
    assert elapsed < LIMIT_S + 30
    # nada do que a demonstração iniciou ficou vivo (nó principal e os nós do autoscaler)
    assert len(run.pids) > 5, run.pids
    deadline = time.monotonic() + 10
    while _alive(run.pids) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not _alive(run.pids), f"processos da demonstração ainda vivos: {_alive(run.pids)}"
