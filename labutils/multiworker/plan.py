"""Planejar os workers ANTES de treinar: o cluster comporta o que foi pedido?

Se não comporta, o Ray Train ficaria esperando para sempre por recursos que não existem:
:func:`plan_workers` falha na hora, em português, e decide ``use_gpu``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class WorkerPlan:
    """Quantos workers, com quais recursos, e em quais nós eles cabem."""

    num_workers: int
    use_gpu: bool
    resources_per_worker: dict[str, float]
    nodes: list[dict[str, Any]] = field(default_factory=list)
    #: quantos workers desses o cluster comporta ao todo
    capacity: int = 0
    #: se um nó qualquer cair, os ``num_workers`` ainda cabem nos nós que sobram?
    survives_node_loss: bool = False


def _alive_nodes() -> list[dict[str, Any]]:
    import ray

    return [
        {
            "node_id": node["NodeID"],
            "ip": node.get("NodeManagerAddress"),
            "CPU": float(node.get("Resources", {}).get("CPU", 0.0)),
            "GPU": float(node.get("Resources", {}).get("GPU", 0.0)),
        }
        for node in ray.nodes()
        if node.get("Alive")
    ]


def _fits(nodes: list[dict[str, Any]], need: dict[str, float]) -> int:
    """Quantos workers com os recursos ``need`` cabem, somando nó a nó."""
    total = 0
    for node in nodes:
        per_node = [int(node.get(k, 0.0) // v) for k, v in need.items() if v > 0]
        total += min(per_node) if per_node else 0
    return total


def plan_workers(
    num_workers: int,
    *,
    use_gpu: bool | None = None,
    cpus_per_worker: float = 1.0,
    wait_s: float = 15.0,
) -> WorkerPlan:
    """Confere se o cluster Ray conectado comporta ``num_workers`` workers e devolve o plano.

    ``use_gpu=None`` usa GPU quando o cluster tem ao menos uma por worker. Falha na hora
    (``RuntimeError``, em português) quando os workers não cabem no cluster; se cabem mas os
    recursos estão ocupados, espera até ``wait_s`` segundos antes de falhar.
    """
    import ray

    if not isinstance(num_workers, int) or isinstance(num_workers, bool) or num_workers < 1:
        raise ValueError(f"num_workers deve ser um inteiro ≥ 1, recebi {num_workers!r}.")
    if isinstance(cpus_per_worker, bool) or not isinstance(cpus_per_worker, int | float):
        raise ValueError(f"cpus_per_worker deve ser um número, recebi {cpus_per_worker!r}.")
    if not cpus_per_worker > 0:
        raise ValueError(f"cpus_per_worker deve ser positivo, recebi {cpus_per_worker!r}.")
    if not isinstance(wait_s, int | float) or wait_s < 0:
        raise ValueError(f"wait_s deve ser um número de segundos >= 0, recebi {wait_s!r}.")
    if not ray.is_initialized():
        raise RuntimeError("O Ray não está iniciado: rode antes a célula com init_ray(...).")
    nodes = _alive_nodes()
    gpus = sum(n["GPU"] for n in nodes)
    if use_gpu is None:
        use_gpu = gpus >= num_workers
    need = {"CPU": float(cpus_per_worker)}
    if use_gpu:
        need["GPU"] = 1.0
    fits = _fits(nodes, need)
    listing = ", ".join(f"{n['ip']} ({n['CPU']:g} CPU, {n['GPU']:g} GPU)" for n in nodes)
    if fits < num_workers:
        raise RuntimeError(
            f"Pedido: {num_workers} workers com {need} cada, mas o cluster só comporta {fits} "
            f"({len(nodes)} nó(s): {listing}).\nO Ray Train ficaria esperando para sempre. "
            "Diminua num_workers, use menos CPU por worker (cpus_per_worker=0.5), "
            + ("use use_gpu=False, " if use_gpu else "")
            + "ou junte mais nós ao cluster (`ray start --address=...`)."
        )
    deadline = time.monotonic() + wait_s
    while True:  # cabe no cluster; os recursos estão livres agora?
        free = ray.available_resources()
        if all(free.get(k, 0.0) + 1e-9 >= v * num_workers for k, v in need.items()):
            break
        if time.monotonic() > deadline:
            raise RuntimeError(
                f"O cluster comporta {num_workers} workers, mas os recursos estão ocupados agora "
                f"(livres: CPU={free.get('CPU', 0):g}, GPU={free.get('GPU', 0):g}). Espere os "
                "outros trabalhos terminarem (veja o dashboard) e tente de novo."
            )
        time.sleep(0.5)
    # para recomeçar depois da queda de um nó, os workers têm de caber sem o nó mais forte
    without_biggest = sorted(nodes, key=lambda n: _fits([n], need))[:-1]
    survives = _fits(without_biggest, need) >= num_workers
    return WorkerPlan(num_workers, bool(use_gpu), need, nodes, fits, survives)
