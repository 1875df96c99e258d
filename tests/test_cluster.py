"""Cluster Ray: erros rápidos em português, as portas da sala e o cluster local de verdade (com
``ray start``; parado só pelo que ele iniciou, nunca ``ray stop``)."""

from __future__ import annotations

import contextlib
import json
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from labutils import cluster, config, doctor, raytools, system
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


def test_start_head_fixes_every_port_ray_start_would_pick_and_the_ports_command_lists_them(
    capsys,
):
    """Cada opção de porta do próprio ``ray start`` (a lista vem do Ray, não da nossa tabela)
    tem valor fixo no comando do nó principal, e o ``ports`` imprime cada um desses números."""
    from ray.scripts.scripts import start

    # as opções escondidas (--redis-shard-ports, do Redis que o Ray não usa mais) ficam de fora
    ray_port_options = {o for p in start.params if not p.hidden for o in p.opts if "port" in o}
    ray_port_options -= {"--worker-port-list"}  # a alternativa a --min/--max-worker-port
    fixed = dict(arg.split("=", 1) for arg in classroom.head_command()[2:] if "=" in arg)
    assert ray_port_options <= set(fixed), ray_port_options - set(fixed)
    assert cli_main(["ports"]) == 0
    table = capsys.readouterr().out
    for option in ray_port_options - {"--dashboard-port"}:  # o painel fica em 127.0.0.1
        assert f"| {fixed[option]}" in table or f"–{fixed[option]} |" in table, option


HEAD_VERSIONS = {"ray_version": "2.60.0", "python_version": "3.12.8"}


@pytest.mark.parametrize(
    ("here", "level", "refused_with"),
    [
        ({"ray_version": "2.60.0", "python_version": "3.12.8"}, "patch", None),
        ({"ray_version": "2.60.0", "python_version": "3.12.3"}, "minor", None),
        ({"ray_version": "2.60.0", "python_version": "3.12.3"}, "patch", "Python 3.12.8"),
        ({"ray_version": "2.60.0", "python_version": "3.13.0"}, "minor", "PYTHON=python3.12"),
        ({"ray_version": "2.61.0", "python_version": "3.12.8"}, "minor", "Ray 2.60.0"),
    ],
)
def test_the_version_check_follows_the_match_level(here, level, refused_with):
    problem = raytools.version_mismatch(HEAD_VERSIONS, here, level)
    if refused_with is None:
        assert problem is None
    else:
        assert refused_with in problem and here["python_version"] in problem


class FakeHead:
    """O ``system.run`` de um nó principal com ``HEAD_VERSIONS``: a sonda do GCS responde com
    elas e o ``ray start`` só é anotado (com o ambiente)."""

    def __init__(self):
        self.ray_starts: list[tuple[list[str], dict]] = []

    def __call__(self, cmd, *, timeout, env=None, check=True, **kwargs):
        if cmd[1:2] == ["-c"]:  # a sonda do nó principal
            return subprocess.CompletedProcess(cmd, 0, json.dumps(HEAD_VERSIONS) + "\n", "")
        self.ray_starts.append((list(cmd), dict(env or {})))
        return subprocess.CompletedProcess(cmd, 0, "", "")


@pytest.fixture
def fake_head(monkeypatch):
    head = FakeHead()
    monkeypatch.setattr(system, "run", head)
    for module in (raytools, classroom):
        monkeypatch.setattr(module, "check_reachable", lambda address: None)
    monkeypatch.setattr(classroom, "ensure_auth_token", lambda generate: "teste")
    return head


def test_join_and_init_ray_refuse_another_python_in_seconds(fake_head, monkeypatch, capsys):
    monkeypatch.setattr(
        raytools, "local_versions", lambda: {"ray_version": "2.60.0", "python_version": "3.13.1"}
    )
    assert cli_main(["join", "10.0.0.1:6379"]) == 2
    out = capsys.readouterr().out
    assert "Python 3.12.8" in out and "PYTHON=python3.12" in out and "Traceback" not in out
    with pytest.raises(ConnectionError, match="PYTHON=python3.12"):
        raytools.init_ray("10.0.0.1:6379")
    assert fake_head.ray_starts == []  # recusado antes de qualquer `ray start`/`ray.init`


@pytest.mark.parametrize("macos", [True, False])
def test_a_macos_node_joins_with_ray_s_flag_and_a_warning(fake_head, monkeypatch, capsys, macos):
    monkeypatch.setattr(raytools, "local_versions", lambda: dict(HEAD_VERSIONS))
    monkeypatch.setattr(config, "is_macos", lambda: macos)
    monkeypatch.delenv(config.MACOS_CLUSTER_ENV, raising=False)
    assert cli_main(["join", "10.0.0.1:6379"]) == 0
    [(cmd, env)] = fake_head.ray_starts
    assert cmd[1:3] == ["start", "--address=10.0.0.1:6379"]
    assert (env.get(config.MACOS_CLUSTER_ENV) == "1") is macos
    assert ("macOS" in capsys.readouterr().out) is macos
    assert env[config.PYTHON_MATCH_ENV] == "minor"


def test_the_doctor_shows_the_head_s_versions_beside_the_local_ones(fake_head, monkeypatch):
    here = {"ray_version": "2.60.0", "python_version": "3.12.3"}
    monkeypatch.setattr(raytools, "local_versions", lambda: here)
    [row] = doctor.check_cluster("10.0.0.1:6379")
    assert row.status == doctor.OK and "3.12.8" in row.detail and "3.12.3" in row.detail
    here["python_version"] = "3.11.2"
    [row] = doctor.check_cluster("10.0.0.1:6379")
    assert row.status == doctor.FAIL and "PYTHON=python3.12" in row.remedy
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    assert doctor.check_cluster() == []  # sem cluster, nenhuma linha


#: Um processo que inicia um LocalCluster e sai sem stop(): normalmente ou esperando um SIGKILL.
#: ``sem`` desliga um dos mecanismos de limpeza (a prova de que o teste pega a falta dele).
_PARENT = """
import atexit, sys, time
from labutils.cluster import LocalCluster, local
end, without = sys.argv[1], sys.argv[2]
if without == "atexit":
    local.atexit.register = lambda f: None
if without == "die_with_parent":
    local.die_with_parent = lambda: None
print(LocalCluster(num_workers=0, verbose=False).start().temp_dir, flush=True)
if end == "kill":
    time.sleep(600)
"""


def _processes_of(temp_dir: str) -> list[int]:
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        with contextlib.suppress(psutil.Error):
            if temp_dir in " ".join(proc.info["cmdline"] or []):
                found.append(proc.pid)
    return found


def orphans_after_the_parent_ends(without: str = "") -> dict[str, tuple[list[int], bool]]:
    """Para cada fim do processo que iniciou o cluster (sai normalmente; SIGKILL): os processos
    do cluster que sobraram e se o ``--temp-dir`` ficou."""
    parents = {
        end: subprocess.Popen(
            [sys.executable, "-c", _PARENT, end, without], text=True, stdout=subprocess.PIPE
        )  # fmt: skip
        for end in ("exit", "kill")
    }
    temp = {end: proc.stdout.readline().strip() for end, proc in parents.items()}
    parents["kill"].kill()
    for proc in parents.values():
        proc.wait(timeout=60)
    result = {}
    for end, temp_dir in temp.items():
        deadline = time.monotonic() + 10  # o kernel entrega o sinal de morte do pai em seguida
        while _processes_of(temp_dir) and time.monotonic() < deadline:
            time.sleep(0.2)
        left = _processes_of(temp_dir)
        system.kill_pids(left, wait_s=5)  # limpa o que o teste deixou, se algo falhou
        result[end] = (left, Path(temp_dir).exists())
        shutil.rmtree(temp_dir, ignore_errors=True)
    return result


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_a_local_cluster_ends_with_the_process_that_started_it():
    """Sem stop(): quem sai normalmente para o cluster e apaga o --temp-dir (atexit); quem
    morre de SIGKILL leva os nós junto (die_with_parent)."""
    ended = orphans_after_the_parent_ends()
    assert ended["exit"] == ([], False), ended
    assert ended["kill"][0] == [], ended


def test_stop_node_stops_one_live_worker_and_refuses_a_missing_one():
    lc = LocalCluster(num_workers=2, verbose=False)
    lc._workers = [system.spawn_group(["sleep", "60"]) for _ in range(2)]
    try:
        lc.stop_node(-1)
        assert lc._workers[1].poll() is not None and lc._workers[0].poll() is None
        with pytest.raises(ClusterError, match="1 vivo"):
            lc.stop_node(1)
    finally:
        for proc in lc._workers:
            system.kill_group(proc, grace=0)


@pytest.mark.timeout(30)
def test_check_head_says_at_once_that_the_head_is_gone():
    """Um nó principal de mentira (um processo e uma porta que o teste abriu): a conferência
    passa com os dois no ar e falha em segundos sem a porta (o GCS morreu e o ``ray start``
    ainda não percebeu), sem o processo, ou com o cluster parado — nunca espera o Ray."""
    lc = LocalCluster(num_workers=0, verbose=False)
    with pytest.raises(ClusterError):
        lc.check_head()  # ainda não iniciado
    heads = []
    try:
        for gone in ("port", "process"):
            head = system.spawn_group(["sleep", "60"])
            heads.append(head)
            gcs = socket.create_server((system.LOCALHOST, 0))
            lc._nodes, lc._head, lc.port = [head], (head, "/tmp/n0"), gcs.getsockname()[1]
            lc.check_head()
            if gone == "port":
                gcs.close()
            else:
                system.kill_group(head, grace=0)
            start = time.monotonic()
            with pytest.raises(ClusterError):
                lc.check_head()
            assert time.monotonic() - start < 5, gone
            gcs.close()
        lc._nodes.clear()  # o que stop() faz
        with pytest.raises(ClusterError):
            lc.check_head()
    finally:
        for proc in heads:
            system.kill_group(proc, grace=0)
