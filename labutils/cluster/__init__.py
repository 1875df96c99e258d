"""Cluster Ray de verdade (lição 04): nó principal (head node), workers, estado e parada.

Onde fica cada coisa:

- :mod:`~labutils.cluster.classroom`: a sala de aula (várias máquinas): :func:`start_head`,
  :func:`join`, :func:`status`, :func:`stop`, invólucros de ``ray start``/``status``/``stop``
  que **imprimem o comando exato** executado;
- :mod:`~labutils.cluster.local`: :class:`LocalCluster`, nó principal + N workers nesta
  máquina (laptop, CI), com o painel em loopback, parando só o que ele mesmo iniciou;
- :mod:`~labutils.cluster.auth`: o token de autenticação do Ray (criar, proteger, ler);
- :mod:`~labutils.cluster.network`: que portas um cluster local abre para a rede, e por quê;
- :mod:`~labutils.cluster.autoscaler`: o autoscaler de verdade numa máquina só (lição 04);
- :mod:`~labutils.cluster.base`: o erro em português, endereços, portas e o executável ``ray``;
- ``python -m labutils.cluster --help``: a linha de comando (:mod:`~labutils.cluster.__main__`).

Seguro por padrão: o painel (dashboard) escuta só em ``127.0.0.1`` a menos que se peça outra
interface, e a autenticação por token do Ray fica ligada (:mod:`labutils.config`).
"""

from labutils.cluster.auth import auth_disabled_notice, auth_token, ensure_auth_token
from labutils.cluster.base import (
    CONNECT_TIMEOUT_S,
    DEFAULT_DASHBOARD_PORT,
    DEFAULT_PORT,
    LOCALHOST,
    ClusterError,
    check_head_reachable,
    ray_executable,
    split_address,
    wait_for_nodes,
)
from labutils.cluster.classroom import (
    CLASSROOM_PORTS,
    head_command,
    join,
    ports_table,
    start_head,
    status,
    stop,
)
from labutils.cluster.local import LocalCluster

__all__ = [
    "CONNECT_TIMEOUT_S",
    "DEFAULT_DASHBOARD_PORT",
    "DEFAULT_PORT",
    "LOCALHOST",
    "ClusterError",
    "LocalCluster",
    "auth_disabled_notice",
    "auth_token",
    "check_head_reachable",
    "ensure_auth_token",
    "CLASSROOM_PORTS",
    "head_command",
    "ports_table",
    "join",
    "ray_executable",
    "split_address",
    "start_head",
    "status",
    "stop",
    "wait_for_nodes",
]
