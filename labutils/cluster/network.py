"""Que portas um cluster local abre para a rede, e por quê (:func:`listeners`)."""

from __future__ import annotations

from dataclasses import dataclass

#: endereços que só a própria máquina alcança
LOOPBACK = frozenset({"127.0.0.1", "::1", "::ffff:127.0.0.1"})

#: O que um cluster local ainda abre fora do loopback no Ray 2.60, por quê e qual opção do
#: ``ray start`` fixa a porta (vazio: nenhuma). A raiz é uma só: o ``ray start`` troca o
#: ``127.0.0.1`` (de ``--node-ip-address``, ``--address`` e ``ray.init``) pelo IP da máquina, e os
#: serviços escutam nesse IP ou em todas as interfaces; com 127.0.0.1, nenhum worker nem driver
#: entraria no nó principal. Quem protege essas portas é o token.
NETWORK_LISTENERS: dict[str, tuple[tuple[str, ...], str]] = {
    "gcs_server": (("--port",), "GCS (--port): o Ray não tem opção de interface para ele"),
    "raylet": (
        ("--node-manager-port", "--object-manager-port"),
        "raylet e armazém de objetos (--node-manager-port, --object-manager-port)",
    ),
    "DashboardAgent": (
        ("--dashboard-agent-grpc-port", "--dashboard-agent-listen-port", "--metrics-export-port"),
        "agente do painel (gRPC, HTTP e métricas): IP do nó ou todas as interfaces",
    ),
    "RuntimeEnvAgent": (
        ("--runtime-env-agent-port",),
        "agente de ambientes de execução: escuta no IP do nó",
    ),
    "ray.util.client.server": (
        ("--ray-client-server-port",),
        "Ray Client (ray://): sem opção de interface no `ray start`",
    ),
    "dashboard/dashboard.py": ((), "gRPC interno do painel (a página em si fica em 127.0.0.1)"),
    "ray::": (
        ("--worker-port-list", "--min-worker-port"),
        "processos de trabalho (--worker-port-list): escutam no IP do nó",
    ),
    "autoscaler/_private/monitor.py": (
        (),
        "monitor do autoscaler (métricas): escuta em todas as interfaces, sem opção no `ray start`",
    ),
    "ray-dashboard-ServeHead": (
        (),
        "módulo Serve do painel, num subprocesso que o painel inicia quando a interface pede "
        "dados do Serve: ele se conecta ao Ray como um driver, e o core worker do driver escuta "
        "em todas as interfaces (achado pelo teste de navegador, que abre o painel)",
    ),
}


@dataclass(frozen=True)
class Listener:
    """Um socket escutando: processo, IP, porta e (fora do loopback) por que está aberto e que
    opções do ``ray start`` fixam a porta dele (``flags``; vazio se nenhuma)."""

    process: str
    ip: str
    port: int
    reason: str | None
    flags: tuple[str, ...] = ()


def listeners(pids: set[int]) -> list[Listener]:
    """Os sockets TCP escutando dos processos ``pids`` (os que sumiram no caminho são pulados)."""
    import psutil

    found = []
    for pid in sorted(pids):
        try:
            proc = psutil.Process(pid)
            label = " ".join([proc.name(), *proc.cmdline()])
            # o psutil do Colab (5.9.5) só tem o nome antigo; o net_connections veio no 6.0
            conns = (getattr(proc, "net_connections", None) or proc.connections)(kind="inet")
        except psutil.Error:
            continue
        for conn in conns:
            if conn.status != psutil.CONN_LISTEN:
                continue
            ip = conn.laddr.ip
            flags, reason = (), None
            if ip not in LOOPBACK:
                flags, reason = next(
                    (known for key, known in NETWORK_LISTENERS.items() if key in label), ((), None)
                )
            found.append(Listener(proc.name(), ip, conn.laddr.port, reason, flags))
    return found
