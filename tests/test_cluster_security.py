"""Segurança por padrão: painel e API de jobs só em ``localhost``, token ligado em cada porta de
entrada, e quem não tem o token, ou tem o errado, recusado depressa."""

from __future__ import annotations

import socket
import stat
import subprocess
import sys
import time
import urllib.error
import urllib.request

import psutil
import pytest
import ray

from labutils import cluster, config, raytools, system
from labutils.cluster import base, classroom, network
from labutils.cluster.__main__ import main as cli_main


@pytest.fixture
def captured(monkeypatch):
    """``start_head``/``join`` sem iniciar nada: guarda o comando e o ambiente que usariam."""
    calls = []

    def fake_run(cmd, **kwargs):
        calls.append({"cmd": cmd, "env": config.ray_env()})
        return subprocess.CompletedProcess(cmd, 0, "", "")

    monkeypatch.setattr(classroom, "run_ray", fake_run)
    monkeypatch.setattr(classroom, "ensure_auth_token", lambda **kw: "~/.ray/auth_token")
    monkeypatch.setattr(classroom, "require_free_port", lambda port, what: None)
    monkeypatch.setattr(classroom, "check_reachable", lambda address: None)
    return calls


def _dashboard_host(cmd):
    hosts = [part.split("=", 1)[1] for part in cmd if part.startswith("--dashboard-host=")]
    assert len(hosts) == 1, cmd
    return hosts[0]


def test_the_dashboard_is_opened_to_the_network_only_when_asked_and_with_a_warning(
    captured, capsys
):
    assert cli_main(["start-head"]) == 0
    assert _dashboard_host(captured[-1]["cmd"]) == "127.0.0.1"
    assert "ATENÇÃO" not in capsys.readouterr().out
    cluster.start_head(dashboard_host="0.0.0.0")
    assert _dashboard_host(captured[-1]["cmd"]) == "0.0.0.0"
    assert "ATENÇÃO: painel aberto para toda a rede" in capsys.readouterr().out


@pytest.mark.parametrize("command", [["start-head"], ["join", "10.0.0.1:6379"]])
def test_node_processes_get_token_auth_even_if_the_shell_has_none(captured, monkeypatch, command):
    monkeypatch.delenv("RAY_AUTH_MODE", raising=False)
    assert cli_main(command) == 0
    assert captured[-1]["env"]["RAY_AUTH_MODE"] == "token"


def _assert_private_dashboard(url: str, port: int) -> None:
    """A página abre, a API (os jobs: por onde o ShadowRay executava código) exige o token, e a
    porta do painel só escuta no loopback."""
    with urllib.request.urlopen(url, timeout=10) as resp:
        assert resp.status == 200
    for path in ("/api/version", "/api/jobs/"):
        with pytest.raises(urllib.error.HTTPError) as denied:
            urllib.request.urlopen(url + path, timeout=10)
        assert denied.value.code == 401, path
    token = {"Authorization": f"Bearer {cluster.auth_token()}"}
    request = urllib.request.Request(url + "/api/version", headers=token)
    with urllib.request.urlopen(request, timeout=10) as resp:
        assert resp.status == 200 and b"ray_version" in resp.read()
    listening = {
        conn.laddr.ip
        for conn in psutil.net_connections(kind="inet")
        if conn.status == psutil.CONN_LISTEN and conn.laddr.port == port
    }
    assert listening and listening <= network.LOOPBACK, f"painel exposto em {listening}"


@pytest.mark.slow
def test_the_dashboard_of_the_local_cluster_is_private(local_cluster):
    _assert_private_dashboard(local_cluster.dashboard_url, local_cluster.dashboard_port)


@pytest.mark.slow
def test_local_ray_of_the_notebooks_keeps_dashboard_private_and_token_on():
    """O Ray local que os notebooks iniciam (``init_ray``), que também tem painel."""
    ctx = raytools.init_ray(num_cpus=1)
    try:
        port = int(ctx.dashboard_url.rsplit(":", 1)[1])
        _assert_private_dashboard("http://" + ctx.dashboard_url, port)
    finally:
        ray.shutdown()


@pytest.mark.parametrize("via_env", [True, False])
def test_an_existing_token_file_becomes_readable_only_by_its_owner(tmp_path, monkeypatch, via_env):
    monkeypatch.delenv("RAY_AUTH_TOKEN", raising=False)
    if via_env:
        token = tmp_path / "token_da_aula"
        monkeypatch.setenv("RAY_AUTH_TOKEN_PATH", str(token))
    else:  # o lugar padrão, ~/.ray/auth_token
        monkeypatch.delenv("RAY_AUTH_TOKEN_PATH", raising=False)
        monkeypatch.setenv("HOME", str(tmp_path))
        token = tmp_path / ".ray" / "auth_token"
        token.parent.mkdir()
    token.write_text("segredo\n")
    token.chmod(0o644)
    assert base.ensure_auth_token() == str(token)
    assert stat.S_IMODE(token.stat().st_mode) == 0o600
    assert cluster.auth_token() == "segredo"


def test_the_cli_warns_in_portuguese_when_auth_is_disabled(monkeypatch, capsys):
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    assert cli_main(["join", "servidor-sem-porta"]) == 2
    out = capsys.readouterr().out
    assert out.startswith("ATENÇÃO: RAY_AUTH_MODE=disabled"), out
    assert "DESLIGADA" in out
    monkeypatch.setenv("RAY_AUTH_MODE", "token")
    cli_main(["join", "servidor-sem-porta"])
    assert "DESLIGADA" not in capsys.readouterr().out


def test_silent_address_fails_within_the_connect_timeout():
    """Um IP que não responde nem recusa (RFC 5737): espera no máximo o prazo."""
    start = time.monotonic()
    with pytest.raises(ConnectionError, match="Ninguém atende"):
        raytools.check_reachable("192.0.2.123:6379", timeout=1.0)
    assert time.monotonic() - start < 3


@pytest.fixture(scope="module")
def running(local_cluster):
    """O cluster local da sessão (``tests/conftest.py``), com processos de trabalho no ar."""
    ray.init(address=local_cluster.address, log_to_driver=False)
    try:  # processos de trabalho também abrem portas: que existam durante a medida
        ray.get([_node_of.remote() for _ in range(2)], timeout=120)
    finally:
        ray.shutdown()
    return local_cluster


@ray.remote(num_cpus=1)
def _node_of():
    return ray.get_runtime_context().get_node_id()


@pytest.mark.slow
def _fixed_ports(commands: list[list[str]]) -> dict[str, set[int]]:
    """As portas que os ``ray start`` fixaram, por opção (``--worker-port-list`` tem várias)."""
    fixed: dict[str, set[int]] = {}
    for arg in (a for cmd in commands for a in cmd if a.startswith("--") and "=" in a):
        flag, value = arg.split("=", 1)
        if "port" in flag and value.replace(",", "").isdigit():
            fixed.setdefault(flag, set()).update(map(int, value.split(",")))
    return fixed


def test_local_cluster_listens_off_loopback_only_where_ray_offers_no_choice(running):
    """Fora do loopback, cada porta é de um processo conhecido e, se uma opção do ``ray start``
    a fixa, é a que o cluster passou nessa opção: nenhuma porta sorteada fora da lista."""
    found = network.listeners(running.pids)
    assert found, "nenhuma porta escutando? o cluster não está no ar"
    fixed = _fixed_ports([node.args for node in running._nodes])
    fixed["--port"] = {running.port}
    unexplained = [
        i
        for i in found
        if i.ip not in network.LOOPBACK
        and (i.reason is None or (i.flags and not any(i.port in fixed.get(f, ()) for f in i.flags)))
    ]
    assert not unexplained, f"portas abertas para a rede sem motivo conhecido: {unexplained}"


def test_a_driver_with_the_wrong_token_is_refused_fast_in_portuguese(running):
    """``init_ray`` com o token errado: recusado em segundos, com o porquê (o ``ray.init`` sozinho
    tenta por ~20 s e termina num traceback de dentro do Ray)."""
    code = (
        "from labutils.raytools import init_ray\n"
        f"init_ray({running.address!r})\n"
        "print('CONECTOU')\n"
    )
    env = config.ray_env({"RAY_AUTH_TOKEN": "token-errado-" + "0" * 20})
    start = time.monotonic()
    done = system.run([sys.executable, "-c", code], timeout=60, env=env, check=False)
    elapsed = time.monotonic() - start
    out = done.stdout + done.stderr
    assert done.returncode != 0 and "CONECTOU" not in out, out[-2000:]
    assert "recusou o token desta máquina (a variável RAY_AUTH_TOKEN)" in out, out[-2000:]
    assert "gcs_client" not in out, "o ray.init chegou a tentar conectar"
    assert elapsed < 15, f"o token errado levou {elapsed:.1f} s para ser recusado"


def _join_cli(address: str, home, extra_env: dict[str, str]) -> tuple[str, float, int]:
    """``python -m labutils.cluster join`` como numa máquina de aluno com ``HOME`` próprio."""
    env = {k: v for k, v in config.ray_env().items() if not k.startswith("RAY_AUTH_TOKEN")}
    env.update(HOME=str(home), **extra_env)
    start = time.monotonic()
    cmd = [sys.executable, "-m", "labutils.cluster", "join", address]
    done = system.run(cmd, timeout=60, env=env, check=False)
    return done.stdout + done.stderr, time.monotonic() - start, done.returncode


def test_join_without_the_head_token_stops_at_once_and_creates_none(tmp_path):
    """O ``join`` antes de copiar o token: mensagem na hora, e nenhum token novo (um gerado ali só
    seria recusado ~20 s depois, com traceback)."""
    with socket.socket() as head:  # só precisa atender na porta: o token é conferido antes
        head.bind(("127.0.0.1", 0))
        head.listen()
        out, _, code = _join_cli(f"127.0.0.1:{head.getsockname()[1]}", tmp_path, {})
    assert code == 2, out
    assert "ainda não tem o token" in out and "~/.ray/auth_token" in out, out
    assert "Traceback" not in out and "$ ray start" not in out, out
    assert not (tmp_path / ".ray").exists(), "o join criou um token na máquina do aluno"


@pytest.mark.slow
def test_join_with_a_wrong_token_is_refused_fast_in_portuguese(running, tmp_path):
    wrong = tmp_path / "token_errado"
    wrong.write_text("token-errado-" + "0" * 20)
    out, elapsed, code = _join_cli(running.address, tmp_path, {"RAY_AUTH_TOKEN_PATH": str(wrong)})
    assert code == 2, out
    assert "recusou o token desta máquina" in out, out
    assert "Traceback" not in out and "$ ray start" not in out, out
    assert elapsed < 20, f"o token errado levou {elapsed:.1f} s para ser recusado"
