"""Iniciar ou conectar ao Ray com padrões sensatos para um notebook.

- ``init_ray()`` sem argumentos inicia um Ray local (laptop ou CI);
- ``init_ray("IP:PORTA")`` ou a variável ``RAY_ADDRESS`` conecta a um cluster já em execução;
- rodar a célula de novo não dá erro "already initialized": a sessão existente é reaproveitada;
- os logs dos workers não poluem o notebook (``quiet=True``).
"""

from __future__ import annotations

import logging
import sys
from typing import Any

from labutils import system
from labutils.config import forwarded_env, ray_address

CONNECT_TIMEOUT_S = system.CONNECT_TIMEOUT_S  # um só prazo (labutils.system)

_LOCAL_OBJECT_STORE_MB = 1024


def init_ray(
    address: str | None = None,
    *,
    num_cpus: int | None = None,
    runtime_env: dict[str, Any] | None = None,
    dashboard: bool = True,
    quiet: bool = True,
    object_store_mb: int | None = _LOCAL_OBJECT_STORE_MB,
) -> Any:
    """Inicia (ou reaproveita) a sessão Ray deste processo e devolve seu contexto.

    ``address``: endereço ``IP:PORTA`` de um cluster; sem ele, usa ``RAY_ADDRESS`` e, na falta
    dela, inicia um Ray local. ``num_cpus`` e ``object_store_mb`` só valem para o Ray local.
    ``runtime_env`` é mesclado com as variáveis de :func:`labutils.config.forwarded_env`.

    Um endereço em que ninguém atende (nó principal desligado, IP errado, firewall) falha em
    até :data:`CONNECT_TIMEOUT_S` segundos com ``ConnectionError`` em português.
    """
    address = address or ray_address()
    if address and num_cpus is not None:
        raise ValueError(
            f"num_cpus só vale para o Ray local (recebi num_cpus={num_cpus!r} com o cluster "
            f"{address}): num cluster, cada nó declara seus CPUs em `ray start --num-cpus=N`."
        )
    if num_cpus is not None and (
        isinstance(num_cpus, bool) or not isinstance(num_cpus, int) or num_cpus < 1
    ):
        raise ValueError(f"num_cpus deve ser um inteiro >= 1, recebi {num_cpus!r}.")
    if object_store_mb is not None and not (
        isinstance(object_store_mb, int | float) and object_store_mb >= 64
    ):
        raise ValueError(
            f"object_store_mb deve ser um número de MiB >= 64, recebi {object_store_mb!r}."
        )
    ray = sys.modules.get("ray")
    if ray is not None and ray.is_initialized():
        print(
            "Ray já estava iniciado neste kernel: reaproveitando a sessão (ray.shutdown() recomeça)."
        )
        return ray.get_runtime_context()
    if address:
        check_reachable(address)
    import ray

    env = dict(runtime_env or {})
    env["env_vars"] = forwarded_env(env.get("env_vars"))
    kwargs: dict[str, Any] = {
        "runtime_env": env,
        "log_to_driver": not quiet,
        "logging_level": logging.WARNING if quiet else logging.INFO,
    }
    if address:
        kwargs["address"] = address
    else:
        # "local" força um Ray novo neste processo: sem isso, ray.init() se conectaria
        # sozinho ao último cluster iniciado com `ray start` nesta máquina.
        kwargs["address"] = "local"
        kwargs["num_cpus"] = num_cpus
        kwargs["include_dashboard"] = dashboard
        kwargs["dashboard_host"] = "127.0.0.1"
        if object_store_mb is not None:
            kwargs["object_store_memory"] = int(object_store_mb) * 1024**2
    try:
        return ray.init(**kwargs)
    except ConnectionError as err:
        raise ConnectionError(
            f"Não foi possível conectar ao cluster Ray em {address!r}: {err}. "
            "Confira se o nó principal está no ar (`ray status`), o endereço IP:PORTA e, com "
            "autenticação por token, se RAY_AUTH_MODE=token e o token (~/.ray/auth_token) "
            "são os mesmos do nó principal."
        ) from err


def check_reachable(address: str, timeout: float = CONNECT_TIMEOUT_S) -> None:
    """``ConnectionError`` em português se ninguém atende em ``address`` em ``timeout`` s.

    Sem esta verificação, ``ray.init`` num endereço sem resposta fica tentando por muito
    tempo. ``"auto"`` (o último cluster desta máquina) é deixado para o próprio Ray.
    """
    target = address.split("://", 1)[-1]
    host, sep, port = target.rpartition(":")
    if address == "auto" or not sep or not port.isdigit():
        return
    err = system.reachable(host.strip("[]"), int(port), timeout=timeout)
    if err is not None:
        raise ConnectionError(
            f"Ninguém atende no endereço do cluster Ray {address!r} "
            f"({getattr(err, 'strerror', None) or err}), após até {timeout:g} s. Confira se o "
            "nó principal (head node) está no ar, se o IP:PORTA é o que ele imprimiu (ou o de "
            "RAY_ADDRESS) e se o firewall libera a porta. Sem RAY_ADDRESS, init_ray() sobe um "
            "Ray local."
        ) from err


def nodes_table() -> Any:
    """Tabela (pandas) dos nós vivos do cluster: id, IP, se é o nó principal, CPUs e memória."""
    import pandas as pd
    import ray

    rows = []
    for node in ray.nodes():
        if not node.get("Alive"):
            continue
        res = node.get("Resources", {})
        rows.append(
            {
                "node_id": node["NodeID"][:12],
                "ip": node.get("NodeManagerAddress"),
                "nó principal": "node:__internal_head__" in res,
                "CPUs": res.get("CPU", 0.0),
                "GPUs": res.get("GPU", 0.0),
                "memória (GiB)": round(res.get("memory", 0.0) / 1024**3, 1),
            }
        )
    return pd.DataFrame(rows)
