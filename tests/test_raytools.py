"""init_ray: um Ray local novo, reexecutável, que repassa a escala aos workers e só lhes mostra a
GPU que pediram; a tabela de nós."""

import ray

from labutils import raytools


def test_init_ray_is_rerunnable_and_workers_see_the_scale_and_no_gpu(local_ray, capsys):
    raytools.init_ray()  # de novo: sem "already initialized"
    assert "reaproveitando" in capsys.readouterr().out

    @ray.remote
    def seen_by_worker():
        import os

        return os.environ.get("LABUTILS_SCALE"), os.environ.get("CUDA_VISIBLE_DEVICES")

    # sem num_gpus, nenhuma GPU: o Ray 2.60, por padrão, deixaria todas visíveis (None)
    assert ray.get(seen_by_worker.remote()) == ("smoke", "")


def test_nodes_table_shows_the_local_head(local_ray):
    table = raytools.nodes_table()
    assert len(table) == 1 and bool(table["nó principal"].iloc[0]) and table["CPUs"].iloc[0] == 2


def test_wait_for_free_polls_until_the_need_is_covered_or_the_deadline(monkeypatch):
    """O 'cabem? espere as CPUs livres até um prazo' do plan_pool e do plan_workers."""
    import time

    reads = iter([{"CPU": 0.0}, {"CPU": 1.0}, {"CPU": 2.0, "GPU": 1.0}])
    monkeypatch.setattr(ray, "available_resources", lambda: next(reads, {"CPU": 2.0, "GPU": 1.0}))
    assert raytools.wait_for_free({"CPU": 2.0, "GPU": 1.0}, 5) == (True, {"CPU": 2.0, "GPU": 1.0})
    monkeypatch.setattr(ray, "available_resources", lambda: {"CPU": 1.0})
    start = time.monotonic()
    assert raytools.wait_for_free({"CPU": 2.0}, 0.5) == (False, {"CPU": 1.0})
    assert 0.4 < time.monotonic() - start < 2
    assert raytools.wait_for_free({"CPU": 1.0}, 0)[0]  # sem prazo: só a leitura de agora
