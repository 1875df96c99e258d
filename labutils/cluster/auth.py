"""O token de autenticação do Ray: garantir que exista, com permissão só do dono, e lê-lo.

O Ray procura o token nesta ordem (veja :func:`labutils.config.token_source`):
``RAY_AUTH_TOKEN`` (o próprio valor), ``RAY_AUTH_TOKEN_PATH`` (um arquivo) e
``~/.ray/auth_token``. O token é um segredo: nada aqui o imprime.
"""

from __future__ import annotations

import stat
from pathlib import Path

from labutils import config
from labutils.cluster.base import ClusterError, ray_executable, run_ray

#: permissão de um arquivo de token: leitura e escrita só para o dono
TOKEN_FILE_MODE = 0o600


def secure_token_file(path: Path) -> bool:
    """Deixa o arquivo do token legível só pelo dono (``0600``); ``True`` se precisou mudar.

    O Ray grava ``~/.ray/auth_token`` com a permissão padrão do sistema (em geral legível por
    todos os usuários da máquina); numa máquina compartilhada, qualquer um copiaria o token.
    """
    mode = stat.S_IMODE(path.stat().st_mode)
    if mode & 0o077 == 0:
        return False
    try:
        path.chmod(TOKEN_FILE_MODE)
    except OSError as err:
        raise ClusterError(
            f"O arquivo do token {path} pode ser lido por outros usuários (permissão "
            f"{mode:o}) e não consegui mudá-la ({err.strerror or err}). Rode `chmod 600 {path}`."
        ) from err
    return True


def ensure_auth_token() -> str:
    """Garante um token de autenticação do Ray e diz de onde ele vem (sem mostrá-lo).

    Um arquivo de token que já existe fica com permissão ``0600``. Sem nenhum token, gera um
    com ``ray get-auth-token --generate`` (a saída, que contém o token, não é impressa).
    """
    kind, path = config.token_source()
    if kind == "env":
        return "variável RAY_AUTH_TOKEN"
    assert path is not None
    if kind == "path_env" and not path.is_file():
        raise ClusterError(
            f"RAY_AUTH_TOKEN_PATH={str(path)!r} não aponta para um arquivo: copie o token do nó "
            "principal (~/.ray/auth_token na máquina do instrutor) para esse caminho."
        )
    if not path.is_file():
        run_ray([ray_executable(), "get-auth-token", "--generate"], timeout=30, show_output=False)
    if path.is_file():
        secure_token_file(path)
    return str(path)


def require_head_token() -> str:
    """O token que o nó principal deu a esta máquina; diz de onde vem (sem mostrá-lo).

    Nunca gera um token: um token criado numa máquina de aluno é diferente do token do nó
    principal, e o ``ray start --address`` só falharia depois, com um traceback do Ray.
    Sem token, :class:`ClusterError` na hora, dizendo onde ele está e como trazê-lo.
    """
    kind, path = config.token_source()
    if kind == "env":
        return "variável RAY_AUTH_TOKEN"
    assert path is not None
    if path.is_file():
        secure_token_file(path)
        return str(path)
    where = "RAY_AUTH_TOKEN_PATH aponta para" if kind == "path_env" else "procurei em"
    raise ClusterError(
        f"Esta máquina ainda não tem o token do cluster ({where} {path} e na variável "
        "RAY_AUTH_TOKEN). Não vou gerar um aqui: o nó principal recusaria um token novo.\n"
        "O token fica no nó principal (a máquina do instrutor), no arquivo ~/.ray/auth_token. "
        "Traga-o de um destes jeitos e rode o mesmo comando de novo:\n"
        f"  a) copie o arquivo para {path} e deixe-o só seu: chmod 600 {path}\n"
        "  b) ou, neste terminal: export RAY_AUTH_TOKEN='<conteúdo do arquivo do instrutor>'\n"
        "Não cole o token num notebook nem num repositório: ele dá acesso ao cluster."
    )


def token_refused(output: str) -> bool:
    """``True`` se a saída de um comando ``ray`` diz que o nó principal recusou o token."""
    return "InvalidAuthToken" in output or "AuthenticationError" in output


def auth_token() -> str:
    """O token que este processo usaria. É um segredo: não o imprima nem o salve num notebook."""
    token = config.token_from_env()
    if token:
        return token
    _, path = config.token_source()
    try:
        return path.read_text().strip()  # type: ignore[union-attr]
    except OSError as err:
        raise ClusterError(
            f"Não achei o token de autenticação do Ray em {path}: gere um com "
            "`ray get-auth-token --generate` (no nó principal) ou copie o dele para esse caminho."
        ) from err


def auth_disabled_notice() -> str | None:
    """Imprime (e devolve) o aviso em português se ``RAY_AUTH_MODE=disabled`` neste ambiente."""
    warning = config.auth_disabled_warning()
    if warning:
        print(f"ATENÇÃO: {warning}", flush=True)
    return warning
