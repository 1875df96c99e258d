"""Segurança por padrão: painel e API de jobs só em ``localhost`` e autenticação por token ligada.

``tests/test_cluster.py`` já confere o cluster local no ar (processos com ``RAY_AUTH_MODE=token``,
API recusada sem token, painel escutando só em 127.0.0.1). Aqui: os **padrões** de cada porta de
entrada (``start_head``, a linha de comando, o ambiente dos nós) e o Ray local dos notebooks
(``raytools.init_ray``), que também tem painel.
"""

from __future__ import annotations

import urllib.error
import urllib.request

import psutil
import pytest

from labutils import cluster, config, raytools
from labutils.cluster import classroom
from labutils.cluster.__main__ import main as cli_main


@pytest.fixture
def captured(monkeypatch):
    """``start_head``/``join`` sem iniciar nada: guarda o comando e o ambiente que usariam."""
    calls = []

    def fake_run(cmd, **kwargs):
        calls.append({"cmd": cmd, "env": config.ray_env()})
        return None

    monkeypatch.setattr(classroom, "run_ray", fake_run)
    monkeypatch.setattr(classroom, "ensure_auth_token", lambda: "~/.ray/auth_token")
    monkeypatch.setattr(classroom, "require_free_port", lambda port, what: None)
    monkeypatch.setattr(classroom, "check_head_reachable", lambda address: None)
    return calls


def _dashboard_host(cmd):
    hosts = [part.split("=", 1)[1] for part in cmd if part.startswith("--dashboard-host=")]
    assert len(hosts) == 1, cmd
    return hosts[0]


def test_start_head_binds_the_dashboard_to_localhost_by_default(captured):
    cluster.start_head()
    assert _dashboard_host(captured[-1]["cmd"]) == "127.0.0.1"


def test_cli_start_head_binds_the_dashboard_to_localhost_by_default(captured):
    assert cli_main(["start-head"]) == 0
    assert _dashboard_host(captured[-1]["cmd"]) == "127.0.0.1"


def test_opening_the_dashboard_to_the_network_only_when_asked_and_with_a_warning(captured, capsys):
    cluster.start_head()
    assert "ATENÇÃO" not in capsys.readouterr().out
    cluster.start_head(dashboard_host="0.0.0.0")
    assert _dashboard_host(captured[-1]["cmd"]) == "0.0.0.0"
    assert "ATENÇÃO: painel aberto para toda a rede" in capsys.readouterr().out


@pytest.mark.parametrize("command", [["start-head"], ["join", "10.0.0.1:6379"]])
def test_node_processes_get_token_auth_even_if_the_shell_has_none(captured, monkeypatch, command):
    monkeypatch.delenv("RAY_AUTH_MODE", raising=False)
    assert cli_main(command) == 0
    assert captured[-1]["env"]["RAY_AUTH_MODE"] == "token"


def test_local_cluster_has_no_dashboard_unless_asked():
    assert cluster.LocalCluster().dashboard_url is None
    assert cluster.LocalCluster(dashboard=True).dashboard_url.startswith("http://127.0.0.1:")


def test_init_ray_asks_for_a_local_dashboard_on_localhost(monkeypatch):
    import ray

    seen = {}
    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "init", lambda **kwargs: seen.update(kwargs))
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    raytools.init_ray()
    assert seen["address"] == "local" and seen["dashboard_host"] == "127.0.0.1"


@pytest.mark.slow
def test_local_ray_of_the_notebooks_keeps_dashboard_private_and_token_on():
    """O Ray local que os notebooks iniciam: painel só em 127.0.0.1, API de jobs exige token."""
    import ray

    ctx = raytools.init_ray(num_cpus=1)
    try:
        url = "http://" + ctx.dashboard_url
        port = int(ctx.dashboard_url.rsplit(":", 1)[1])
        for path in ("/api/version", "/api/jobs/"):
            with pytest.raises(urllib.error.HTTPError) as denied:
                urllib.request.urlopen(url + path, timeout=10)
            assert denied.value.code == 401, path
        token = {"Authorization": f"Bearer {cluster.auth_token()}"}
        with urllib.request.urlopen(
            urllib.request.Request(url + "/api/version", headers=token), timeout=10
        ) as resp:
            assert resp.status == 200
        listening = {
            conn.laddr.ip
            for conn in psutil.net_connections(kind="inet")
            if conn.status == psutil.CONN_LISTEN and conn.laddr.port == port
        }
        assert listening and listening <= {"127.0.0.1", "::1"}, listening
    finally:
        ray.shutdown()
