"""O que todo o pacote ``cluster`` usa: o erro em português, o executável ``ray``, endereços e
portas, rodar um comando ``ray`` mostrando-o, e esperar os nós entrarem."""

from __future__ import annotations

import shlex
import shutil
import signal
import sys
import time
from pathlib import Path

from labutils import config, system

DEFAULT_PORT = 6379
DEFAULT_DASHBOARD_PORT = 8265
LOCALHOST = system.LOCALHOST
CONNECT_TIMEOUT_S = system.CONNECT_TIMEOUT_S  # um só prazo (labutils.system)


class ClusterError(RuntimeError):
    """Erro de configuração ou de conexão do cluster, com mensagem em português."""


def ray_executable() -> str:
    """O executável ``ray`` do mesmo ambiente Python deste processo."""
    candidate = Path(sys.executable).with_name("ray")
    return str(candidate) if candidate.exists() else (shutil.which("ray") or "ray")


def check_port(port: object, what: str) -> int:
    """A porta, se válida; senão :class:`ClusterError` nomeando para que ela serviria."""
    try:
        return system.check_port(port, what)
    except ValueError as err:
        raise ClusterError(str(err)) from None


def require_free_port(port: int, what: str) -> None:
    """Falha na hora, em português, se a porta é inválida ou já está ocupada nesta máquina."""
    check_port(port, what)
    if system.port_in_use(port):
        raise ClusterError(
            f"A porta {port} ({what}) já está em uso nesta máquina: outro Ray ou outro programa "
            f"já a ocupa. Escolha outra porta (ex.: --port {port + 1}) ou descubra quem a usa "
            f"com `ss -ltnp | grep {port}`."
        )


def split_address(address: str) -> tuple[str, int]:
    """``"IP:PORTA"`` → ``("IP", PORTA)``, com mensagem clara se o formato estiver errado."""
    host, sep, port = str(address).strip().rpartition(":")
    if not sep or not host or not port.isdigit():
        raise ClusterError(
            f"Endereço do nó principal inválido: {address!r}. Use o formato IP:PORTA, "
            "ex.: 192.168.0.10:6379 (o que `ray start --head` imprimiu)."
        )
    return host.strip("[]"), int(port)


def check_head_reachable(address: str, timeout: float = CONNECT_TIMEOUT_S) -> None:
    """Falha em até ``timeout`` s, em português, se ninguém atende no endereço do nó principal."""
    host, port = split_address(address)
    err = system.reachable(host, port, timeout=timeout)
    if err is not None:
        raise ClusterError(
            f"Não encontrei o nó principal (head node) do cluster em {address} "
            f"({getattr(err, 'strerror', None) or err}). Confira: (1) o nó principal foi "
            "iniciado (`ray start --head` na máquina do instrutor); (2) o IP e a porta são os "
            "que ele imprimiu; (3) o firewall da rede libera essa porta."
        ) from err


def run_ray(
    cmd: list[str],
    *,
    timeout: float,
    show_output: bool = True,
    check: bool = True,
    leave_running: bool = False,
):
    """Imprime o comando (para o aluno aprender o ``ray`` de verdade) e o executa com prazo."""
    printable = shlex.join(["ray", *cmd[1:]]) if cmd[0] == ray_executable() else shlex.join(cmd)
    print(f"$ {printable}", flush=True)
    try:
        done = system.run(
            cmd,
            timeout=timeout,
            env=config.ray_env(),
            check=check,
            shown_as=printable,
            leave_running=leave_running,
        )
    except system.CommandError as err:
        raise ClusterError(
            f"{err}\nVeja `ray status` e os logs em /tmp/ray/session_latest/logs."
        ) from None
    if show_output:
        print((done.stdout + done.stderr).strip())
    return done


def wait_for_nodes(count: int, timeout: float = 30) -> int:
    """Espera (no driver já conectado) até o cluster ter ``count`` nós vivos; devolve quantos."""
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ValueError(f"count deve ser um inteiro >= 1 (nós), recebi {count!r}.")
    import ray

    deadline = time.monotonic() + timeout
    while True:
        alive = sum(1 for node in ray.nodes() if node.get("Alive"))
        if alive >= count:
            return alive
        if time.monotonic() > deadline:
            raise ClusterError(
                f"O cluster tem {alive} nó(s) vivo(s), mas eu esperava {count} após {timeout:g} s. "
                "Veja quem entrou com `ray status` e, nos workers que faltam, rode "
                "`ray start --address=IP:PORTA` de novo."
            )
        time.sleep(0.5)


def _libc_prctl():
    """A função ``prctl`` da libc (Linux), carregada no processo pai, antes do ``fork``."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


_PRCTL = _libc_prctl()


def die_with_parent() -> None:
    """(Linux) o nó recebe SIGKILL se o processo que o criou morrer (kernel, pytest...)."""
    if _PRCTL is not None:
        _PRCTL(1, int(signal.SIGKILL), 0, 0, 0)  # 1 = PR_SET_PDEATHSIG
