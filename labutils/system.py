"""Processos e rede: subprocessos com prazo, grupos de processos encerrados por inteiro, portas e
endereços; e a validação dos números que um usuário passa ao pacote."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterable, Mapping, Sequence

LOCALHOST = "127.0.0.1"
#: quanto esperar por um endereço que não responde (segundos): o ``join`` e o ``init_ray``
CONNECT_TIMEOUT_S = 3.0
#: o começo da linha em que um subprocesso Python devolve o seu resultado a :func:`run_json`
JSON_MARK = "LABUTILS_JSON="


class CommandError(RuntimeError):
    """Um comando externo falhou ou passou do limite de tempo (mensagem em português)."""


def check_int(value: object, name: str, low: int = 1, high: int | None = None, error=ValueError):
    """``value`` se for um inteiro entre ``low`` e ``high``; senão ``error`` que o nomeia."""
    too_high = high is not None and isinstance(value, int) and value > high
    if isinstance(value, bool) or not isinstance(value, int) or value < low or too_high:
        limits = f">= {low}" if high is None else f"de {low} a {high}"
        raise error(f"{name} deve ser um inteiro {limits}, recebi {value!r}.")
    return value


def machine() -> dict:
    """A máquina, descrita uma vez para o diagnóstico, o ensaio e o benchmark: o processador,
    as CPUs lógicas que este processo pode usar, os núcleos físicos e a memória."""
    import platform
    from pathlib import Path

    import psutil

    model = platform.processor() or platform.machine()
    cpuinfo = Path("/proc/cpuinfo")  # o nome do processador, no Linux
    if cpuinfo.exists():
        lines = cpuinfo.read_text(encoding="utf-8").splitlines()
        model = next(
            (x.split(":", 1)[1].strip() for x in lines if x.startswith("model name")), model
        )
    return {
        "cpu": model,
        "logical_cpus": usable_cpus(),
        "physical_cores": psutil.cpu_count(logical=False),
        "memory_gb": round(psutil.virtual_memory().total / 2**30, 1),
    }


def describe_machine(here: dict | None = None) -> str:
    """``N CPUs lógicas, M núcleos físicos, X GB de memória``, de :func:`machine`."""
    here = here or machine()
    return (
        f"{here['logical_cpus']} CPUs lógicas, {here['physical_cores'] or '?'} núcleos físicos, "
        f"{here['memory_gb']:.0f} GB de memória"
    )


def usable_cpus() -> int:
    """Quantas CPUs lógicas este processo pode usar (a afinidade, onde existe: Linux, 3.13+)."""
    if hasattr(os, "process_cpu_count"):
        return os.process_cpu_count() or 1
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def usable_cores() -> int:
    """Os núcleos físicos que este processo consegue ocupar: as CPUs lógicas de
    :func:`usable_cpus`, sem passar dos núcleos físicos. Com SMT, duas CPUs lógicas dividem um
    núcleo, e contas de ponto flutuante ganham pouco com a segunda."""
    import psutil

    return min(usable_cpus(), psutil.cpu_count(logical=False) or usable_cpus())


# ---------------------------------------------------------------- subprocessos


def run(
    cmd: Sequence[str],
    *,
    timeout: float,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike | None = None,
    check: bool = True,
    shown_as: str | None = None,
    leave_running: bool = False,
) -> subprocess.CompletedProcess:
    """Roda ``cmd`` (sem shell) até ``timeout`` s e devolve a saída; passou do prazo (ou, com
    ``check``, falhou): :class:`CommandError` com o fim da saída, e o grupo encerrado.
    ``leave_running``: o que ele deixou no ar ao terminar bem (um ``ray start``) fica vivo."""
    shown = shown_as or " ".join(map(str, cmd))
    proc = spawn_group(cmd, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_group(proc)
        out, err = "", ""
        with contextlib.suppress(subprocess.TimeoutExpired):  # um neto fora do grupo com a saída
            out, err = proc.communicate(timeout=5)
        raise CommandError(
            f"`{shown}` não terminou em {timeout:g} s e foi encerrado.{_tail(out, err)}"
        ) from None
    finally:
        if not (leave_running and proc.returncode == 0):
            kill_group(proc, grace=0)
    if check and proc.returncode != 0:
        raise CommandError(f"`{shown}` falhou (código {proc.returncode}):{_tail(out, err)}")
    return subprocess.CompletedProcess(list(cmd), proc.returncode, out, err)


def run_json(
    cmd: Sequence[str],
    *,
    timeout: float,
    late: str,
    failed: str,
    env: Mapping[str, str] | None = None,
) -> dict:
    """O JSON da última linha ``LABUTILS_JSON=...`` que ``cmd`` imprime; nunca levanta: senão
    ``{"error": late}`` (passou do prazo) ou ``{"error": "<failed> (código N): <stderr>"}``."""
    try:
        proc = run(cmd, timeout=timeout, env=env, check=False)
    except CommandError:
        return {"error": late}
    except OSError as err:
        return {"error": f"não consegui rodar {cmd[0]}: {err}"}
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith(JSON_MARK):
            return json.loads(line.removeprefix(JSON_MARK))
    tail = " | ".join(proc.stderr.strip().splitlines()[-3:]) or "(sem mensagem)"
    return {"error": f"{failed} (código {proc.returncode}): {tail}"}


def _tail(out: str | None, err: str | None, lines: int = 8) -> str:
    text = "\n".join(((out or "") + (err or "")).strip().splitlines()[-lines:])
    return f"\n{text}" if text else ""


def spawn_group(
    cmd: Sequence[str], *, env: Mapping[str, str] | None = None, **popen
) -> subprocess.Popen:
    """Inicia ``cmd`` num grupo de processos próprio, que :func:`kill_group` encerra inteiro."""
    popen.setdefault("stdin", subprocess.DEVNULL)
    popen.setdefault("text", True)
    return subprocess.Popen(
        list(cmd), env=dict(env) if env is not None else None, start_new_session=True, **popen
    )


def kill_group(proc: subprocess.Popen, *, grace: float = 5.0) -> None:
    """SIGTERM no grupo de ``proc``, até ``grace`` s de espera, e SIGKILL no que sobrou (mesmo
    com o líder já fora; ``grace=0``: direto ao SIGKILL). Idempotente."""
    if grace > 0 and proc.poll() is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=grace)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=5)


def kill_pids(pids: Iterable[int], *, wait_s: float = 10.0) -> None:
    """SIGKILL em cada um dos ``pids`` (e só neles), esperando até ``wait_s`` s que saiam."""
    import psutil

    procs = []
    for pid in pids:
        with contextlib.suppress(psutil.Error):
            proc = psutil.Process(pid)
            proc.kill()
            procs.append(proc)
    psutil.wait_procs(procs, timeout=wait_s)


def kill_tree(pid: int | None, *, wait_s: float = 10.0) -> None:
    """SIGKILL em ``pid`` e nos seus descendentes (lidos antes do sinal: depois, órfãos)."""
    import psutil

    if not pid:
        return
    with contextlib.suppress(psutil.NoSuchProcess):
        family = [pid, *(c.pid for c in psutil.Process(pid).children(recursive=True))]
        kill_pids(family, wait_s=wait_s)


def alive(pids: set[int], *, wait_s: float = 0.0) -> set[int]:
    """Os ``pids`` ainda vivos (zumbis não contam), esperando até ``wait_s`` s que terminem."""
    import psutil

    deadline = time.monotonic() + wait_s
    while True:
        living = set()
        for pid in pids:
            with contextlib.suppress(psutil.Error):
                if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                    living.add(pid)
        if not living or time.monotonic() >= deadline:
            return living
        time.sleep(0.2)


# ---------------------------------------------------------------- portas e endereços


def port_in_use(port: int, host: str = "0.0.0.0") -> bool:
    """Alguém já escuta em ``host:port``? Com ``SO_REUSEADDR``, como o Ray: TIME_WAIT é livre."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return True
    return False


def free_ports(count: int, avoid: set[int] | None = None) -> list[int]:
    """``count`` portas livres e distintas em 127.0.0.1 (abertas até escolher todas)."""
    avoid = set(avoid or ())
    ports: list[int] = []
    with contextlib.ExitStack() as stack:
        while len(ports) < count:
            sock = stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            sock.bind((LOCALHOST, 0))
            if (port := sock.getsockname()[1]) not in avoid:
                ports.append(port)
                avoid.add(port)
    return ports


def free_port() -> int:
    """Uma porta TCP livre agora em 127.0.0.1."""
    return free_ports(1)[0]


def reachable(host: str, port: int, timeout: float = CONNECT_TIMEOUT_S) -> OSError | None:
    """``None`` se ``host:port`` aceita uma conexão TCP em até ``timeout`` s, senão o erro."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return None
    except OSError as err:
        return err
