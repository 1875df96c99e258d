"""Linha de comando do cluster: ``python -m labutils.cluster COMANDO`` (``start-head``,
``join IP:PORTA``, ``status [IP:PORTA]``, ``ports``, ``stop``, ``local``; veja ``--help``). Cada comando
imprime o comando ``ray`` que executa; com ``RAY_AUTH_MODE=disabled``, começa com um aviso."""

from __future__ import annotations

import argparse
import signal
import time

from labutils import cluster, config
from labutils.cluster.base import DEFAULT_DASHBOARD_PORT, DEFAULT_PORT
from labutils.system import LOCALHOST


def _at_least_one(text: str) -> int:
    """CPUs e workers: um inteiro ≥ 1, recusado antes de chegar ao ``ray start``."""
    value = int(text) if text.lstrip("+").isdigit() else 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"esperava um inteiro ≥ 1, recebi {text!r}")
    return value


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m labutils.cluster", description="Cluster Ray do laboratório."
    )
    sub = parser.add_subparsers(dest="command", required=True)

    head = sub.add_parser("start-head", help="inicia o nó principal (ray start --head)")
    head.add_argument("--port", type=int, default=DEFAULT_PORT)
    head.add_argument("--num-cpus", type=_at_least_one, default=None)
    head.add_argument("--dashboard-port", type=int, default=DEFAULT_DASHBOARD_PORT)
    head.add_argument(
        "--dashboard-host",
        default=LOCALHOST,
        help="interface do painel; 0.0.0.0 abre para a rede toda (só em rede fechada!)",
    )
    head.add_argument("--node-ip-address", default=None, help="IP desta máquina na rede da sala")
    head.add_argument("--no-dashboard", dest="dashboard", action="store_false")

    join = sub.add_parser("join", help="junta esta máquina ao cluster (ray start --address)")
    join.add_argument("head_address", metavar="IP:PORTA", help="o endereço do nó principal")
    join.add_argument("--num-cpus", type=_at_least_one, default=None)

    st = sub.add_parser("status", help="nós e recursos (ray status)")
    st.add_argument("address", nargs="?", default=None)

    stop = sub.add_parser("stop", help="para TODO o Ray desta máquina (ray stop)")
    stop.add_argument("--force", action="store_true")

    sub.add_parser("ports", help="as portas que o firewall da sala precisa liberar (tabela)")

    local = sub.add_parser("local", help="nó principal + N workers nesta máquina, até Ctrl+C")
    local.add_argument("--workers", dest="num_workers", type=_at_least_one, default=2)
    local.add_argument("--cpus-per-node", type=_at_least_one, default=1)
    local.add_argument("--dashboard", action="store_true")
    local.add_argument("--dashboard-port", type=int, default=None)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = vars(_parser().parse_args(argv))  # os nomes das opções são os dos parâmetros
    command = args.pop("command")
    if warning := config.auth_disabled_warning():
        print(f"ATENÇÃO: {warning}", flush=True)
    try:
        if command == "ports":
            print(cluster.ports_table())
        elif command == "local":
            with cluster.LocalCluster(**args) as local:
                print(f"Em outro terminal: export RAY_ADDRESS={local.address}  (Ctrl+C encerra)")
                try:
                    while True:
                        time.sleep(1)
                except KeyboardInterrupt:
                    # um 2º Ctrl+C não interrompe a parada
                    signal.signal(signal.SIGINT, signal.SIG_IGN)
        else:  # start-head, join, status, stop: as funções de mesmo nome
            getattr(cluster, command.replace("-", "_"))(**args)
    except (cluster.ClusterError, ConnectionError, ValueError) as err:
        print(f"Erro: {err}")
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
