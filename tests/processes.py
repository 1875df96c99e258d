"""Processos dos testes: rodar, achar e encerrar só o que um teste (ou a sessão) iniciou, por
PID, nunca por nome (o Ray de outro usuário na mesma máquina sobrevive à suíte)."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterable, Mapping

import psutil

from labutils import system


def run_python(
    code: str, *, timeout: float, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess:
    """Roda ``code`` num Python novo (:func:`labutils.system.run`), sem conferir o código."""
    return system.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        timeout=timeout,
        env={**os.environ, **(env or {})},
        check=False,
        shown_as="python -c (código do teste)",
    )


def last_json(done: subprocess.CompletedProcess) -> dict:
    """O JSON da última linha da saída de ``done``, que tem de ter terminado com código 0."""
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def descendants(pid: int) -> set[int]:
    """PIDs de todos os descendentes de ``pid`` agora (vazio se ele já saiu)."""
    with contextlib.suppress(psutil.Error):
        return {p.pid for p in psutil.Process(pid).children(recursive=True)}
    return set()


def with_in_cmdline(text: str) -> set[int]:
    """PIDs dos processos cuja linha de comando contém ``text`` (ex.: a pasta de um cluster)."""
    found = set()
    for proc in psutil.process_iter(["pid", "cmdline"]):
        with contextlib.suppress(psutil.Error):
            if text in " ".join(proc.info["cmdline"] or []):
                found.add(proc.pid)
    return found


def assert_gone(pids: Iterable[int], what: str, wait_s: float = 10) -> None:
    """Falha, com o PID e a linha de comando de cada um, se algum de ``pids`` ainda vive (zumbis
    não contam) depois de ``wait_s`` segundos."""
    left = []
    for pid in sorted(system.alive(set(pids), wait_s=wait_s)):
        with contextlib.suppress(psutil.Error):
            left.append(f"{pid} {' '.join(psutil.Process(pid).cmdline())[:120]}")
    assert not left, f"{what} ficaram vivos: {left}"


#: marca os processos de uma sessão do pytest (herdada pelos filhos, órfãos inclusive)
SESSION_MARK = "LABUTILS_PYTEST_SESSION"


def remember_descendants(seen: dict[int, float]) -> None:
    """Anota em ``seen`` (PID → hora de criação) os descendentes deste processo agora."""
    for pid in descendants(os.getpid()):
        with contextlib.suppress(psutil.Error):
            seen[pid] = psutil.Process(pid).create_time()


def session_pids(mark: str, seen: Mapping[int, float] | None = None) -> set[int]:
    """Processos vivos da sessão ``mark``, deste usuário: descendentes, com a marca no ambiente
    ou vistos antes em ``seen`` (a hora de criação afasta um PID reaproveitado)."""
    root = os.getpid()
    found = descendants(root)
    for pid, created in (seen or {}).items():
        with contextlib.suppress(psutil.Error):
            if psutil.Process(pid).create_time() == created:
                found.add(pid)
    for proc in psutil.process_iter(["pid", "uids"]):
        if proc.pid in found or proc.pid == root:
            continue
        with contextlib.suppress(psutil.Error):
            if proc.info["uids"] and proc.info["uids"].real != os.getuid():
                continue  # de outro usuário: nem olhamos
            if proc.environ().get(SESSION_MARK) == mark:
                found.add(proc.pid)
    return system.alive(found)


def ray_like(proc: psutil.Process) -> bool:
    """Processo do Ray: gcs_server, raylet ou um Python do Ray (workers, painel, ``ray start``)."""
    try:
        name = proc.name()
        cmdline = " ".join(proc.cmdline())
    except psutil.Error:
        return False
    if name in ("gcs_server", "raylet") or cmdline.startswith("ray::"):
        return True
    return "/ray/" in cmdline or " ray start" in f" {cmdline}" or "/bin/ray " in cmdline


def ray_leftovers(
    mark: str, grace: float, seen: Mapping[int, float] | None = None
) -> dict[int, str]:
    """``{pid: linha de comando}`` do Ray da sessão ainda vivo depois de ``grace`` segundos."""
    deadline = time.monotonic() + grace
    while True:
        left = {}
        for pid in session_pids(mark, seen):
            with contextlib.suppress(psutil.Error):
                proc = psutil.Process(pid)
                if ray_like(proc):
                    left[pid] = " ".join(proc.cmdline())[:120] or proc.name()
        if not left or time.monotonic() >= deadline:
            return left
        time.sleep(0.5)
