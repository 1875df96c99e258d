"""A limpeza do ``conftest.py`` encerra só os processos do Ray da própria sessão.

Um pytest interno (com uma cópia do ``conftest.py`` da raiz) roda um teste que deixa um
"raylet" órfão (um ``sleep`` com esse nome, largado por um ``sh``): a sessão interna tem de
falhar e encerrá-lo. Um outro "raylet", de fora da sessão (como o Ray de outro usuário na
mesma máquina), tem de sobreviver.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from processes import SESSION_MARK

from labutils import system
from labutils.system import kill_pids

ROOT = Path(__file__).resolve().parents[1]

LEAKY_TEST = textwrap.dedent(
    """
    import subprocess
    import time
    from pathlib import Path

    def test_leaves_a_raylet_behind():
        fake = Path(__file__).with_name("raylet")
        # o `sh` sai na hora: o "raylet" fica órfão (como os daemons de um `ray start`)
        cmd = f"{fake} 120 >/dev/null 2>&1 & echo $! > {fake}.pid"
        subprocess.run(["sh", "-c", cmd], check=True, timeout=10)
        # o filho do `sh` pode ainda não ter virado o "raylet" (exec) quando a sessão procura os
        # processos do Ray; um daemon do Ray de verdade já está de pé quando o teste termina
        comm = Path(f"/proc/{Path(f'{fake}.pid').read_text().strip()}/comm")
        deadline = time.monotonic() + 10
        while comm.read_text().strip() != "raylet" and time.monotonic() < deadline:
            time.sleep(0.05)
    """
)


def _fake_raylet(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    fake = folder / "raylet"
    shutil.copy(shutil.which("sleep"), fake)
    return fake


@pytest.fixture
def foreign_raylet(tmp_path):
    """Um "raylet" de outra pessoa: sem a marca da sessão, num grupo próprio."""
    env = {k: v for k, v in os.environ.items() if k != SESSION_MARK}
    proc = system.spawn_group([str(_fake_raylet(tmp_path / "outro_usuario")), "120"], env=env)
    yield proc
    system.kill_group(proc, grace=0)


def _leaky_session(
    tmp_path: Path, test_code: str, workers: list[str]
) -> tuple[subprocess.CompletedProcess, int]:
    """Roda ``test_code`` (que deixa um "raylet" e grava o PID em ``raylet.pid``) numa sessão
    do pytest interna com uma cópia do ``conftest.py`` da raiz (espera de 1 s, não 15 s);
    devolve a sessão terminada e o PID deixado."""
    inner = tmp_path / "sessao"
    _fake_raylet(inner)
    conftest = (ROOT / "conftest.py").read_text(encoding="utf-8")
    assert "LEFTOVER_GRACE_S = 15.0" in conftest
    (inner / "conftest.py").write_text(conftest.replace("= 15.0", "= 1.0"), encoding="utf-8")
    (inner / "test_leak.py").write_text(test_code, encoding="utf-8")
    # a cópia do conftest importa tests/processes.py (fora dela, o pythonpath do pyproject.toml)
    tests = os.pathsep.join(filter(None, [str(ROOT / "tests"), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "LABUTILS_CHECK_RAY_LEFTOVERS": "1", "PYTHONPATH": tests}
    # subprocess.run, não system.run: este encerraria o grupo do pytest interno ao fim, e o
    # "raylet" deixado nele morreria mesmo se a limpeza da sessão interna falhasse
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:nbval", *workers]
        + ["."],
        cwd=inner,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return proc, int((inner / "raylet.pid").read_text())


# com -n 2 (como no make test), quem acha o processo é um dos processos do pytest-xdist, e o
# principal é quem tem de falhar a sessão
@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["um processo", "pytest-xdist"])
def test_session_fails_and_kills_only_its_own_ray(tmp_path, foreign_raylet, workers):
    proc, leaked = _leaky_session(tmp_path, LEAKY_TEST, workers)
    try:
        assert proc.returncode == 1, proc.stdout[-2000:] + proc.stderr[-2000:]
        assert "processos do Ray deixados pelos testes" in proc.stdout
        assert f"{leaked}:" in proc.stdout
        assert not system.alive({leaked}), "o raylet deixado pela sessão continua vivo"
        assert system.alive({foreign_raylet.pid}), "a limpeza matou um Ray que não era da sessão"
        assert f"{foreign_raylet.pid}:" not in proc.stdout
    finally:
        kill_pids({leaked})


HIDDEN_LEAK_TEST = textwrap.dedent(
    f"""
    import os
    import subprocess
    import time
    from pathlib import Path

    def test_leaves_a_ray_process_that_hides_the_session_mark():
        fake = Path(__file__).with_name("raylet")
        # sem a marca no ambiente (como um processo que o Ray renomeou com setproctitle) e neto
        # deste pytest enquanto o `sh` vive: fica órfão só depois que este teste termina
        env = {{k: v for k, v in os.environ.items() if k != {SESSION_MARK!r}}}
        cmd = f"{{fake}} 120 >/dev/null 2>&1 & echo $! > {{fake}}.pid; sleep 1"
        subprocess.Popen(["sh", "-c", cmd], env=env)
        pid_file = Path(f"{{fake}}.pid")
        while not pid_file.exists() or not pid_file.read_text().strip():
            time.sleep(0.05)

    def test_while_the_sh_exits():
        time.sleep(3)
    """
)


def test_an_orphan_that_hides_the_mark_is_found_because_it_was_seen_as_a_descendant(tmp_path):
    """O caso do ``ray-dashboard-NodeHead-0`` que sobreviveu a uma sessão: descendente durante um
    teste, órfão e sem a marca legível no fim."""
    proc, leaked = _leaky_session(tmp_path, HIDDEN_LEAK_TEST, [])
    try:
        assert proc.returncode == 1, proc.stdout[-2000:] + proc.stderr[-2000:]
        assert f"{leaked}:" in proc.stdout, proc.stdout[-2000:]
        assert not system.alive({leaked}), "o órfão sem a marca continua vivo"
    finally:
        kill_pids({leaked})


# ---------------------------------------------------------------- nenhum teste trava a suíte


def _pyproject_pytest_options() -> dict:
    import tomllib

    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]


def test_every_test_has_a_default_timeout():
    options = _pyproject_pytest_options()
    assert 0 < int(options["timeout"]) <= 600 and options["timeout_method"] == "signal"
    assert "-rfEs" in options["addopts"], "o resumo deve mostrar o motivo dos testes pulados"


HANGING_NOTEBOOK = {
    "cells": [
        {
            "cell_type": "code",
            "id": "trava",
            "execution_count": None,
            "metadata": {},
            "outputs": [],
            "source": "import time\ntime.sleep(120)",
        }
    ],
    "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3"}},
    "nbformat": 4,
    "nbformat_minor": 5,
}


def test_a_hanging_notebook_cell_fails_by_the_notebook_timeout(tmp_path):
    """Uma célula que trava cai pelo limite que ``notebooks/conftest.py`` põe nas células
    (aqui reduzido a 2 s), antes do limite do nbval (120 s) — a suíte segue."""
    import json

    conftest = (ROOT / "notebooks" / "conftest.py").read_text(encoding="utf-8")
    assert "NOTEBOOK_CELL_TIMEOUT_S = 960" in conftest
    (tmp_path / "conftest.py").write_text(conftest.replace("= 960", "= 2"), encoding="utf-8")
    (tmp_path / "trava.ipynb").write_text(json.dumps(HANGING_NOTEBOOK), encoding="utf-8")
    args = ["--nbval-lax", "--nbval-cell-timeout=120", "--nbval-kernel-startup-timeout=120"]
    args += ["-o", "timeout=300", "-o", "timeout_method=signal", "-p", "no:cacheprovider"]
    proc = system.run(
        [sys.executable, "-m", "pytest", "-q", *args, "trava.ipynb"],
        timeout=200,
        env={**os.environ, "LABUTILS_CHECK_RAY_LEFTOVERS": "0"},
        cwd=tmp_path,
        check=False,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out[-3000:]
    assert "Timeout (>2.0s)" in out, out[-3000:]
