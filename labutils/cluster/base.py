"""O que todo o pacote ``cluster`` usa: o erro, o ``ray`` rodado mostrando o comando, endereços,
portas, o token de autenticação e a espera pelos nós."""

from __future__ import annotations

import ctypes
import shlex
import signal
import stat
import sys
import time

from labutils import config, system
from labutils.raytools import alive_nodes, bring_token, parse_address, ray_executable

DEFAULT_PORT = 6379
DEFAULT_DASHBOARD_PORT = 8265


class ClusterError(RuntimeError):
    """Erro de configuração ou de conexão do cluster, com mensagem em português."""


def run_ray(cmd: list[str], *, timeout: float, show_output: bool = True, **run):
    """Imprime o comando (o aluno aprende o ``ray`` de verdade) e o roda com :func:`system.run`."""
    printable = shlex.join(["ray", *cmd[1:]]) if cmd[0] == ray_executable() else shlex.join(cmd)
    print(f"$ {printable}", flush=True)
    try:
        done = system.run(cmd, timeout=timeout, env=config.ray_env(), shown_as=printable, **run)
    except system.CommandError as err:
        raise ClusterError(
            f"{err}\nVeja `ray status` e os logs em /tmp/ray/session_latest/logs."
        ) from None
    if show_output:
        print((done.stdout + done.stderr).strip())
    return done


def require_free_port(port: int, what: str) -> None:
    """:class:`ClusterError` na hora se a porta é inválida ou já está ocupada nesta máquina."""
    system.check_int(port, f"A porta {what}", 1, 65535, ClusterError)
    if system.port_in_use(port):
        raise ClusterError(
            f"A porta {port} ({what}) já está em uso nesta máquina (outro Ray?). Escolha outra "
            f"(ex.: --port {port + 1}) ou veja quem a usa: `ss -ltnp | grep {port}`."
        )


def split_address(address: str) -> tuple[str, int]:
    """``"IP:PORTA"`` → ``("IP", PORTA)``, ou :class:`ClusterError` que mostra o formato."""
    if (parsed := parse_address(address)) is None:
        raise ClusterError(
            f"Endereço do nó principal inválido: {address!r}. Use o formato IP:PORTA, "
            "ex.: 192.168.0.10:6379 (o que `ray start --head` imprimiu)."
        )
    return parsed


def wait_for_nodes(count: int, timeout: float = 30) -> int:
    """Espera (no driver já conectado) até o cluster ter ``count`` nós vivos; devolve quantos."""
    deadline = time.monotonic() + timeout
    while (alive := len(alive_nodes())) < count:
        if time.monotonic() > deadline:
            raise ClusterError(
                f"O cluster tem {alive} nó(s) vivo(s) após {timeout:g} s, esperava {count}: veja "
                "`ray status` e, nos que faltam, rode `ray start --address=IP:PORTA` de novo."
            )
        time.sleep(0.5)
    return alive


_PRCTL = ctypes.CDLL(None).prctl if sys.platform.startswith("linux") else None


def die_with_parent() -> None:
    """(Linux) o nó recebe SIGKILL se o processo que o criou morrer (kernel, pytest...)."""
    if _PRCTL is not None:
        _PRCTL(1, int(signal.SIGKILL), 0, 0, 0)  # 1 = PR_SET_PDEATHSIG


# ---------------------------------------------------------------- o token (um segredo: nada aqui o imprime)


def ensure_auth_token(*, generate: bool = True) -> str:
    """Garante o token do Ray, legível só pelo dono (o Ray o grava legível por todos), e diz de
    onde vem. Sem ele, ``generate`` (o nó principal) gera um; numa máquina de aluno, um token
    novo seria recusado: :class:`ClusterError` na hora, dizendo como trazer o do nó principal."""
    kind, path = config.token_source()
    if kind == "env":
        return "variável RAY_AUTH_TOKEN"
    if not path.is_file() and generate and kind == "path":
        run_ray([ray_executable(), "get-auth-token", "--generate"], timeout=30, show_output=False)
    if not path.is_file():
        where = "RAY_AUTH_TOKEN_PATH aponta para" if kind == "path_env" else "procurei em"
        raise ClusterError(
            f"Esta máquina ainda não tem o token do cluster ({where} {path} e na variável "
            f"RAY_AUTH_TOKEN); um novo seria recusado. {bring_token(path)}"
        )
    mode = stat.S_IMODE(path.stat().st_mode)
    if mode & 0o077:
        try:
            path.chmod(0o600)
        except OSError as err:
            raise ClusterError(
                f"O arquivo do token {path} pode ser lido por outros usuários (permissão "
                f"{mode:o}) e não consegui mudá-la ({err.strerror or err}). Rode `chmod 600 {path}`."
            ) from err
    return str(path)


def auth_token() -> str:
    """O token que este processo usaria. É um segredo: não o imprima nem o salve num notebook."""
    kind, path = config.token_source()
    try:
        return config.env("RAY_AUTH_TOKEN") if kind == "env" else path.read_text().strip()
    except OSError as err:
        raise ClusterError(
            f"Não achei o token de autenticação do Ray em {path}: no nó principal, gere um com "
            f"`ray get-auth-token --generate`; numa máquina de aluno: {bring_token(path)}"
        ) from err
