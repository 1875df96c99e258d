"""A sala com Pythons diferentes (``make classroom-check``): o nó principal no Python deste
ambiente; um aluno com outro patch do mesmo X.Y entra e roda tarefas, e um com outro X.Y é
recusado em segundos, em português. Cada aluno num venv próprio, com o Ray fixado, feito uma vez
em ``build/skew``. Precisa de root (``ip netns``); fora do ``make classroom-check``, é pulado."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from netns import PORT, ROOT, WHY_NOT, machines

from labutils.doctor import pinned

#: os intérpretes dos alunos (caminhos separados por ":"), que o ``make classroom-check`` passa
PYTHONS_ENV = "LABUTILS_SKEW_PYTHONS"
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(WHY_NOT is not None, reason=WHY_NOT or ""),
    pytest.mark.skipif(
        not os.environ.get(PYTHONS_ENV),
        reason="a sala com Pythons diferentes: make classroom-check",
    ),
    pytest.mark.timeout(600),
]
HERE = ".".join(map(str, sys.version_info[:3]))


def _version(python: str) -> str | None:
    """A versão de ``python``, ou ``None`` se ele não roda (um *shim* do pyenv sem versão)."""
    code = "import sys; print('.'.join(map(str, sys.version_info[:3])))"
    try:
        done = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=30)
    except OSError:
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def _venv(python: str) -> Path:
    """Um venv de ``python`` com o Ray fixado no pyproject.toml e o NumPy (o laboratório vem
    pelo PYTHONPATH: o ``join`` e o ``init_ray`` só precisam do Ray)."""
    venv = ROOT / "build" / "skew" / f"py{_version(python)}"
    if not (venv / "bin" / "ray").exists():
        shutil.rmtree(venv, ignore_errors=True)
        subprocess.run([python, "-m", "venv", str(venv)], check=True, timeout=120)
        pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet"]
        ray = f"ray[default]{pinned('ray').specifier}"
        subprocess.run([*pip, ray, str(pinned("numpy"))], check=True, timeout=600)
    return venv / "bin" / "python"


def _students() -> dict[str, Path]:
    """``{"patch": venv, "minor": venv}``: outro patch do mesmo X.Y e outro X.Y que este."""
    found = {}
    for python in os.environ.get(PYTHONS_ENV, "").split(":"):
        version = _version(python)
        if version is None:
            continue
        if version[: version.rindex(".")] != HERE[: HERE.rindex(".")]:
            found.setdefault("minor", _venv(python))
        elif version != HERE:
            found.setdefault("patch", _venv(python))
    return found


# No nó principal: funções e classes do __main__ (vão por valor, com o cloudpickle), um objeto
# do armazém e uma tarefa em cada nó; devolve o Python de cada nó.
DRIVER = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    from labutils.raytools import init_ray
    init_ray()  # RAY_ADDRESS: o nó principal
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    class Soma:
        def __init__(self, k):
            self.k = k

        def __call__(self, x):
            return float(x.sum()) + self.k

    @ray.remote(num_cpus=1)
    def roda(f, x):
        import platform
        return f(x), platform.python_version(), ray.util.get_node_ip_address()

    x = ray.put(np.arange(10.0))
    nos = [n["NodeID"] for n in ray.nodes() if n["Alive"]]
    saida = ray.get([
        roda.options(scheduling_strategy=NodeAffinitySchedulingStrategy(no, soft=False))
        .remote(Soma(1), x)
        for no in nos
    ], timeout=120)
    print(json.dumps(saida))
    """
)


def test_a_classroom_with_two_pythons():
    students = _students()
    assert students, f"nenhum Python diferente de {HERE} em {PYTHONS_ENV}"
    timings = {}
    with machines(1 + len(students)) as (head, *others):
        out, timings["nó principal no ar"], code = head.cluster(
            "start-head", "--node-ip-address", head.ip, "--num-cpus", "1", "--no-dashboard"
        )
        assert code == 0, out
        address = f"{head.ip}:{PORT}"
        for (case, python), machine in zip(sorted(students.items()), others, strict=True):
            (machine.home / ".ray").mkdir()
            shutil.copy(head.home / ".ray" / "auth_token", machine.home / ".ray" / "auth_token")
            join = [str(python), "-m", "labutils.cluster", "join", address, "--num-cpus", "1"]
            out, timings[f"join ({case})"], code = machine.run(join, PYTHONPATH=str(ROOT))
            print(f"--- join com outro {case}:\n{out}")
            if case == "minor":  # outro X.Y: recusado antes do `ray start`, com o conserto
                head_minor = HERE[: HERE.rindex(".")]
                assert code == 2 and f"PYTHON=python{head_minor}" in out, out
                assert "Traceback" not in out and timings["join (minor)"] < 10, (out, timings)
                continue
            assert code == 0, out  # outro patch: entra (o Ray só avisa)
            out, timings["tarefas nos dois nós"], code = head.run(
                [sys.executable, "-c", DRIVER], timeout=240, RAY_ADDRESS=address
            )
            assert code == 0, out[-3000:]
            results = json.loads(out.strip().splitlines()[-1])
            assert sorted(r[1] for r in results) == sorted([HERE, _version(str(python))])
            assert {r[0] for r in results} == {46.0}
    print("tempos (s): " + ", ".join(f"{k} {v:.1f}" for k, v in timings.items()))
