"""Processos e rede: o único lugar que roda subprocessos, encerra grupos de processos e testa
portas.

- :func:`run`: roda um comando com limite de tempo (e mensagem em português se passar dele);
- :func:`spawn_group` e :func:`kill_group`: um processo num grupo próprio, e o fim do grupo
  inteiro (o processo e todos os filhos), sem tocar em processos de outros;
- :func:`free_ports`, :func:`port_in_use`, :func:`check_port`: portas locais;
- :func:`reachable`: alguém atende em ``host:porta`` dentro do prazo?
- :func:`alive`: quais destes processos ainda estão vivos (zumbis não contam)?
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from collections.abc import Mapping, Sequence

LOCALHOST = "127.0.0.1"


class CommandError(RuntimeError):
    """Um comando externo falhou ou passou do limite de tempo (mensagem em português)."""


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
    """Roda ``cmd`` (sem shell, na pasta ``cwd``) até ``timeout`` segundos e devolve a saída
    capturada.

    Passou do prazo: o grupo inteiro do comando é encerrado e sobe :class:`CommandError`, com
    o fim do que ele escreveu até ali. ``check``: código de saída diferente de zero também sobe
    :class:`CommandError`, com o fim da saída. ``shown_as``: como o comando aparece nas
    mensagens (padrão: o próprio comando). ``leave_running``: os processos que o comando deixou
    no ar ao terminar com sucesso (ex.: os serviços que ``ray start`` sem ``--block`` inicia,
    no mesmo grupo) continuam vivos; sem ele, o grupo inteiro é encerrado ao fim.
    """
    if not isinstance(timeout, int | float) or isinstance(timeout, bool) or timeout <= 0:
        raise ValueError(f"timeout deve ser um número de segundos > 0, recebi {timeout!r}.")
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
    done = subprocess.CompletedProcess(list(cmd), proc.returncode, out, err)
    if check and done.returncode != 0:
        raise CommandError(f"`{shown}` falhou (código {done.returncode}):{_tail(out, err)}")
    return done


def _tail(out: str | None, err: str | None, lines: int = 8) -> str:
    """As últimas ``lines`` linhas da saída, numa linha nova (vazio se não houve saída)."""
    text = "\n".join(((out or "") + (err or "")).strip().splitlines()[-lines:])
    return f"\n{text}" if text else ""


def spawn_group(
    cmd: Sequence[str], *, env: Mapping[str, str] | None = None, **popen
) -> subprocess.Popen:
    """Inicia ``cmd`` num grupo de processos próprio (``start_new_session``), em modo texto.

    Assim :func:`kill_group` encerra o comando e todos os seus filhos, e só eles.
    """
    popen.setdefault("stdin", subprocess.DEVNULL)
    popen.setdefault("text", True)
    return subprocess.Popen(
        list(cmd), env=dict(env) if env is not None else None, start_new_session=True, **popen
    )


def kill_group(proc: subprocess.Popen, *, grace: float = 5.0) -> None:
    """Encerra o grupo de processos de ``proc`` (iniciado por :func:`spawn_group`).

    Manda SIGTERM e espera até ``grace`` segundos; depois, SIGKILL no grupo todo (inclusive
    filhos que ficaram, mesmo se o líder já saiu). ``grace=0`` vai direto ao SIGKILL.
    Idempotente: um grupo que já acabou é ignorado.
    """
    if grace > 0 and proc.poll() is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=grace)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=5)


# ---------------------------------------------------------------- portas e rede


def check_port(port: object, what: str = "porta") -> int:
    """Devolve ``port`` se for uma porta TCP válida; senão ``ValueError`` em português."""
    if isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536:
        raise ValueError(f"Porta inválida para {what}: {port!r} (use um inteiro de 1 a 65535).")
    return port


def port_in_use(port: int, host: str = "0.0.0.0") -> bool:
    """``True`` se não dá para abrir um servidor em ``host:port`` (alguém já escuta ali).

    Usa ``SO_REUSEADDR``, como os servidores do Ray: uma porta em TIME_WAIT conta como livre.
    """
    check_port(port)
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return True
    return False


def free_ports(count: int, avoid: set[int] | None = None) -> list[int]:
    """``count`` portas livres e distintas em 127.0.0.1 (os sockets ficam abertos até escolher
    todas, para o sistema não repetir nenhuma)."""
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ValueError(f"count deve ser um inteiro >= 1, recebi {count!r}.")
    avoid = set(avoid or ())
    socks: list[socket.socket] = []
    ports: list[int] = []
    try:
        while len(ports) < count:
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind((LOCALHOST, 0))
            socks.append(sock)
            port = sock.getsockname()[1]
            if port not in avoid:
                ports.append(port)
                avoid.add(port)
    finally:
        for sock in socks:
            sock.close()
    return ports


def free_port() -> int:
    """Uma porta TCP livre agora em 127.0.0.1."""
    return free_ports(1)[0]


#: quanto esperar por um endereço que não responde antes de desistir (segundos): o nó principal
#: para o ``join`` (:mod:`labutils.cluster`) e para o ``init_ray`` (:mod:`labutils.raytools`)
CONNECT_TIMEOUT_S = 3.0


def reachable(host: str, port: int, timeout: float = CONNECT_TIMEOUT_S) -> OSError | None:
    """Tenta abrir uma conexão TCP a ``host:port`` em até ``timeout`` s.

    Devolve ``None`` se alguém atendeu, ou o erro (para a mensagem de quem chamou).
    """
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return None
    except OSError as err:
        return err


def alive(pids: set[int], *, wait_s: float = 0.0) -> set[int]:
    """Os PIDs de ``pids`` ainda vivos (zumbis não contam), esperando até ``wait_s`` segundos
    que terminem (um processo leva um instante para sair depois do sinal)."""
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
