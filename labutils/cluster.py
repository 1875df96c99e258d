"""Cluster Ray de verdade: iniciar a cabeça, juntar workers, ver o estado e parar.

Duas formas de uso:

- **sala de aula** (várias máquinas): :func:`start_head` na máquina do instrutor e :func:`join`
  nas máquinas dos alunos. São invólucros finos de ``ray start`` / ``ray status`` / ``ray stop``
  que **imprimem o comando exato** executado, para que se aprenda o comando e não o invólucro.
  Também pela linha de comando: ``python -m labutils.cluster --help``.
- **uma máquina só** (laptop, CI): :class:`LocalCluster` sobe uma cabeça e N nós workers
  nesta máquina, cada um com seu próprio processo ``ray start`` (portas, recursos e ID de nó
  próprios), e para apenas os processos que ele mesmo iniciou.

Seguro por padrão: o painel (dashboard) escuta só em ``127.0.0.1`` a menos que se peça outra
interface, e a autenticação por token do Ray fica ligada (``RAY_AUTH_MODE=token``).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# O mesmo modo de autenticação em todos os processos (cabeça, workers e driver).
os.environ.setdefault("RAY_AUTH_MODE", "token")

DEFAULT_PORT = 6379
DEFAULT_DASHBOARD_PORT = 8265
LOCALHOST = "127.0.0.1"
#: quanto esperar por uma cabeça que não responde antes de desistir (segundos)
CONNECT_TIMEOUT_S = 3.0
#: portas de worker (uma por processo de tarefa/ator) reservadas para cada nó local
WORKER_PORTS_PER_NODE = 12


class ClusterError(RuntimeError):
    """Erro de configuração ou de conexão do cluster, com mensagem em português."""


# --------------------------------------------------------------------------------------
# utilidades
# --------------------------------------------------------------------------------------
def ray_executable() -> str:
    """O executável ``ray`` do mesmo ambiente Python deste processo."""
    candidate = Path(sys.executable).with_name("ray")
    return str(candidate) if candidate.exists() else (shutil.which("ray") or "ray")


def free_port(host: str = LOCALHOST) -> int:
    """Uma porta TCP livre agora (o sistema escolhe)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def free_ports(count: int, avoid: set[int] | None = None) -> list[int]:
    """``count`` portas livres e distintas (os sockets ficam abertos até escolher todas)."""
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ValueError(f"count deve ser um inteiro >= 1, recebi {count!r}.")
    avoid = set(avoid or ())
    socks: list[socket.socket] = []
    ports: list[int] = []
    try:
        while len(ports) < count:
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind((LOCALHOST, 0))
            socks.append(sock)
            port = sock.getsockname()[1]
            if port not in avoid:
                ports.append(port)
                avoid.add(port)
    finally:
        for sock in socks:
            sock.close()
    return ports


def port_in_use(port: int, host: str = "0.0.0.0") -> bool:
    """``True`` se alguém já escuta nessa porta (não conseguimos ocupá-la)."""
    _check_port(port, "port_in_use")
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((host, int(port)))
        except OSError:
            return True
    return False


def _check_port(port: object, what: str) -> None:
    if isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536:
        raise ClusterError(f"Porta inválida para {what}: {port!r} (use um inteiro de 1 a 65535).")


def _require_free_port(port: int, what: str) -> None:
    _check_port(port, what)
    if port_in_use(port):
        raise ClusterError(
            f"A porta {port} ({what}) já está em uso nesta máquina: outro Ray ou outro programa "
            f"já a ocupa. Escolha outra porta (ex.: --port {port + 1}) ou descubra quem a usa "
            f"com `ss -ltnp | grep {port}`."
        )


def split_address(address: str) -> tuple[str, int]:
    """``"IP:PORTA"`` → ``("IP", PORTA)``, com mensagem clara se o formato estiver errado."""
    host, sep, port = str(address).strip().rpartition(":")
    if not sep or not host or not port.isdigit():
        raise ClusterError(
            f"Endereço de cabeça inválido: {address!r}. Use o formato IP:PORTA, "
            "ex.: 192.168.0.10:6379 (o que `ray start --head` imprimiu)."
        )
    return host, int(port)


def check_head_reachable(address: str, timeout: float = CONNECT_TIMEOUT_S) -> None:
    """Falha em poucos segundos, em português, se ninguém atende no endereço da cabeça."""
    host, port = split_address(address)
    try:
        with socket.create_connection((host, port), timeout=timeout):
            pass
    except OSError as err:
        raise ClusterError(
            f"Não encontrei a cabeça do cluster em {address} ({err.strerror or err}). "
            "Confira: (1) a cabeça foi iniciada (`ray start --head` na máquina do instrutor); "
            "(2) o IP e a porta são os que ela imprimiu; (3) o firewall da rede libera essa porta."
        ) from err


def ensure_auth_token() -> str:
    """Garante um token de autenticação do Ray e diz de onde ele vem (sem mostrá-lo).

    Ordem usada pelo Ray: ``RAY_AUTH_TOKEN`` (o próprio token), ``RAY_AUTH_TOKEN_PATH``
    (um arquivo) e, por fim, ``~/.ray/auth_token``. Sem nenhum deles, gera um novo com
    ``ray get-auth-token --generate`` (a saída, que contém o token, não é impressa).
    """
    if os.environ.get("RAY_AUTH_TOKEN"):
        return "variável RAY_AUTH_TOKEN"
    path_env = os.environ.get("RAY_AUTH_TOKEN_PATH")
    if path_env:
        if not Path(path_env).expanduser().is_file():
            raise ClusterError(
                f"RAY_AUTH_TOKEN_PATH={path_env!r} não aponta para um arquivo: copie o token da "
                "cabeça (~/.ray/auth_token na máquina do instrutor) para esse caminho."
            )
        return path_env
    default = Path.home() / ".ray" / "auth_token"
    if not default.is_file():
        _run([ray_executable(), "get-auth-token", "--generate"], timeout=30, show_output=False)
        with contextlib.suppress(OSError):
            default.chmod(0o600)  # o Ray o grava legível por todos; é um segredo
    return str(default)


def _libc_prctl():
    """A função ``prctl`` da libc (Linux), carregada no processo pai, antes do ``fork``."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


_PRCTL = _libc_prctl()


def _die_with_parent() -> None:
    """(Linux) o nó recebe SIGKILL se o processo que o criou morrer (kernel, pytest...).

    Assim um kernel reiniciado ou um teste abortado não deixam nós órfãos; os filhos do
    ``ray start --block`` já morrem junto com ele (o Ray faz o mesmo com os seus).
    """
    if _PRCTL is not None:
        _PRCTL(1, int(signal.SIGKILL), 0, 0, 0)  # 1 = PR_SET_PDEATHSIG


def wait_for_nodes(count: int, timeout: float = 30) -> int:
    """Espera (no driver já conectado) até o cluster ter ``count`` nós vivos; devolve quantos."""
    import ray

    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ValueError(f"count deve ser um inteiro >= 1 (nós), recebi {count!r}.")

    deadline = time.monotonic() + timeout
    while True:
        alive = sum(1 for node in ray.nodes() if node.get("Alive"))
        if alive >= count:
            return alive
        if time.monotonic() > deadline:
            raise ClusterError(
                f"O cluster tem {alive} nó(s) vivo(s), mas eu esperava {count} após {timeout:g} s. "
                "Veja quem entrou com `ray status` e, nos workers que faltam, rode "
                "`ray start --address=IP:PORTA` de novo."
            )
        time.sleep(0.5)


def auth_token() -> str:
    """O token que este processo usaria (``RAY_AUTH_TOKEN``, ``RAY_AUTH_TOKEN_PATH`` ou
    ``~/.ray/auth_token``). É um segredo: não o imprima nem o coloque num notebook salvo."""
    if os.environ.get("RAY_AUTH_TOKEN"):
        return os.environ["RAY_AUTH_TOKEN"].strip()
    path = Path(os.environ.get("RAY_AUTH_TOKEN_PATH") or Path.home() / ".ray" / "auth_token")
    try:
        return path.expanduser().read_text().strip()
    except OSError as err:
        raise ClusterError(
            f"Não achei o token de autenticação do Ray em {path}: gere um com "
            "`ray get-auth-token --generate` (na cabeça) ou copie o da cabeça para esse caminho."
        ) from err


def _ray_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env["RAY_AUTH_MODE"] = os.environ.get("RAY_AUTH_MODE", "token")
    env.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    env.update(extra or {})
    return env


def _run(
    cmd: list[str], *, timeout: float, show_output: bool = True, check: bool = True
) -> subprocess.CompletedProcess:
    """Imprime o comando (para o aluno aprender) e o executa com limite de tempo."""
    printable = shlex.join(["ray", *cmd[1:]]) if cmd[0] == ray_executable() else shlex.join(cmd)
    print(f"$ {printable}", flush=True)
    try:
        proc = subprocess.run(
            cmd, env=_ray_env(), capture_output=True, text=True, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired as err:
        raise ClusterError(
            f"`{printable}` não terminou em {timeout:g} s. Veja `ray status` e os logs em "
            "/tmp/ray/session_latest/logs."
        ) from err
    if show_output:
        print((proc.stdout + proc.stderr).strip())
    if check and proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-8:])
        raise ClusterError(f"`{printable}` falhou (código {proc.returncode}):\n{tail}")
    return proc


# --------------------------------------------------------------------------------------
# sala de aula: invólucros de `ray start` / `ray status` / `ray stop`
# --------------------------------------------------------------------------------------
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
) -> list[str]:
    """Monta o comando ``ray start --head ...`` (sem executá-lo)."""
    _check_port(port, "a cabeça (--port)")
    if dashboard:
        _check_port(dashboard_port, "o painel (--dashboard-port)")
    if num_cpus is not None and (
        isinstance(num_cpus, bool) or not isinstance(num_cpus, int) or num_cpus < 0
    ):
        raise ClusterError(f"num_cpus deve ser um inteiro >= 0 (--num-cpus), recebi {num_cpus!r}.")
    cmd = [ray_executable(), "start", "--head", f"--port={port}"]
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
    """Inicia a cabeça do cluster nesta máquina (``ray start --head``) e devolve ``IP:PORTA``.

    O painel escuta só em ``127.0.0.1`` por padrão. ``dashboard_host="0.0.0.0"`` o abre
    para toda a rede: qualquer um que alcance a porta pode enviar código para o cluster.
    Faça isso só numa rede fechada de laboratório (veja a lição 04).
    """
    _require_free_port(port, "porta da cabeça (--port)")
    if dashboard:
        _require_free_port(dashboard_port, "painel (--dashboard-port)")
        if dashboard_host in ("0.0.0.0", "::"):
            print(
                "ATENÇÃO: painel aberto para toda a rede (--dashboard-host=0.0.0.0). Qualquer "
                "máquina que alcance esta porta pode enviar jobs ao cluster. Só numa rede fechada!"
            )
    token_source = ensure_auth_token()
    _run(
        head_command(
            port=port,
            num_cpus=num_cpus,
            dashboard=dashboard,
            dashboard_host=dashboard_host,
            dashboard_port=dashboard_port,
            node_ip_address=node_ip_address,
        ),
        timeout=timeout,
    )
    address = f"{node_ip_address or _local_ip()}:{port}"
    print(
        f"\nCabeça no ar em {address}. Nos outros computadores (mesmo ambiente Python):\n"
        f"  1. copie o token ({token_source}) para ~/.ray/auth_token ou exporte RAY_AUTH_TOKEN\n"
        f"  2. export RAY_AUTH_MODE=token\n"
        f"  3. ray start --address={address}"
    )
    return address


def join(head_address: str, *, num_cpus: int | None = None, timeout: float = 60) -> None:
    """Junta esta máquina ao cluster como nó worker (``ray start --address=IP:PORTA``).

    Verifica antes, em poucos segundos, se a cabeça responde nesse endereço.
    """
    check_head_reachable(head_address)
    ensure_auth_token()
    cmd = [ray_executable(), "start", f"--address={head_address}"]
    if num_cpus is not None:
        cmd.append(f"--num-cpus={int(num_cpus)}")
    _run(cmd, timeout=timeout)


def status(address: str | None = None, *, timeout: float = 30) -> str:
    """Mostra nós e recursos do cluster (``ray status``) e devolve o texto."""
    cmd = [ray_executable(), "status"]
    if address:
        check_head_reachable(address)
        cmd.append(f"--address={address}")
    return _run(cmd, timeout=timeout).stdout


def stop(*, force: bool = False, timeout: float = 60) -> None:
    """Para **todos** os processos Ray desta máquina (``ray stop``).

    Pensado para o computador de um aluno ou do instrutor ao fim da aula. Numa máquina
    compartilhada, derruba também o Ray dos outros: lá, use :meth:`LocalCluster.stop`.
    """
    _run([ray_executable(), "stop", *(["--force"] if force else [])], timeout=timeout)


def _local_ip() -> str:
    """O IP desta máquina na rede (o que os outros computadores usariam)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        try:
            sock.connect(("10.255.255.255", 1))  # UDP: não envia nada, só escolhe a interface
            return sock.getsockname()[0]
        except OSError:
            return LOCALHOST


# --------------------------------------------------------------------------------------
# uma máquina só: cabeça + N workers, cada um com seu próprio `ray start`
# --------------------------------------------------------------------------------------
class LocalCluster:
    """Cluster Ray de vários nós nesta máquina, para o laptop ou o CI.

    Cada nó é um ``ray start --block`` num grupo de processos próprio, com portas e recursos
    próprios e um ``--temp-dir`` exclusivo (assim ele não vira "o último cluster" ao qual
    outros ``ray.init()`` desta máquina se conectariam sozinhos). :meth:`stop` encerra só
    esses processos; nunca chama ``ray stop``.

    >>> with LocalCluster(num_workers=2) as cluster:   # doctest: +SKIP
    ...     ray.init(address=cluster.address)
    """

    def __init__(
        self,
        num_workers: int = 2,
        cpus_per_node: int = 1,
        dashboard: bool = False,
        dashboard_port: int | None = None,
        *,
        dashboard_host: str = LOCALHOST,
        object_store_mb: int = 200,
        start_timeout: float = 120,
        verbose: bool = True,
    ) -> None:
        if not isinstance(num_workers, int) or num_workers < 0:
            raise ValueError(f"num_workers deve ser um inteiro >= 0, recebi {num_workers!r}.")
        if not isinstance(cpus_per_node, int) or cpus_per_node < 1:
            raise ValueError(
                f"cpus_per_node deve ser um inteiro >= 1 (`ray start --num-cpus`), "
                f"recebi {cpus_per_node!r}."
            )
        if dashboard_port is not None:
            _require_free_port(dashboard_port, "painel (dashboard_port)")
        self.num_workers = num_workers
        self.cpus_per_node = cpus_per_node
        self.dashboard = dashboard
        self.dashboard_host = dashboard_host
        self.port, auto_dashboard = free_ports(2)
        self.dashboard_port = (dashboard_port or auto_dashboard) if dashboard else None
        self._ports = {self.port, auto_dashboard, dashboard_port or 0}
        self.object_store_mb = object_store_mb
        self.start_timeout = start_timeout
        self.verbose = verbose
        self.temp_dir: str | None = None
        self._nodes: list[subprocess.Popen] = []
        self._pids: set[int] = set()

    # -- endereço e painel ---------------------------------------------------------------
    @property
    def address(self) -> str:
        """``127.0.0.1:PORTA`` da cabeça, para ``ray.init(address=...)`` ou ``RAY_ADDRESS``."""
        return f"{LOCALHOST}:{self.port}"

    @property
    def dashboard_url(self) -> str | None:
        return f"http://{LOCALHOST}:{self.dashboard_port}" if self.dashboard else None

    @property
    def pids(self) -> set[int]:
        """PIDs de todos os processos deste cluster vistos até agora (nós e filhos)."""
        self._collect_pids()
        return set(self._pids)

    # -- ciclo de vida ---------------------------------------------------------------------
    def __enter__(self) -> LocalCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> LocalCluster:
        """Sobe a cabeça e os workers; falha em português se algo não subir a tempo."""
        if self._nodes:
            return self
        ensure_auth_token()
        self.temp_dir = tempfile.mkdtemp(prefix="raylab-", dir="/tmp")  # caminho curto: sockets
        atexit.register(self.stop)
        t0 = time.monotonic()
        try:
            self._start_nodes([0])
            # os workers sobem em paralelo, depois que a cabeça já responde
            self._start_nodes(list(range(1, self.num_workers + 1)))
        except BaseException:
            self.stop()
            raise
        if self.verbose:
            extra = f", painel em {self.dashboard_url}" if self.dashboard else ""
            print(
                f"Cluster local: cabeça + {self.num_workers} worker(s), {self.cpus_per_node} CPU "
                f"por nó, em {self.address}{extra} ({time.monotonic() - t0:.0f} s para subir)."
            )
        return self

    def _start_nodes(self, indices: list[int], attempts: int = 2) -> None:
        """Sobe os nós ``indices`` em paralelo; tenta de novo quem esgotou o prazo do Ray.

        Numa máquina sobrecarregada, o raylet pode levar mais que os 30 s que o Ray espera pelo
        seu registro ("timed out during startup"); uma segunda tentativa costuma bastar.
        """
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
                        print(
                            f"nó {node[0]} não registrou a tempo (máquina ocupada?): tentando de novo"
                        )
                    self._kill_node(node[1])
                    failed.append(node[0])
            if not failed:
                return
            indices = failed

    def _kill_node(self, proc: subprocess.Popen) -> None:
        self._collect_pids()
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=5)

    def _node_command(self, index: int, temp_dir: str) -> list[str]:
        ports = free_ports(WORKER_PORTS_PER_NODE + 8, avoid=self._ports)
        self._ports.update(ports)
        workers, (nm, om, agent_http, agent_grpc, runtime_env, metrics, client, _) = (
            ports[:WORKER_PORTS_PER_NODE],
            ports[WORKER_PORTS_PER_NODE:],
        )
        common = [
            f"--num-cpus={self.cpus_per_node}",
            f"--node-manager-port={nm}",
            f"--object-manager-port={om}",
            f"--worker-port-list={','.join(map(str, workers))}",
            f"--dashboard-agent-listen-port={agent_http}",
            f"--dashboard-agent-grpc-port={agent_grpc}",
            f"--runtime-env-agent-port={runtime_env}",
            f"--metrics-export-port={metrics}",
            f"--object-store-memory={self.object_store_mb * 1024**2}",
            f"--temp-dir={temp_dir}",
            "--disable-usage-stats",
        ]
        if index == 0:
            extra = [f"--ray-client-server-port={client}", *common]
            return head_command(
                port=self.port,
                dashboard=self.dashboard,
                dashboard_host=self.dashboard_host,
                dashboard_port=self.dashboard_port or DEFAULT_DASHBOARD_PORT,
                block=True,
                extra=extra,
            )
        return [ray_executable(), "start", f"--address={self.address}", *common, "--block"]

    def _spawn_node(self, index: int, attempt: int = 1) -> tuple[int, subprocess.Popen, str, str]:
        assert self.temp_dir is not None
        node_dir = os.path.join(
            self.temp_dir, f"n{index}" + ("" if attempt == 1 else f"_{attempt}")
        )
        os.makedirs(node_dir)
        cmd = self._node_command(index, node_dir)
        if self.verbose:
            print("$ " + shlex.join(["ray", *cmd[1:]]), flush=True)
        log_path = node_dir + ".log"
        with open(log_path, "w") as log:
            # grupo de processos próprio: stop() encerra o nó inteiro, e só ele
            proc = subprocess.Popen(
                cmd,
                env=_ray_env({"RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S": "0"}),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                preexec_fn=_die_with_parent,
            )
        self._nodes.append(proc)
        self._pids.add(proc.pid)
        return index, proc, node_dir, log_path

    def _wait_ready(self, index: int, proc: subprocess.Popen, node_dir: str, log_path: str) -> None:
        # `ray start` grava este arquivo quando o nó já está no ar
        ready = os.path.join(node_dir, "ray_current_cluster")
        deadline = time.monotonic() + self.start_timeout
        while not os.path.exists(ready):
            if proc.poll() is not None or time.monotonic() > deadline:
                tail = "\n".join(Path(log_path).read_text(errors="replace").splitlines()[-15:])
                what = "a cabeça" if index == 0 else f"o worker {index}"
                why = (
                    f"terminou com código {proc.returncode}"
                    if proc.poll() is not None
                    else f"não ficou pronto em {self.start_timeout:g} s"
                )
                raise ClusterError(f"Não consegui iniciar {what} do cluster local: {why}.\n{tail}")
            time.sleep(0.2)
        self._collect_pids()

    def _collect_pids(self) -> None:
        import psutil

        for proc in self._nodes:
            with contextlib.suppress(psutil.Error):
                self._pids.update(c.pid for c in psutil.Process(proc.pid).children(recursive=True))

    def _leftovers(self) -> list:
        """Processos ainda vivos deste cluster (pelos PIDs vistos ou pelo --temp-dir)."""
        import psutil

        alive = []
        for p in psutil.process_iter(["pid", "cmdline"]):
            with contextlib.suppress(psutil.Error):
                cmdline = " ".join(p.info["cmdline"] or [])
                if p.pid in self._pids or (self.temp_dir and self.temp_dir in cmdline):
                    if p.status() != psutil.STATUS_ZOMBIE:
                        alive.append(p)
        return alive

    def stop(self, timeout: float = 10) -> None:
        """Encerra os nós deste cluster (workers primeiro, cabeça por último). Idempotente."""
        import psutil

        if not self._nodes:
            if self.temp_dir:
                shutil.rmtree(self.temp_dir, ignore_errors=True)
            return
        self._collect_pids()
        for proc in reversed(self._nodes):  # SIGTERM ao `ray start`: ele para os seus filhos
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for proc in self._nodes:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
        for proc in self._nodes:  # o que sobrou do grupo de cada nó
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=5)
        leftovers = self._leftovers()
        for p in leftovers:
            with contextlib.suppress(psutil.Error):
                p.kill()
        psutil.wait_procs(leftovers, timeout=5)
        self._nodes.clear()
        with contextlib.suppress(Exception):
            atexit.unregister(self.stop)
        if self.temp_dir:
            shutil.rmtree(self.temp_dir, ignore_errors=True)
        if self.verbose:
            print(f"Cluster local em {self.address} encerrado.")


if __name__ == "__main__":
    from labutils.cluster_cli import main

    raise SystemExit(main())
