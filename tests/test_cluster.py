"""Cluster Ray real: nó principal + workers via `ray start`, token, painel, parada limpa.

Os testes marcados `slow` sobem processos `ray start` de verdade nesta máquina e param só os
que eles mesmos iniciaram (nunca `ray stop`, que derrubaria o Ray de outras sessões).
"""

from __future__ import annotations

import socket
import time
from pathlib import Path

import psutil
import pytest

from labutils import cluster, config, system
from labutils.cluster import ClusterError, LocalCluster, classroom, local
from labutils.cluster.__main__ import main as cli_main

REPO = Path(__file__).resolve().parents[1]


# ------------------------------------------------------------------ rápidos (sem cluster)


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


# ------------------------------------------------------------------ cluster real


# As tarefas da busca espalhadas por vários nós, com o mesmo MSE que no driver, são conferidas
# pelas asserções da própria lição 04 (num LocalCluster de 3 nós, em todo make test) e, em
# máquinas separadas, por tests/test_classroom_machines.py.


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


def ports_table() -> str:
    """A tabela (markdown) de ``CLASSROOM_PORTS``, a que a lição 04 e o README mostram."""
    lines = ["| porta (TCP) | para quê | em quais máquinas | opção do `ray start` |"]
    lines.append("| --- | --- | --- | --- |")
    for port in cluster.CLASSROOM_PORTS:
        label = str(port.first) if port.first == port.last else f"{port.first}–{port.last}"
        where = "nó principal" if port.head_only else "todas"
        flag = f"`{port.flag}`" if port.flag else "— (não se fixa)"
        flag += f" / `{port.last_flag}`" if port.last_flag else ""
        lines.append(f"| {label} | {port.what} | {where} | {flag} |")
    return "\n".join(lines)


def test_the_ports_table_of_lesson_04_and_the_readme_is_the_one_start_head_uses():
    """Uma fonte só: a tabela de portas do README e da lição 04 é ``CLASSROOM_PORTS``, e cada
    porta dela vira uma opção do ``ray start`` do nó principal."""
    import nbformat

    table = ports_table()
    lesson = nbformat.read(str(REPO / "notebooks" / "04_cluster_ray.ipynb"), as_version=4)
    assert any(table in c.source for c in lesson.cells if c.cell_type == "markdown")
    assert table in (REPO / "README.md").read_text(encoding="utf-8")
    cmd = " ".join(cluster.head_command())
    for port in [p for p in cluster.CLASSROOM_PORTS if p.flag]:
        assert f"{port.flag}={port.first}" in cmd, port
        if port.last_flag:
            assert f"{port.last_flag}={port.last}" in cmd, port


def test_the_local_cluster_does_not_take_the_classroom_ports():
    """Vários nós numa máquina: cada opção de porta aparece uma vez só, com a porta sorteada."""
    lc = LocalCluster(num_workers=1)
    lc.temp_dir = "/tmp/x"
    head = lc._node_command(0, "/tmp/x/n0")
    names = [part.split("=", 1)[0] for part in head if part.startswith("--") and "port" in part]
    assert len(names) == len(set(names)), f"opção de porta repetida: {head}"
    assert "--node-manager-port=6380" not in head
