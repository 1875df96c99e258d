"""O cluster da sala de aula (várias máquinas): invólucros finos de ``ray start`` /
``ray status`` / ``ray stop`` que **imprimem o comando exato** executado, para que se aprenda
o comando e não o invólucro.

- :func:`start_head` na máquina do instrutor (o nó principal, *head node*);
- :func:`join` em cada máquina de aluno (um nó worker);
- :func:`status` e :func:`stop`.
"""

from __future__ import annotations

import json
import socket
from dataclasses import dataclass

from labutils.cluster.auth import ensure_auth_token, require_head_token, token_refused
from labutils.cluster.base import (
    DEFAULT_DASHBOARD_PORT,
    DEFAULT_PORT,
    LOCALHOST,
    ClusterError,
    check_head_reachable,
    check_port,
    ray_executable,
    require_free_port,
    run_ray,
)

#: interfaces que abrem uma porta para a rede inteira
ALL_INTERFACES = ("0.0.0.0", "::")


@dataclass(frozen=True)
class Port:
    """Uma porta (ou faixa) que um nó da sala usa na rede, com a opção do ``ray start``."""

    flag: str
    first: int
    last: int
    what: str
    head_only: bool = False
    #: opção da última porta de uma faixa (``--max-worker-port``)
    last_flag: str | None = None

    def flags(self) -> list[str]:
        out = [f"{self.flag}={self.first}"]
        return out + ([f"{self.last_flag}={self.last}"] if self.last_flag else [])

    @property
    def label(self) -> str:
        return str(self.first) if self.first == self.last else f"{self.first}–{self.last}"


#: Todas as portas que ``start-head`` e ``join`` fixam, para que um firewall possa nomeá-las: o
#: firewall da sala libera estas (TCP, só entre as máquinas da sala) e nada mais. A tabela da
#: lição 04 e do README sai daqui (:func:`ports_table`), e ``tests/test_classroom_machines.py``
#: monta o firewall com ela. O painel (8265) escuta só em 127.0.0.1: não precisa de regra.
CLASSROOM_PORTS = (
    Port("--port", DEFAULT_PORT, DEFAULT_PORT, "GCS: o registro do cluster", head_only=True),
    Port("--ray-client-server-port", 10001, 10001, "Ray Client (`ray://`)", head_only=True),
    Port("--node-manager-port", 6380, 6380, "raylet (o escalonador do nó)"),
    Port("--object-manager-port", 6381, 6381, "armazém de objetos (cópias entre nós)"),
    Port("--runtime-env-agent-port", 6382, 6382, "agente de ambientes de execução"),
    Port("--dashboard-agent-grpc-port", 6383, 6383, "agente do painel (gRPC)"),
    Port("--dashboard-agent-listen-port", 52365, 52365, "agente do painel (HTTP)"),
    Port("--metrics-export-port", 6384, 6384, "métricas do nó (Prometheus)"),
    Port(
        "--min-worker-port",
        20000,
        20099,
        "processos de trabalho (tarefas, atores, drivers)",
        last_flag="--max-worker-port",
    ),
    # Sem opção no `ray start`: o Ray Train sorteia uma porta livre em cada worker para o gRPC do
    # TensorFlow (ray.train._internal.utils.get_address_and_port), da faixa efêmera do Linux.
    Port(
        "",
        32768,
        60999,
        "gRPC do TensorFlow entre os workers do Ray Train (lição 07): uma porta livre sorteada, "
        "da faixa efêmera do Linux (`net.ipv4.ip_local_port_range`)",
    ),
)


#: Quanto tempo a sala espera por uma máquina que sumiu da rede (cabo puxado, Wi-Fi caído). Com
#: os padrões do Ray, quem espera a resposta de uma tarefa naquela máquina só desiste quando o
#: *keepalive* do gRPC vence: 300 s até o primeiro ping e mais 120 s sem resposta (medido aqui:
#: as tarefas voltaram a rodar ~430 s depois do cabo). Estes valores encurtam essa espera para
#: ~20 s. Do mesmo jeito, quando o nó principal some, cada driver e nó tenta reconectar por
#: ``gcs_rpc_server_reconnect_timeout_s`` (60 s no Ray) antes de desistir; aqui, 20 s. O nó
#: principal recebe os valores em ``--system-config`` e os repassa a cada nó e driver que entra
#: no cluster. O preço: uma rede que some por mais de ~20 s derruba as tarefas em andamento
#: naquela máquina (o Ray as roda de novo em outra, com ``max_retries``), e um nó principal
#: fora do ar por mais de 20 s encerra os nós e drivers da sala.
CLASSROOM_SYSTEM_CONFIG = {
    "grpc_client_keepalive_time_ms": 10_000,
    "grpc_client_keepalive_timeout_ms": 10_000,
    "gcs_rpc_server_reconnect_timeout_s": 20,
}


def port_flags(*, head: bool) -> list[str]:
    """As opções do ``ray start`` que fixam cada porta de :data:`CLASSROOM_PORTS`."""
    flags = []
    for port in CLASSROOM_PORTS:
        if port.flag and port.flag != "--port" and (head or not port.head_only):
            flags += port.flags()
    return flags


def ports_table() -> str:
    """A tabela (markdown) das portas que o firewall da sala libera, a da lição 04 e do README."""
    lines = ["| porta (TCP) | para quê | em quais máquinas | opção do `ray start` |",
             "| --- | --- | --- | --- |"]  # fmt: skip
    for port in CLASSROOM_PORTS:
        where = "nó principal" if port.head_only else "todas"
        flag = f"`{port.flag}`" if port.flag else "— (não se fixa)"
        flag += f" / `{port.last_flag}`" if port.last_flag else ""
        lines.append(f"| {port.label} | {port.what} | {where} | {flag} |")
    return "\n".join(lines)


def head_command(
    *,
    port: int = DEFAULT_PORT,
    num_cpus: int | None = None,
    dashboard: bool = True,
    dashboard_host: str = LOCALHOST,
    dashboard_port: int = DEFAULT_DASHBOARD_PORT,
    node_ip_address: str | None = None,
    block: bool = False,
    extra: list[str] | None = None,
    classroom_ports: bool = True,
) -> list[str]:
    """Monta o comando ``ray start --head ...`` (sem executá-lo).

    ``classroom_ports``: fixa as portas de :data:`CLASSROOM_PORTS` e passa
    :data:`CLASSROOM_SYSTEM_CONFIG` (o nó principal da sala); o
    :class:`~labutils.cluster.LocalCluster`, com vários nós numa máquina, passa as suas em
    ``extra`` e desliga isto."""
    check_port(port, "o nó principal (--port)")
    if dashboard:
        check_port(dashboard_port, "o painel (--dashboard-port)")
    if num_cpus is not None and (
        isinstance(num_cpus, bool) or not isinstance(num_cpus, int) or num_cpus < 0
    ):
        raise ClusterError(f"num_cpus deve ser um inteiro >= 0 (--num-cpus), recebi {num_cpus!r}.")
    cmd = [ray_executable(), "start", "--head", f"--port={port}"]
    if classroom_ports:
        cmd += port_flags(head=True)
        cmd.append(f"--system-config={json.dumps(CLASSROOM_SYSTEM_CONFIG, separators=(',', ':'))}")
    if node_ip_address:
        cmd.append(f"--node-ip-address={node_ip_address}")
    if num_cpus is not None:
        cmd.append(f"--num-cpus={int(num_cpus)}")
    if dashboard:
        cmd += [f"--dashboard-host={dashboard_host}", f"--dashboard-port={dashboard_port}"]
    else:
        cmd.append("--include-dashboard=false")
    cmd += list(extra or [])
    if block:
        cmd.append("--block")
    return cmd


def start_head(
    *,
    port: int = DEFAULT_PORT,
    num_cpus: int | None = None,
    dashboard: bool = True,
    dashboard_host: str = LOCALHOST,
    dashboard_port: int = DEFAULT_DASHBOARD_PORT,
    node_ip_address: str | None = None,
    timeout: float = 90,
) -> str:
    """Inicia o nó principal (head node) nesta máquina (``ray start --head``); devolve ``IP:PORTA``.

    O painel escuta só em ``127.0.0.1`` por padrão. ``dashboard_host="0.0.0.0"`` o abre
    para toda a rede: qualquer um que alcance a porta pode enviar código para o cluster.
    Faça isso só numa rede fechada de laboratório (veja a lição 04).
    """
    require_free_port(port, "porta do nó principal (--port)")
    if dashboard:
        require_free_port(dashboard_port, "painel (--dashboard-port)")
        if dashboard_host in ALL_INTERFACES:
            print(
                "ATENÇÃO: painel aberto para toda a rede (--dashboard-host=0.0.0.0). Qualquer "
                "máquina que alcance esta porta pode enviar jobs ao cluster. Só numa rede fechada!"
            )
    token_source = ensure_auth_token()
    cmd = head_command(
        port=port,
        num_cpus=num_cpus,
        dashboard=dashboard,
        dashboard_host=dashboard_host,
        dashboard_port=dashboard_port,
        node_ip_address=node_ip_address,
    )
    run_ray(cmd, timeout=timeout, leave_running=True)  # os serviços do nó ficam no ar
    address = f"{node_ip_address or local_ip()}:{port}"
    print(
        f"\nNó principal no ar em {address}. Em cada máquina de aluno (mesmo ambiente Python):\n"
        f"  1. traga o token deste nó ({token_source}) para ~/.ray/auth_token, com chmod 600\n"
        "     (ou exporte RAY_AUTH_TOKEN com o conteúdo dele; não o cole em notebooks)\n"
        f"  2. python -m labutils.cluster join {address}\n"
        f"     (o mesmo que: RAY_AUTH_MODE=token ray start --address={address})"
    )
    return address


def join(head_address: str, *, num_cpus: int | None = None, timeout: float = 60) -> None:
    """Junta esta máquina ao cluster como nó worker (``ray start --address=IP:PORTA``).

    Antes do ``ray start``, e em poucos segundos: o nó principal responde nesse endereço, esta
    máquina tem o token dele (nunca gera um, veja :func:`require_head_token`) e ele aceita esse
    token (``ray status --address``, que falha em ~1 s com o token errado, contra
    ~20 s do ``ray start``).
    """
    check_head_reachable(head_address)
    source = require_head_token()
    probe = run_ray(
        [ray_executable(), "status", f"--address={head_address}"],
        timeout=30,
        show_output=False,
        check=False,
    )
    if probe.returncode != 0 and token_refused(probe.stdout + probe.stderr):
        raise ClusterError(
            f"O nó principal em {head_address} recusou o token desta máquina ({source}): ele "
            "não é o do nó principal. Copie de novo o arquivo ~/.ray/auth_token da máquina do "
            "instrutor (ou corrija RAY_AUTH_TOKEN) e rode o mesmo comando."
        )
    cmd = [ray_executable(), "start", f"--address={head_address}", *port_flags(head=False)]
    if num_cpus is not None:
        cmd.append(f"--num-cpus={int(num_cpus)}")
    run_ray(cmd, timeout=timeout, leave_running=True)


def status(address: str | None = None, *, timeout: float = 30) -> str:
    """Mostra nós e recursos do cluster (``ray status``) e devolve o texto."""
    cmd = [ray_executable(), "status"]
    if address:
        check_head_reachable(address)
        cmd.append(f"--address={address}")
    return run_ray(cmd, timeout=timeout).stdout


def stop(*, force: bool = False, timeout: float = 60) -> None:
    """Para **todos** os processos Ray desta máquina (``ray stop``).

    Pensado para o computador de um aluno ou do instrutor ao fim da aula. Numa máquina
    compartilhada, derruba também o Ray dos outros: lá, use :meth:`LocalCluster.stop`.
    """
    run_ray([ray_executable(), "stop", *(["--force"] if force else [])], timeout=timeout)


def local_ip() -> str:
    """O IP desta máquina na rede (o que os outros computadores usariam)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        try:
            sock.connect(("10.255.255.255", 1))  # UDP: não envia nada, só escolhe a interface
            return sock.getsockname()[0]
        except OSError:
            return LOCALHOST
