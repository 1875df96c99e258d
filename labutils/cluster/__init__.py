"""Cluster Ray de verdade (lição 04): ``classroom`` (a sala de aula), ``local`` (``LocalCluster``:
vários nós nesta máquina), ``network`` (o que um cluster local abre para a rede), ``base`` e a
linha de comando ``python -m labutils.cluster``. Seguro por padrão: o painel só em ``127.0.0.1``
e a autenticação por token do Ray ligada.
"""

from labutils.cluster.base import ClusterError, auth_token, wait_for_nodes
from labutils.cluster.classroom import CLASSROOM_PORTS, join, ports_table, start_head, status, stop
from labutils.cluster.local import LocalCluster

__all__ = [
    "CLASSROOM_PORTS",
    "ClusterError",
    "LocalCluster",
    "auth_token",
    "join",
    "ports_table",
    "start_head",
    "status",
    "stop",
    "wait_for_nodes",
]
