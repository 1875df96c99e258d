"""Iniciar ou conectar ao Ray a partir de um notebook (:func:`init_ray`), testar o endereço de
um cluster antes (:func:`check_reachable`) e ver os nós vivos (:func:`alive_nodes`)."""

from __future__ import annotations

import logging
import sys
from typing import Any

from labutils import system
from labutils.config import forwarded_env, ray_address, ray_auth_mode
from labutils.system import CONNECT_TIMEOUT_S


def init_ray(
    address: str | None = None,
    *,
    num_cpus: int | None = None,
    runtime_env: dict[str, Any] | None = None,
    dashboard: bool = True,
    quiet: bool = True,
    object_store_mb: int | None = 1024,
) -> Any:
    """Inicia (ou reaproveita) a sessão Ray deste processo e devolve seu contexto.

    ``address``: ``IP:PORTA`` de um cluster; sem ele, ``RAY_ADDRESS`` e, na falta dela, um Ray
    local (o único caso em que ``num_cpus`` e ``object_store_mb`` valem). ``runtime_env`` é
    mesclado com :func:`labutils.config.forwarded_env`. Rodar de novo reaproveita a sessão, e
    ``quiet`` esconde os logs dos workers. Com um endereço, confere antes, em segundos, que o nó
    principal atende e que aceita o token desta máquina.
    """
    address = address or ray_address()
    if address and num_cpus is not None:
        raise ValueError(
            f"num_cpus só vale para o Ray local (recebi num_cpus={num_cpus!r} com o cluster "
            f"{address}): num cluster, cada nó declara seus CPUs em `ray start --num-cpus=N`."
        )
    if num_cpus is not None:
        system.check_int(num_cpus, "num_cpus")
    if object_store_mb is not None:
        system.check_int(object_store_mb, "object_store_mb (MiB)", 64)
    ray = sys.modules.get("ray")
    if ray is not None and ray.is_initialized():
        print(
            "Ray já estava iniciado neste kernel: reaproveitando a sessão (ray.shutdown() recomeça)."
        )
        return ray.get_runtime_context()
    if address:
        check_reachable(address)
        if ray_auth_mode() == "token":  # sem isto, um token errado custa ~20 s e um traceback
            from labutils.cluster.base import check_token_accepted, ensure_auth_token

            check_token_accepted(address, ensure_auth_token(generate=False))
    import ray

    env = dict(runtime_env or {})
    env["env_vars"] = forwarded_env(env.get("env_vars"))
    kwargs: dict[str, Any] = {
        "runtime_env": env,
        "log_to_driver": not quiet,
        "logging_level": logging.WARNING if quiet else logging.INFO,
        # "local" força um Ray novo: sem isso, ray.init() se conectaria sozinho ao último
        # cluster iniciado com `ray start` nesta máquina
        "address": address or "local",
    }
    if not address:
        kwargs.update(
            num_cpus=num_cpus, include_dashboard=dashboard, dashboard_host=system.LOCALHOST
        )
        if object_store_mb is not None:
            kwargs["object_store_memory"] = object_store_mb * 1024**2
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

    Sem isto, ``ray.init`` (e o ``ray start`` de um ``join``) num endereço sem resposta fica
    tentando por muito tempo. ``"auto"`` e endereços sem porta ficam para o próprio Ray.
    """
    host, sep, port = address.split("://", 1)[-1].rpartition(":")
    if not sep or not port.isdigit():
        return
    err = system.reachable(host.strip("[]"), int(port), timeout=timeout)
    if err is not None:
        raise ConnectionError(
            f"Ninguém atende no endereço do nó principal (head node) do cluster Ray {address!r} "
            f"({getattr(err, 'strerror', None) or err}), após até {timeout:g} s. Confira se o "
            "nó principal está no ar (`ray start --head` na máquina do instrutor), se o IP:PORTA "
            "é o que ele imprimiu (ou o de RAY_ADDRESS) e se o firewall não bloqueia a porta."
        ) from err


def alive_nodes() -> list[dict[str, Any]]:
    """Os nós vivos do cluster conectado: ``node_id``, ``ip``, ``head`` (é o nó principal?),
    ``CPU``, ``GPU`` e ``memory_gib``."""
    import ray

    nodes = []
    for node in ray.nodes():
        res = node.get("Resources", {})
        if node.get("Alive"):
            nodes.append(
                {
                    "node_id": node["NodeID"],
                    "ip": node.get("NodeManagerAddress"),
                    "head": "node:__internal_head__" in res,
                    "CPU": float(res.get("CPU", 0.0)),
                    "GPU": float(res.get("GPU", 0.0)),
                    "memory_gib": round(res.get("memory", 0.0) / 1024**3, 1),
                }
            )
    return nodes


def nodes_table() -> Any:
    """Tabela (pandas) dos nós vivos: id, IP, se é o nó principal, CPUs, GPUs e memória."""
    import pandas as pd

    table = pd.DataFrame(
        alive_nodes(), columns=["node_id", "ip", "head", "CPU", "GPU", "memory_gib"]
    )
    table["node_id"] = table["node_id"].str[:12]
    names = {"head": "nó principal", "CPU": "CPUs", "GPU": "GPUs", "memory_gib": "memória (GiB)"}
    return table.rename(columns=names)
