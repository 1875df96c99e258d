"""Cluster Ray: erros rápidos em português, as portas da sala e o cluster local de verdade (com
``ray start``; parado só pelo que ele iniciou, nunca ``ray stop``)."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import psutil
import pytest

from labutils import cluster, config, system
from labutils.cluster import ClusterError, LocalCluster, classroom, local
from labutils.cluster.__main__ import main as cli_main


def test_port_in_use_fails_fast_in_portuguese():
    with socket.socket() as busy:
        busy.bind(("0.0.0.0", 0))
        busy.listen()
        port = busy.getsockname()[1]
        start = time.monotonic()
        with pytest.raises(ClusterError, match="já está em uso"):
            cluster.start_head(port=port, dashboard=False)
        with pytest.raises(ClusterError, match="já está em uso"):
            LocalCluster(num_workers=1, dashboard=True, dashboard_port=port)
        assert time.monotonic() - start < 10


def test_join_to_a_head_that_is_not_there_fails_fast_in_portuguese(capsys):
    start = time.monotonic()
    assert cli_main(["join", f"127.0.0.1:{system.free_port()}"]) == 2  # ninguém escuta ali
    assert time.monotonic() - start < 10
    assert "Erro: Ninguém atende no endereço do nó principal" in capsys.readouterr().out


def test_node_that_fails_to_start_gives_clear_error(monkeypatch):
    for module in (classroom, local):
        monkeypatch.setattr(module, "ray_executable", lambda: "/bin/false")
    monkeypatch.setattr(local, "ensure_auth_token", lambda: "teste")
    lc = LocalCluster(num_workers=1, verbose=False)
    start = time.monotonic()
    with pytest.raises(ClusterError, match="Não consegui iniciar o nó principal"):
        lc.start()
    assert time.monotonic() - start < 10
    assert not system.alive(lc.pids)
    assert not Path(lc.temp_dir).exists()


@pytest.mark.slow
def test_token_auth_is_on_and_cluster_is_private(local_cluster):
    # todo processo do cluster roda com RAY_AUTH_MODE=token e esconde a GPU de quem não a pede
    # (os agentes renomeados com setproctitle não expõem mais o ambiente em /proc: ficam de fora)
    envs = []
    for pid in local_cluster.pids:
        try:
            environ = psutil.Process(pid).environ()
        except psutil.Error:
            continue
        if environ:
            envs.append((environ.get("RAY_AUTH_MODE"), environ.get(config.HIDE_GPUS_ENV)))
    assert envs and set(envs) == {("token", "1")}
    # e não virou "o último cluster" ao qual um ray.init() qualquer se conectaria
    default = Path("/tmp/ray/ray_current_cluster")
    if default.exists():
        assert str(local_cluster.port) not in default.read_text()


def test_the_ports_command_prints_every_port_that_start_head_fixes(capsys):
    """Uma fonte só: cada porta de ``CLASSROOM_PORTS`` impressa e passada ao ``ray start``."""
    assert cli_main(["ports"]) == 0
    table = capsys.readouterr().out
    cmd = " ".join(classroom.head_command())
    for port in cluster.CLASSROOM_PORTS:
        assert f"| {port.first}" in table, port
        if port.flag:
            assert f"{port.flag}={port.first}" in cmd, port
        if port.last_flag:
            assert f"{port.last_flag}={port.last}" in cmd, port
