"""A configuração do autoscaler (``labutils.cluster.autoscaler``).

A demonstração de verdade (o nó principal sozinho, workers criados com a demanda e removidos
depois da ociosidade, nada deixado vivo) roda na lição 04, que afirma cada um desses fatos nas
suas células: o nbval a executa no ``make test``. Rodá-la de novo aqui custaria ~45 s de CI.
"""

from __future__ import annotations

import pytest

from labutils.cluster import autoscaler


def test_autoscaling_config_has_the_local_provider_and_the_idle_timeout():
    config = autoscaler.autoscaling_config("127.0.0.1:1", max_workers=3, idle_timeout_s=6)
    assert config["provider"]["type"] == "fake_multinode"
    assert config["provider"]["gcs_address"] == "127.0.0.1:1"
    assert config["available_node_types"][autoscaler.WORKER_TYPE]["max_workers"] == 3
    assert config["idle_timeout_minutes"] == pytest.approx(0.1)
