"""O autoscaler do Ray de verdade, numa máquina só (lição 04).

O provedor de nós de teste do Ray (``fake_multinode``), em vez de pedir máquinas a uma nuvem,
inicia nós Ray **nesta** máquina; o resto é o autoscaler de produção (lê a fila de pedidos,
pede nós, remove os ociosos). Não se usa ``ray.cluster_utils.AutoscalingCluster``: no Ray 2.60
ele lê um ``example.yaml`` que o pacote não traz e roda ``ray stop --force``, que derrubaria o
Ray de todos nesta máquina. Aqui a mesma receita (``--autoscaling-config`` com
``RAY_FAKE_CLUSTER=1``) roda num :class:`~labutils.cluster.local.LocalCluster`, que para só o
que iniciou, inclusive os nós do autoscaler (filhos do nó principal).
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from dataclasses import dataclass, field

from labutils import system
from labutils.cluster.base import ClusterError
from labutils.cluster.local import LocalCluster
from labutils.raytools import alive_nodes

#: campos que o formato exige e que o provedor local não usa
_UNUSED_LISTS = (
    "initialization_commands setup_commands head_setup_commands worker_setup_commands "
    "head_start_ray_commands worker_start_ray_commands cluster_synced_files rsync_exclude "
    "rsync_filter"
).split()


@dataclass
class AutoscalerRun:
    """O que a demonstração mediu: os nós vivos ao longo do tempo e os tempos de cada fase."""

    #: ``(segundos desde o envio das tarefas, nós vivos)``
    samples: list[tuple[float, int]] = field(default_factory=list)
    #: segundos até subir o nó principal, até o 1º worker entrar, e até voltar só ao principal
    head_start_s: float = 0.0
    first_scale_up_s: float | None = None
    scale_down_s: float | None = None
    #: PIDs de todos os processos que o cluster da demonstração teve (todos parados no fim)
    pids: set[int] = field(default_factory=set)
    #: os desses PIDs ainda vivos depois de parar o cluster (esperado: nenhum)
    leftovers: set[int] = field(default_factory=set)

    @property
    def peak(self) -> int:
        return max((n for _, n in self.samples), default=0)

    @property
    def final(self) -> int:
        return self.samples[-1][1] if self.samples else 0


def autoscaling_config(gcs_address: str, max_workers: int, idle_timeout_s: float) -> dict:
    """A configuração do cluster (o mesmo formato do YAML de ``ray up``), com o provedor local.

    Numa nuvem, ``provider`` seria ``aws``/``gcp``/``azure`` (ou o KubeRay no Kubernetes) e
    ``node_config`` diria o tipo de máquina; o resto (tipos de nó, limites, ociosidade) é igual.
    """
    return {
        "cluster_name": "labutils_autoscaler",
        "max_workers": max_workers,
        "provider": {
            "type": "fake_multinode",
            "use_node_id_as_ip": True,
            "disable_node_updaters": True,
            "disable_launch_config_check": True,
            "gcs_address": gcs_address,
        },
        "available_node_types": {
            "ray.head.default": {"resources": {}, "node_config": {}, "max_workers": 0},
            "ray.worker.cpu": {
                "resources": {"CPU": 1, "object_store_memory": 100 * 1024**2},
                "node_config": {},
                "min_workers": 0,
                "max_workers": max_workers,
            },
        },
        "head_node_type": "ray.head.default",
        "idle_timeout_minutes": idle_timeout_s / 60,
        "upscaling_speed": 1.0,
        "auth": {},
        "docker": {},
        **dict.fromkeys(_UNUSED_LISTS, []),
        "file_mounts": {},
        "file_mounts_sync_continuously": False,
    }


def autoscaling_demo(
    *,
    max_workers: int = 2,
    task_s: float = 4.0,
    idle_timeout_s: float = 6.0,
    timeout_s: float = 150.0,
    poll_s: float = 1.0,
    verbose: bool = True,
) -> AutoscalerRun:
    """Sobe um nó principal **com 0 CPUs** e o autoscaler; envia ``max_workers`` tarefas de
    1 CPU (que só cabem em workers); mede os nós vivos até o autoscaler remover os ociosos.

    Conecta este processo ao cluster (``ray.init``) e desconecta no fim; tudo o que iniciou é
    parado mesmo se algo falhar. ``timeout_s`` limita a demonstração inteira.
    """
    system.check_int(max_workers, "max_workers")
    system.check_seconds(task_s, "task_s")
    import ray

    if ray.is_initialized():
        raise ClusterError(
            "Este processo já está conectado a um Ray: rode `ray.shutdown()` antes da "
            "demonstração do autoscaler (ela sobe e conecta o seu próprio cluster)."
        )
    run = AutoscalerRun()
    t0 = time.monotonic()
    deadline = t0 + timeout_s
    lc = LocalCluster(
        num_workers=0,
        head_cpus=0,
        head_env={"RAY_FAKE_CLUSTER": "1", "AUTOSCALER_UPDATE_INTERVAL_S": "1"},
        verbose=verbose,
    )
    config_path = None
    try:
        config = autoscaling_config(lc.address, max_workers, idle_timeout_s)
        fd, config_path = tempfile.mkstemp(prefix="raylab-autoscaler-", suffix=".json")
        with os.fdopen(fd, "w") as out:
            json.dump(config, out)
        lc.head_args.append(f"--autoscaling-config={config_path}")
        lc.start()
        run.head_start_s = time.monotonic() - t0
        ray.init(address=lc.address, log_to_driver=False)

        @ray.remote(num_cpus=1)
        def work(seconds: float) -> None:
            time.sleep(seconds)

        t_work = time.monotonic()
        refs = [work.remote(task_s) for _ in range(max_workers)]
        pending = list(refs)
        while True:
            now = time.monotonic()
            alive = len(alive_nodes())
            run.samples.append((round(now - t_work, 1), alive))
            if alive > 1 and run.first_scale_up_s is None:
                run.first_scale_up_s = now - t_work
            if pending:
                _, pending = ray.wait(pending, num_returns=len(pending), timeout=0)
            elif alive == 1 and run.first_scale_up_s is not None:
                run.scale_down_s = now - t_work
                break
            if now > deadline:
                raise ClusterError(
                    f"O autoscaler não completou o ciclo em {timeout_s:g} s (nós vivos: "
                    f"{[n for _, n in run.samples][-10:]}). Máquina sobrecarregada? Tente de novo "
                    "com timeout_s maior."
                )
            time.sleep(poll_s)
        ray.get(refs, timeout=30)
    finally:
        if ray.is_initialized():
            ray.shutdown()
        run.pids = lc.pids
        lc.stop()
        run.leftovers = system.alive(run.pids, wait_s=10)
        if config_path:
            os.unlink(config_path)
    return run
