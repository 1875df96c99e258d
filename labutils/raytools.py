"""Iniciar ou conectar ao Ray a partir de um notebook (:func:`init_ray`), conferir um cluster
antes (:func:`check_cluster`: atende, aceita o token, mesmas versões) e ver os nós vivos
(:func:`alive_nodes`)."""

from __future__ import annotations

import json
import logging
import platform
import shutil
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import Any

from labutils import system
from labutils.config import (
    allow_macos_cluster,
    env,
    forwarded_env,
    python_match_level,
    ray_env,
    token_source,
)
from labutils.system import CONNECT_TIMEOUT_S


def init_ray(
    address: str | None = None,
    *,
    num_cpus: int | None = None,
    runtime_env: dict[str, Any] | None = None,
    dashboard: bool = True,
) -> Any:
    """Inicia (ou reaproveita) a sessão Ray deste processo, sem os logs dos workers: o cluster
    em ``address`` ou ``RAY_ADDRESS`` (conferido antes, em segundos: atende e aceita o token),
    senão um Ray local de ``num_cpus``; ``runtime_env`` leva o :func:`config.forwarded_env`."""
    address = address or env("RAY_ADDRESS")
    if address and num_cpus is not None:
        raise ValueError(
            f"num_cpus só vale para o Ray local (recebi num_cpus={num_cpus!r} com o cluster "
            f"{address}): num cluster, cada nó declara seus CPUs em `ray start --num-cpus=N`."
        )
    if num_cpus is not None:
        system.check_int(num_cpus, "num_cpus")
    ray = sys.modules.get("ray")
    if ray is not None and ray.is_initialized():
        print(
            "Ray já estava iniciado neste kernel: reaproveitando a sessão (ray.shutdown() recomeça)."
        )
        return ray.get_runtime_context()
    if address:
        check_cluster(address)
        allow_macos_cluster()  # antes do `import ray`, que lê a variável uma vez
    import ray

    runtime = dict(runtime_env or {})
    runtime["env_vars"] = forwarded_env(runtime.get("env_vars"))
    # "local" força um Ray novo: sem isso, ray.init() se conectaria sozinho ao último cluster
    # iniciado com `ray start` nesta máquina
    kwargs: dict[str, Any] = {"runtime_env": runtime, "address": address or "local"}
    if not address:  # 1 GiB de armazém de objetos; o painel só em 127.0.0.1
        kwargs.update(num_cpus=num_cpus, include_dashboard=dashboard, object_store_memory=2**30)
        kwargs.update(dashboard_host=system.LOCALHOST)
    try:
        return ray.init(**kwargs, log_to_driver=False, logging_level=logging.WARNING)
    except ConnectionError as err:
        raise ConnectionError(
            f"Não foi possível conectar ao cluster Ray em {address!r}: {err}. Confira se o nó "
            "principal está no ar (`ray status`) e o IP:PORTA. " + bring_token()
        ) from err


def parse_address(address: str) -> tuple[str, int] | None:
    """``"IP:PORTA"`` (ou ``"ray://IP:PORTA"``) → ``("IP", PORTA)``; ``None`` se falta a porta."""
    host, sep, port = str(address).strip().split("://", 1)[-1].rpartition(":")
    if not sep or not host or not port.isdigit():
        return None
    return host.strip("[]"), int(port)


def check_reachable(address: str, timeout: float = CONNECT_TIMEOUT_S) -> None:
    """``ConnectionError`` se ninguém atende em ``address`` em ``timeout`` s (o Ray tentaria por
    muito tempo); sem porta, fica para o Ray."""
    if (parsed := parse_address(address)) is None:
        return
    err = system.reachable(*parsed, timeout=timeout)
    if err is not None:
        raise ConnectionError(
            f"Ninguém atende no endereço do nó principal do cluster Ray {address!r} "
            f"({err.strerror or err}) em {timeout:g} s. Confira se ele está no ar (`ray start "
            "--head` na máquina do instrutor), o IP:PORTA que ele imprimiu e o firewall."
        ) from err


def ray_executable() -> str:
    """O executável ``ray`` do mesmo ambiente Python deste processo."""
    candidate = Path(sys.executable).with_name("ray")
    return str(candidate) if candidate.exists() else (shutil.which("ray") or "ray")


#: Lê o que o nó principal gravou no GCS ao subir (versões do Ray e do Python), como o próprio
#: `ray status` faz (ray/scripts/scripts.py, `_check_ray_version`); num processo à parte, com o
#: ambiente de um `ray start`, para não deixar nada do Ray neste.
_HEAD_PROBE = """
import json, sys
import ray._raylet
from ray._common.usage.usage_lib import get_cluster_metadata
meta = get_cluster_metadata(ray._raylet.GcsClient(address=sys.argv[1]))
print(json.dumps({key: meta.get(key) for key in ("ray_version", "python_version")}))
"""


def check_cluster(address: str) -> dict[str, str] | None:
    """Antes de o Ray tentar (~20 s e um traceback), em segundos: o nó principal em ``address``
    atende, aceita o token desta máquina e roda o mesmo Ray e Python X.Y (``ConnectionError``
    em português, com o conserto). Devolve as versões dele, ou ``None`` se não deu para lê-las."""
    check_reachable(address)
    probe = system.run(
        [sys.executable, "-c", _HEAD_PROBE, address], timeout=30, env=ray_env(), check=False
    )
    out = probe.stdout + probe.stderr
    if probe.returncode != 0:
        if env("RAY_AUTH_MODE") == "token" and (
            "InvalidAuthToken" in out or "AuthenticationError" in out
        ):
            raise ConnectionError(_token_refused(address))
        return None  # o resto (um nó principal ainda subindo...) fica com o Ray
    head = json.loads(out.strip().splitlines()[-1])
    if problem := version_mismatch(head, local_versions(), python_match_level()):
        raise ConnectionError(f"O nó principal em {address} {problem}")
    return head


def local_versions() -> dict[str, str]:
    """As versões deste processo, no formato do nó principal (sem importar o Ray)."""
    return {"ray_version": metadata.version("ray"), "python_version": platform.python_version()}


def version_mismatch(head: dict[str, str], here: dict[str, str], level: str) -> str | None:
    """O que impede esta máquina de entrar no cluster de ``head``, e o conserto; ``None`` se
    nada (o Python igual até o ``level``, ``"minor"`` ou ``"patch"``, e o mesmo Ray)."""
    digits = 2 if level == "minor" else 3
    want_py = ".".join(head["python_version"].split(".")[:digits])
    same_py = here["python_version"].split(".")[:digits] == want_py.split(".")
    if same_py and here["ray_version"] == head["ray_version"]:
        return None
    text = (
        f"roda Python {head['python_version']} e Ray {head['ray_version']}; esta máquina, "
        f"Python {here['python_version']} e Ray {here['ray_version']}. O Ray só junta máquinas "
        f"com o mesmo Ray e o mesmo Python {want_py}."
    )
    if not same_py:
        minor = ".".join(head["python_version"].split(".")[:2])
        text += (
            f"\nRefaça o ambiente desta máquina com o Python {want_py}: `rm -rf .venv && make lab "
            f"PYTHON=python{minor}` (como ter esse Python: «O mesmo Python e o mesmo Ray em toda a "
            "sala», em docs/instrutor/licoes_00_04_06.md)."
        )
    if here["ray_version"] != head["ray_version"]:
        text += (
            f"\nInstale o Ray {head['ray_version']}: traga o laboratório da versão do instrutor "
            "(`git pull`) e rode `make setup`, que instala as versões fixadas no pyproject.toml."
        )
    return text


def bring_token(
    path: Path | str = "~/.ray/auth_token", then: str = "rode o mesmo comando de novo"
) -> str:
    """Como uma máquina de aluno recebe o token do nó principal: o mesmo conselho em todo lugar."""
    return (
        f"Traga o ~/.ray/auth_token do nó principal (a máquina do instrutor) e {then}:\n"
        f"  a) copie o arquivo para {path} e deixe-o só seu: chmod 600 {path}\n"
        "  b) ou, neste terminal: export RAY_AUTH_TOKEN='<conteúdo do arquivo do instrutor>'\n"
        "Não cole o token num notebook nem num repositório: ele dá acesso ao cluster."
    )


def _token_refused(address: str) -> str:
    kind, path = token_source()
    if kind == "env":
        source = "a variável RAY_AUTH_TOKEN"
    else:
        source = str(path) if path.is_file() else f"nenhum: {path} não existe"
    target = path or "~/.ray/auth_token"
    return f"O nó principal em {address} recusou o token desta máquina ({source}). " + bring_token(
        target
    )


def alive_nodes() -> list[dict[str, Any]]:
    """Os nós vivos: ``node_id``, ``ip``, ``head``, ``CPU``, ``GPU`` e ``memory_gib``."""
    import ray

    return [
        {
            "node_id": node["NodeID"],
            "ip": node.get("NodeManagerAddress"),
            "head": "node:__internal_head__" in (res := node.get("Resources", {})),
            "CPU": float(res.get("CPU", 0.0)),
            "GPU": float(res.get("GPU", 0.0)),
            "memory_gib": round(res.get("memory", 0.0) / 1024**3, 1),
        }
        for node in ray.nodes()
        if node.get("Alive")
    ]


def wait_for_free(need: dict[str, float], wait_s: float) -> tuple[bool, dict[str, float]]:
    """Espera até ``wait_s`` s que ``ray.available_resources()`` cubra ``need`` (recurso →
    quantidade): ``(coube, os livres lidos por último)``. O Ray demora a ver os recursos que
    acabaram de ser liberados; quem chama decide a mensagem se não couber."""
    import ray

    deadline = time.monotonic() + wait_s
    while True:
        free = ray.available_resources()
        if all(free.get(k, 0.0) + 1e-9 >= v for k, v in need.items()):
            return True, free
        if time.monotonic() >= deadline:
            return False, free
        time.sleep(0.2)


def nodes_table() -> Any:
    """Tabela (pandas) dos nós vivos: id, IP, se é o nó principal, CPUs, GPUs e memória."""
    import pandas as pd

    table = pd.DataFrame(
        alive_nodes(), columns=["node_id", "ip", "head", "CPU", "GPU", "memory_gib"]
    )
    table["node_id"] = table["node_id"].str[:12]
    names = {"head": "nó principal", "CPU": "CPUs", "GPU": "GPUs", "memory_gib": "memória (GiB)"}
    return table.rename(columns=names)
