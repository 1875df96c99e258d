"""A escala: ``full`` por padrão, ``smoke`` pelo ambiente, e ``pick`` segue a escala; o formato
de máquina simulado (``LABUTILS_CPUS``, ``LABUTILS_OBJECT_STORE_MB``)."""

import json
import os
import sys

import pytest

from labutils import system
from labutils.config import SCALE_ENV, current_scale, pick, sizes


def test_the_default_is_full_and_the_environment_picks_smoke(monkeypatch):
    monkeypatch.delenv(SCALE_ENV, raising=False)
    assert current_scale() == "full" and pick(full=200, smoke=10) == 200
    assert not sizes().is_smoke
    monkeypatch.setenv(SCALE_ENV, " Smoke ")  # maiúsculas e espaços não importam
    assert sizes().is_smoke and pick(full=200, smoke=10) == 10


def test_a_machine_shape_reaches_ray_s_own_override_but_not_the_ray_start_nodes(monkeypatch):
    from labutils import config

    monkeypatch.setenv("LABUTILS_CPUS", "16")
    monkeypatch.setenv("LABUTILS_OBJECT_STORE_MB", "2048")
    shape = config.machine_shape()
    assert shape == {"cpus": 16, "object_store_mb": 2048}
    assert json.loads(config.ray_resources_override(shape)) == {
        "CPU": 16, "object_store_memory": 2048 * 2**20
    }  # fmt: skip
    monkeypatch.setenv(config.RAY_RESOURCES_ENV, config.ray_resources_override(shape))
    assert config.RAY_RESOURCES_ENV not in config.ray_env()  # o LocalCluster fica com 1 CPU/nó
    monkeypatch.setenv("LABUTILS_CPUS", "0")
    with pytest.raises(ValueError, match="LABUTILS_CPUS='0'"):
        config.machine_shape()


@pytest.mark.timeout(120)
def test_a_plain_ray_init_declares_the_simulated_shape():
    """Como a lição 01: ``import labutils`` e um ``ray.init()`` sem argumentos."""
    code = (
        "import labutils, ray\n"
        "ray.init(log_to_driver=False)\n"
        "r = ray.cluster_resources()\n"
        "print(int(r['CPU']), int(r['object_store_memory'] / 2**20))\n"
        "ray.shutdown()\n"
    )
    env = {**os.environ, "LABUTILS_CPUS": "16", "LABUTILS_OBJECT_STORE_MB": "150"}
    env.pop("RAY_OVERRIDE_RESOURCES", None)
    done = system.run([sys.executable, "-c", code], timeout=100, env=env)
    assert done.stdout.split()[-2:] == ["16", "150"], done.stdout + done.stderr
