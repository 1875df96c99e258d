"""O cluster da sala: :func:`start_head` na máquina do instrutor, :func:`join` em cada máquina de
aluno, :func:`status` e :func:`stop`; imprimem o comando ``ray`` que rodam."""

from __future__ import annotations

import json
import socket
from dataclasses import dataclass

from labutils import config
from labutils.cluster.base import (
    DEFAULT_DASHBOARD_PORT,
    DEFAULT_PORT,
    ensure_auth_token,
    require_free_port,
    run_ray,
    split_address,
)
from labutils.raytools import bring_token, check_cluster, check_reachable, ray_executable
from labutils.system import LOCALHOST


@dataclass(frozen=True)
class Port:
    """Uma porta (ou faixa) que um nó da sala usa na rede, com a opção do ``ray start``."""

    flag: str
    first: int
    last: int
    what: str
    head_only: bool = False
    last_flag: str | None = None  # a da última porta de uma faixa (``--max-worker-port``)


#: As portas que ``start-head`` e ``join`` fixam: o firewall da sala libera estas (TCP, entre as
#: máquinas da sala) e nada mais (o painel fica em 127.0.0.1). Fonte da tabela da lição 04.
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


#: Quanto a sala espera por uma máquina que sumiu da rede: ~20 s (no Ray, o keepalive do gRPC leva
#: 300 + 120 s) e 20 s por um nó principal que some (60 s no Ray). O preço: uma rede fora por mais
#: de ~20 s derruba as tarefas daquela máquina (refeitas em outra) ou a sala inteira, se for o nó
#: principal. O nó principal repassa os valores a quem entra; medidas em
#: docs/sala_em_maquinas_separadas.md.
CLASSROOM_SYSTEM_CONFIG = {
    "grpc_client_keepalive_time_ms": 10_000,
    "grpc_client_keepalive_timeout_ms": 10_000,
    "gcs_rpc_server_reconnect_timeout_s": 20,
}


def ports_table() -> str:
    """A tabela (markdown) do que o firewall da sala libera (``python -m labutils.cluster ports``)."""
    lines = ["| porta (TCP) | para quê | em quais máquinas | opção do `ray start` |"]
    lines.append("| --- | --- | --- | --- |")
    for port in CLASSROOM_PORTS:
        label = str(port.first) if port.first == port.last else f"{port.first}–{port.last}"
        where = "nó principal" if port.head_only else "todas"
        flag = f"`{port.flag}`" if port.flag else "— (não se fixa)"
        flag += f" / `{port.last_flag}`" if port.last_flag else ""
        lines.append(f"| {label} | {port.what} | {where} | {flag} |")
    return "\n".join(lines)


def port_flags(*, head: bool) -> list[str]:
    """As opções do ``ray start`` que fixam cada porta de :data:`CLASSROOM_PORTS`."""
    flags = []
    for port in CLASSROOM_PORTS:
        if port.flag and port.flag != "--port" and (head or not port.head_only):
            flags.append(f"{port.flag}={port.first}")
            flags += [f"{port.last_flag}={port.last}"] if port.last_flag else []
    return flags


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
    """O ``ray start --head ...``; ``classroom_ports``: as portas e a configuração da sala."""
    cmd = [ray_executable(), "start", "--head", f"--port={port}"]
    if classroom_ports:
        cmd += port_flags(head=True)
        cmd.append(f"--system-config={json.dumps(CLASSROOM_SYSTEM_CONFIG, separators=(',', ':'))}")
    if node_ip_address:
        cmd.append(f"--node-ip-address={node_ip_address}")
    if num_cpus is not None:
        cmd.append(f"--num-cpus={num_cpus}")
    if dashboard:
        cmd += [f"--dashboard-host={dashboard_host}", f"--dashboard-port={dashboard_port}"]
    else:
        cmd.append("--include-dashboard=false")
    cmd += list(extra or [])
    if block:
        cmd.append("--block")
    return cmd


def start_head(*, timeout: float = 90, **options) -> str:
    """Inicia o nó principal aqui (as ``options`` de :func:`head_command`); devolve ``IP:PORTA``."""
    port = options.get("port", DEFAULT_PORT)
    require_free_port(port, "--port")
    if options.get("dashboard", True):
        require_free_port(options.get("dashboard_port", DEFAULT_DASHBOARD_PORT), "--dashboard-port")
        if options.get("dashboard_host") in ("0.0.0.0", "::"):
            print(
                "ATENÇÃO: painel aberto para toda a rede (--dashboard-host=0.0.0.0). Qualquer "
                "máquina que alcance esta porta pode enviar jobs ao cluster. Só numa rede fechada!"
            )
    token_source = ensure_auth_token()
    run_ray(head_command(**options), timeout=timeout, leave_running=True)  # o nó fica no ar
    address = f"{options.get('node_ip_address') or local_ip()}:{port}"
    print(
        f"\nNó principal no ar em {address}, com o token de {token_source}. Em cada máquina de "
        "aluno (o mesmo Python X.Y e o mesmo Ray):\n"
        f"{bring_token(then='rode o join')}\n"
        f"Depois: python -m labutils.cluster join {address}\n"
        f"  (o mesmo que: RAY_AUTH_MODE=token ray start --address={address})"
    )
    return address


def join(head_address: str, *, num_cpus: int | None = None, timeout: float = 60) -> None:
    """Junta esta máquina ao cluster (``ray start --address``), depois de conferir em segundos
    que o nó principal responde, aceita o token desta máquina e roda o mesmo Ray e Python X.Y
    (o ``ray start`` levaria ~20 s e daria um traceback)."""
    split_address(head_address)
    check_reachable(head_address)
    ensure_auth_token(generate=False)  # sem token: diz na hora onde buscá-lo
    check_cluster(head_address)
    if config.is_macos():
        print(
            "ATENÇÃO: o Ray não dá suporte oficial a nós macOS num cluster de várias máquinas; "
            f"este entra com {config.MACOS_CLUSTER_ENV}=1 (se falhar, use um nó Linux)."
        )
    cmd = [ray_executable(), "start", f"--address={head_address}", *port_flags(head=False)]
    if num_cpus is not None:
        cmd.append(f"--num-cpus={num_cpus}")
    run_ray(cmd, timeout=timeout, leave_running=True)


def status(address: str | None = None, *, timeout: float = 30) -> str:
    """Mostra nós e recursos do cluster (``ray status``) e devolve o texto."""
    cmd = [ray_executable(), "status"]
    if address:
        split_address(address)
        check_reachable(address)
        cmd.append(f"--address={address}")
    return run_ray(cmd, timeout=timeout).stdout


def stop(*, force: bool = False, timeout: float = 60) -> None:
    """Para **todo** o Ray desta máquina, o dos outros também (``ray stop``)."""
    run_ray([ray_executable(), "stop", *(["--force"] if force else [])], timeout=timeout)


def local_ip() -> str:
    """O IP desta máquina na rede (o que os outros computadores usariam)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        try:
            sock.connect(("10.255.255.255", 1))  # UDP: não envia nada, só escolhe a interface
            return sock.getsockname()[0]
        except OSError:
            return LOCALHOST
