"""Processos dos testes: achar e encerrar só o que um teste iniciou, sempre por PID, nunca por nome
(o Ray de outro usuário na mesma máquina tem de sobreviver à suíte)."""

from __future__ import annotations

import contextlib
import subprocess

import psutil

from labutils import system


def descendants(pid: int) -> set[int]:
    """PIDs de todos os descendentes de ``pid`` agora (vazio se ele já saiu)."""
    with contextlib.suppress(psutil.Error):
        return {p.pid for p in psutil.Process(pid).children(recursive=True)}
    return set()


def kill_tree(proc: subprocess.Popen | psutil.Process, timeout: float = 30) -> None:
    """SIGKILL em ``proc`` e em todos os descendentes dele, como uma máquina que desliga.

    A lista de descendentes é lida ANTES do sinal: depois dele, os órfãos (o Ray que um driver
    iniciou, os workers que o Ray pôs em grupos de processos próprios) já não teriam pai.
    """
    family = []
    for pid in descendants(proc.pid):
        with contextlib.suppress(psutil.Error):
            family.append(psutil.Process(pid))
    with contextlib.suppress(psutil.Error):
        proc.kill()
    if isinstance(proc, subprocess.Popen):
        proc.wait(timeout=timeout)
    for child in family:
        with contextlib.suppress(psutil.Error):
            child.kill()
    gone = {proc.pid, *(child.pid for child in family)}
    left = system.alive(gone, wait_s=timeout)
    assert not left, f"processos que sobreviveram ao SIGKILL: {sorted(left)}"


def describe(pids: set[int]) -> list[str]:
    """``"PID linha de comando"`` de cada processo de ``pids`` ainda vivo (zumbis não contam)."""
    out = []
    for pid in sorted(system.alive(pids)):
        with contextlib.suppress(psutil.Error):
            out.append(f"{pid} {' '.join(psutil.Process(pid).cmdline())[:120]}")
    return out
