"""Cluster Ray de verdade (lição 04): ``classroom`` (a sala de aula: ``start_head``, ``join``,
``status``, ``stop``, que imprimem o comando ``ray`` exato), ``local`` (``LocalCluster``: vários
nós nesta máquina; o autoscaler da lição 04 roda num deles), ``network`` (o que um cluster local
abre para a rede), ``base`` (o erro, o ``ray``, endereços, portas e o token) e a linha de comando
``python -m labutils.cluster``.

Seguro por padrão: o painel escuta só em ``127.0.0.1`` a menos que se peça outra interface, e a
autenticação por token do Ray fica ligada (:mod:`labutils.config`).
"""

from labutils.cluster.base import (
    ClusterError,
    auth_token,
    ensure_auth_token,
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
    "CLASSROOM_PORTS",
    "ClusterError",
    "LocalCluster",
    "auth_token",
    "ensure_auth_token",
    "head_command",
    "join",
    "ports_table",
    "split_address",
    "start_head",
    "status",
    "stop",
    "wait_for_nodes",
]
