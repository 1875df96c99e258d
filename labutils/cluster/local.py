"""Um cluster Ray de vários nós numa máquina só (laptop, CI): :class:`LocalCluster`."""

from __future__ import annotations

import atexit
import contextlib
import os
import shlex
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from labutils import config, system
from labutils.cluster.base import (
    DEFAULT_DASHBOARD_PORT,
    ClusterError,
    die_with_parent,
    ensure_auth_token,
    require_free_port,
)
from labutils.cluster.classroom import CLASSROOM_PORTS, head_command
from labutils.raytools import ray_executable
from labutils.system import LOCALHOST

#: portas de worker (uma por processo de tarefa/ator) reservadas para cada nó local
WORKER_PORTS_PER_NODE = 12

#: Ambiente de cada nó local: parar sem a espera de "drenagem" das tarefas; e dar 60 s (não
#: os ~15 s padrão) para o agente do painel de um nó subir, numa máquina sobrecarregada.
NODE_ENV = {"RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S": "0", "RAY_raylet_start_wait_time_s": "60"}
OBJECT_STORE_MB = 200
START_TIMEOUT_S = 120.0


class LocalCluster:
    """Um nó principal e ``num_workers`` workers nesta máquina, ``cpus_per_node`` CPUs cada. Cada
    nó é um ``ray start --block`` num grupo de processos próprio, com portas e ``--temp-dir``
    próprios (nenhum vira "o último cluster" de um ``ray.init()`` qualquer); :meth:`stop` encerra
    só esses processos, nunca ``ray stop``."""

    def __init__(
        self,
        num_workers: int = 2,
        cpus_per_node: int = 1,
        dashboard: bool = False,
        dashboard_port: int | None = None,
        *,
        head_cpus: int | None = None,
        head_args: list[str] | None = None,
        head_env: dict[str, str] | None = None,
        verbose: bool = True,
    ) -> None:
        system.check_int(num_workers, "num_workers", 0)
        system.check_int(cpus_per_node, "cpus_per_node")
        if dashboard_port is not None:
            require_free_port(dashboard_port, "dashboard_port")
        self.num_workers = num_workers
        self.cpus_per_node = cpus_per_node
        self.head_cpus = cpus_per_node if head_cpus is None else head_cpus
        self.head_args = list(head_args or [])
        self.head_env = dict(head_env or {})
        self.dashboard = dashboard
        self.port, auto_dashboard = system.free_ports(2)
        self.dashboard_port = (dashboard_port or auto_dashboard) if dashboard else None
        self._ports = {self.port, auto_dashboard, dashboard_port or 0}
        self.verbose = verbose
        self.temp_dir: str | None = None
        self._nodes: list[subprocess.Popen] = []
        self._workers: list[subprocess.Popen] = []  # os nós de trabalho, na ordem em que subiram
        self._pids: set[int] = set()
        self._head: tuple[subprocess.Popen, str] | None = None  # o nó principal e o --temp-dir

    @property
    def address(self) -> str:
        """``127.0.0.1:PORTA`` do nó principal, para ``ray.init(address=...)`` ou ``RAY_ADDRESS``."""
        return f"{LOCALHOST}:{self.port}"

    @property
    def dashboard_url(self) -> str | None:
        return f"http://{LOCALHOST}:{self.dashboard_port}" if self.dashboard else None

    @property
    def pids(self) -> set[int]:
        """PIDs de todos os processos deste cluster vistos até agora."""
        self._collect_pids()
        return set(self._pids)

    def __enter__(self) -> LocalCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> LocalCluster:
        """Sobe o nó principal e os workers; falha em português se algo não subir a tempo."""
        if self._nodes:
            return self
        ensure_auth_token()
        self.temp_dir = tempfile.mkdtemp(prefix="raylab-", dir="/tmp")  # caminho curto: sockets
        # Quem o iniciou sai sem stop(): sai normalmente → atexit (para e apaga o --temp-dir);
        # morre de SIGKILL (o kernel do Jupyter reiniciado) → die_with_parent, em cada nó.
        atexit.register(self.stop)
        t0 = time.monotonic()
        try:
            self._start_nodes([0])
            # os workers sobem em paralelo, depois que o nó principal já responde
            self._start_nodes(list(range(1, self.num_workers + 1)))
        except BaseException:
            self.stop()
            raise
        if self.verbose:
            extra = f", painel em {self.dashboard_url}" if self.dashboard else ""
            print(
                f"Cluster local: nó principal + {self.num_workers} worker(s), "
                f"{self.cpus_per_node} CPU por nó, em {self.address}{extra} "
                f"({time.monotonic() - t0:.0f} s para subir)."
            )
        return self

    def _start_nodes(self, indices: list[int], attempts: int = 3) -> None:
        """Sobe os nós em paralelo; um que não registrou nos 30 s do Ray tenta de novo."""
        for attempt in range(1, attempts + 1):
            pending = [self._spawn_node(i, attempt) for i in indices]
            failed = []
            for node in pending:
                try:
                    self._wait_ready(*node)
                except ClusterError as err:
                    if attempt == attempts or "timed out during startup" not in str(err):
                        raise
                    if self.verbose:
                        print(f"nó {node[0]} não registrou a tempo (máquina ocupada?): de novo")
                    self._collect_pids()
                    system.kill_group(node[1], grace=0)
                    failed.append(node[0])
            if not failed:
                return
            indices = failed

    def _node_command(self, index: int, temp_dir: str) -> list[str]:
        # as portas da sala, cada uma sorteada: vários nós nesta máquina
        flags = [
            p.flag
            for p in CLASSROOM_PORTS
            if p.first == p.last and p.flag != "--port" and (index == 0 or not p.head_only)
        ]
        ports = system.free_ports(len(flags) + WORKER_PORTS_PER_NODE, avoid=self._ports)
        self._ports.update(ports)
        common = [f"{flag}={port}" for flag, port in zip(flags, ports, strict=False)]
        common += [
            f"--worker-port-list={','.join(map(str, ports[len(flags) :]))}",
            f"--object-store-memory={OBJECT_STORE_MB * 1024**2}",
            f"--temp-dir={temp_dir}",
            "--disable-usage-stats",
        ]
        if index == 0:
            return head_command(
                port=self.port,
                num_cpus=self.head_cpus,
                dashboard=self.dashboard,
                dashboard_port=self.dashboard_port or DEFAULT_DASHBOARD_PORT,
                block=True,
                extra=[*common, *self.head_args],
                classroom_ports=False,  # portas sorteadas: vários nós nesta máquina
            )
        return [
            ray_executable(),
            "start",
            f"--address={self.address}",
            f"--num-cpus={self.cpus_per_node}",
            *common,
            "--block",
        ]

    def _spawn_node(self, index: int, attempt: int = 1) -> tuple[int, subprocess.Popen, str, str]:
        node_dir = f"{self.temp_dir}/n{index}" + (f"_{attempt}" if attempt > 1 else "")
        os.makedirs(node_dir)
        cmd = self._node_command(index, node_dir)
        if self.verbose:
            print("$ " + shlex.join(["ray", *cmd[1:]]), flush=True)
        extra = dict(NODE_ENV, **(self.head_env if index == 0 else {}))
        log_path = node_dir + ".log"
        with open(log_path, "w") as log:
            # grupo de processos próprio: stop() encerra o nó inteiro, e só ele
            proc = system.spawn_group(
                cmd,
                env=config.ray_env(extra),
                stdout=log,
                stderr=subprocess.STDOUT,
                preexec_fn=die_with_parent,
            )
        self._nodes.append(proc)
        self._pids.add(proc.pid)
        if index > 0:
            self._workers.append(proc)
        else:  # a última tentativa (_start_nodes)
            self._head = proc, node_dir
        return index, proc, node_dir, log_path

    def _wait_ready(self, index: int, proc: subprocess.Popen, node_dir: str, log_path: str) -> None:
        # `ray start` grava este arquivo quando o nó já está no ar
        ready = os.path.join(node_dir, "ray_current_cluster")
        deadline = time.monotonic() + START_TIMEOUT_S
        while not os.path.exists(ready):
            if proc.poll() is not None or time.monotonic() > deadline:
                tail = "\n".join(Path(log_path).read_text(errors="replace").splitlines()[-15:])
                what = "o nó principal" if index == 0 else f"o worker {index}"
                why = (
                    f"terminou com código {proc.returncode}"
                    if proc.poll() is not None
                    else f"não ficou pronto em {START_TIMEOUT_S:g} s"
                )
                raise ClusterError(f"Não consegui iniciar {what} do cluster local: {why}.\n{tail}")
            time.sleep(0.2)
        self._collect_pids()

    def _collect_pids(self) -> None:
        import psutil

        for proc in self._nodes:
            with contextlib.suppress(psutil.Error):
                self._pids.update(c.pid for c in psutil.Process(proc.pid).children(recursive=True))

    def check_head(self) -> None:
        """:class:`ClusterError` em português, em segundos e sem o Ray, se o nó principal saiu:
        o ``ray start`` dele terminou, ou o GCS não aceita conexão na porta dele (o ``ray start
        --block`` só percebe o GCS morto no segundo seguinte). Chame antes das chamadas ao Ray
        num laço: com o GCS morto, ``ray.nodes()`` espera pelo GCS por
        ``gcs_rpc_server_reconnect_timeout_s`` (60 s) e então encerra o processo (o kernel)."""
        if not self._nodes or self._head is None:
            raise ClusterError(
                f"O cluster local em {self.address} não está no ar (start() ainda não rodou, "
                "ou stop() já o parou)."
            )
        head, head_dir = self._head
        if head.poll() is not None:
            why = f"o `ray start` dele terminou com código {head.returncode}"
        elif err := system.reachable(LOCALHOST, self.port):
            why = f"o GCS não atende na porta {self.port} ({err.strerror or err})"
        else:
            return
        raise ClusterError(
            f"O nó principal do cluster local em {self.address} saiu: {why}. Os logs dele, até "
            f"o stop(): {head_dir}.log e {head_dir}/session_latest/logs "
            "(gcs_server.out). Rode ray.shutdown() e stop(), e suba o cluster de novo."
        )

    def stop_node(self, index: int = -1) -> None:
        """Para um nó de trabalho vivo (``index`` entre os vivos; -1: o último), como uma máquina
        que sai da sala: SIGTERM ao ``ray start`` dele, que encerra o nó inteiro."""
        alive = [proc for proc in self._workers if proc.poll() is None]
        if not alive or not -len(alive) <= index < len(alive):
            raise ClusterError(
                f"Não há o nó de trabalho {index} para parar: {len(alive)} vivo(s) "
                f"(use um índice de 0 a {len(alive) - 1}, ou -1 para o último)."
            )
        system.kill_group(alive[index], grace=5)

    def stop(self, timeout: float = 10) -> None:
        """Encerra os nós deste cluster (workers primeiro, nó principal por último). Idempotente."""
        if self._nodes:
            self._collect_pids()
            for proc in reversed(self._nodes):  # SIGTERM ao `ray start`: ele para os seus filhos
                with contextlib.suppress(ProcessLookupError):
                    proc.send_signal(signal.SIGTERM)
            deadline = time.monotonic() + timeout
            for proc in self._nodes:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            for proc in self._nodes:  # o que sobrou do grupo de cada nó
                system.kill_group(proc, grace=0)
            system.kill_pids(system.alive(self._pids), wait_s=5)  # os filhos vistos, fora do grupo
            self._nodes.clear()
            self._workers.clear()
            with contextlib.suppress(Exception):
                atexit.unregister(self.stop)
            if self.verbose:
                print(f"Cluster local em {self.address} encerrado.")
        if self.temp_dir:
            shutil.rmtree(self.temp_dir, ignore_errors=True)
