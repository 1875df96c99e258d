"""labutils.system: comandos com prazo, grupos de processos encerrados por inteiro, portas."""

import socket
import subprocess
import sys
import time

import pytest

from labutils import system


def test_run_returns_output_and_fails_in_portuguese_on_error(tmp_path):
    done = system.run([sys.executable, "-c", "print('oi')"], timeout=30)
    assert done.stdout.strip() == "oi" and done.returncode == 0
    here = system.run(
        [sys.executable, "-c", "import os; print(os.getcwd())"], timeout=30, cwd=tmp_path
    )
    assert here.stdout.strip() == str(tmp_path)
    with pytest.raises(system.CommandError, match=r"falhou \(código 3\)"):
        system.run([sys.executable, "-c", "import sys; sys.exit(3)"], timeout=30)


def test_run_json_reads_the_marked_line_and_never_raises():
    noisy = (
        "import json, sys; from labutils.system import JSON_MARK; print('{ruído}');"
        "print(JSON_MARK + json.dumps({'a': 1})); print('fim'); print('aviso', file=sys.stderr)"
    )
    kw = {"timeout": 30, "late": "atrasou", "failed": "falhou"}
    assert system.run_json([sys.executable, "-c", noisy], **kw) == {"a": 1}
    no_line = "import sys; print('{}'); print('quebrou', file=sys.stderr); sys.exit(4)"
    assert system.run_json([sys.executable, "-c", no_line], **kw) == {
        "error": "falhou (código 4): quebrou"
    }
    slow = [sys.executable, "-c", "import time; time.sleep(30)"]
    assert system.run_json(slow, **{**kw, "timeout": 1}) == {"error": "atrasou"}
    missing = system.run_json(["/nao/existe"], **kw)["error"]
    assert missing.startswith("não consegui rodar /nao/existe")


def test_run_past_its_timeout_kills_the_whole_group_fast(tmp_path):
    pid_file = tmp_path / "child.pid"
    # o comando cria um neto que dormiria 60 s: o prazo tem de encerrar os dois
    script = (
        "import subprocess, sys, time;"
        "p = subprocess.Popen(['sleep', '60']);"
        f"open({str(pid_file)!r}, 'w').write(str(p.pid));"
        "print('comecei', flush=True);"
        "time.sleep(60)"
    )
    start = time.monotonic()
    # a mensagem traz o que o comando escreveu antes de travar
    with pytest.raises(system.CommandError, match="não terminou em 2 s(.|\n)*comecei"):
        system.run([sys.executable, "-c", script], timeout=2)
    assert time.monotonic() - start < 15
    grandchild = int(pid_file.read_text())
    # o sinal chega ao neto sem esperar: numa máquina carregada ele leva um instante para sair
    # (visto: ainda vivo logo depois do run, num make test); sem o kill do grupo, viveria 60 s
    assert not system.alive({grandchild}, wait_s=10), "o neto do comando sobreviveu ao grupo"


def test_kill_group_stops_only_its_group():
    mine = system.spawn_group(["sleep", "60"])
    other = subprocess.Popen(["sleep", "60"])  # outro grupo: não pode ser tocado
    try:
        system.kill_group(mine, grace=1)
        assert mine.poll() is not None
        assert other.poll() is None
        system.kill_group(mine)  # idempotente
    finally:
        other.kill()
        other.wait()


def test_ports_free_in_use_and_reachable():
    ports = system.free_ports(3)
    assert len(set(ports)) == 3
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        assert system.port_in_use(port, host="127.0.0.1")
        assert system.reachable("127.0.0.1", port, timeout=2) is None
    assert not system.port_in_use(port, host="127.0.0.1")
    assert isinstance(system.reachable("127.0.0.1", port, timeout=2), OSError)


def test_alive_sees_a_running_process_and_waits_for_it_to_end():
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        assert system.alive({proc.pid}) == {proc.pid}
        proc.terminate()
        assert system.alive({proc.pid, 2**22 + 7}, wait_s=5) == set()  # morto e inexistente
    finally:
        proc.kill()
        proc.wait()


@pytest.fixture
def like_macos(monkeypatch):
    """Um ``os`` sem a afinidade de CPUs (macOS, Windows) e sem o ``process_cpu_count`` (3.12-)."""
    monkeypatch.delattr("os.sched_getaffinity", raising=False)
    monkeypatch.delattr("os.process_cpu_count", raising=False)
    monkeypatch.setattr("os.cpu_count", lambda: 3)


@pytest.mark.timeout(120)
def test_the_doctor_and_lesson_06_run_without_the_linux_only_calls(like_macos):
    """O diagnóstico (lição 00) e as funções da lição 06 num ``os`` como o do macOS."""
    from labutils import doctor, inference
    from tools.lesson_code import load

    assert system.usable_cpus() == 3
    assert "3 CPUs lógicas" in doctor.check_cpus()[-1].detail
    reference = {
        "date": "hoje", "probe": {"images_per_s": 100.0, "device": "nenhuma"},
        "machine": {"logical_cpus": 3}, "class_period_min": 15.0,
        "lessons": [{"notebook": "02_x.ipynb", "gpu": False, "core_s": 60.0, "optional_s": 0}],
    }  # fmt: skip
    rows = doctor.check_lesson_times({"images_per_s": 100.0, "device": "nenhuma"}, reference)
    assert [r.item for r in rows] == ["tempo das lições", "02_x.ipynb"], rows
    assert inference.cores_bound(workers=4, threads_per_worker=1) == system.usable_cores() <= 3
    assert load("06_inferencia_em_lote").configure_threads(0) >= 1


@pytest.mark.timeout(30)
def test_the_bound_counts_physical_cores_not_smt_threads(monkeypatch):
    """4 núcleos com SMT (8 CPUs lógicas): 8 processos de 1 thread ocupam 4 núcleos, não 8."""
    import psutil

    from labutils import inference

    monkeypatch.setattr(system, "usable_cpus", lambda: 8)
    monkeypatch.setattr(psutil, "cpu_count", lambda logical=True: 8 if logical else 4)
    assert inference.cores_bound(workers=8, threads_per_worker=1) == 4
    assert inference.cores_bound(workers=2, threads_per_worker=1) == 2
    assert inference.cores_bound(workers=1, threads_per_worker=8) == 4
    monkeypatch.setattr(psutil, "cpu_count", lambda logical=True: 8 if logical else None)
    assert inference.cores_bound(workers=8, threads_per_worker=1) == 8  # sem a contagem física
