"""Máquinas de uma sala de aula numa só: *network namespaces* com IP, ``HOME`` e ``TMPDIR``
próprios, ligadas por um switch, com o firewall da sala (``tests/test_classroom_machines.py`` e
``tests/test_classroom_skew.py``). Precisa de root (``ip netns``) e do ``iptables``."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from labutils import config
from labutils.cluster import CLASSROOM_PORTS

SUBNET = "10.231.77"
PORT = 6379
ROOT = Path(__file__).resolve().parents[1]
#: nomes curtos e únicos por execução (o nome de uma interface tem no máximo 15 caracteres)
TAG = f"lab{os.getpid() % 100000}"


def _can_make_namespaces() -> str | None:
    """``None`` se dá para criar namespaces aqui; senão o motivo para pular."""
    if os.geteuid() != 0:
        return "precisa de root para criar network namespaces (o CI roda como root)"
    if not shutil.which("ip"):
        return "falta o comando `ip` (iproute2)"
    if not shutil.which("iptables"):
        return "falta o `iptables` (o firewall do teste): `make firewall` ou `apt-get install iptables`"
    probe = f"{TAG}probe"
    made = subprocess.run(["ip", "netns", "add", probe], capture_output=True, timeout=10)
    if made.returncode != 0:
        return f"`ip netns add` falhou: {made.stderr.decode().strip()}"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True, timeout=10)
    return None


#: ``None`` se dá para criar as máquinas aqui; senão o motivo para pular o teste
WHY_NOT = _can_make_namespaces()


def ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=10)


class Machine:
    """Uma máquina da sala: namespace, IP, ``HOME`` e ``TMPDIR`` próprios."""

    def __init__(self, index: int, root: Path):
        self.ns = f"{TAG}m{index}"
        self.link = f"{TAG}v{index}"  # o "cabo" desta máquina (a ponta do veth dentro dela)
        self.ip = f"{SUBNET}.{index + 1}"
        self.home = root / f"home{index}"
        self.tmp = root / f"t{index}"  # curto: o Ray põe sockets Unix aqui dentro
        self.home.mkdir()
        self.tmp.mkdir()

    def env(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in config.ray_env().items() if not k.startswith("RAY_AUTH_TOKEN")}
        env.pop("RAY_ADDRESS", None)
        env.update(HOME=str(self.home), TMPDIR=str(self.tmp), **extra)
        return env

    def run(self, args: list[str], timeout: float = 120, **extra: str):
        """Roda ``args`` dentro desta máquina; devolve ``(saída, segundos, código)``."""
        cmd = ["ip", "netns", "exec", self.ns, *args]
        start = time.monotonic()
        done = subprocess.run(
            cmd, env=self.env(**extra), capture_output=True, text=True, timeout=timeout
        )
        return done.stdout + done.stderr, time.monotonic() - start, done.returncode

    def start_python(self, code: str, *args: str, stdout, **extra: str) -> subprocess.Popen:
        """``python -c code args`` nesta máquina, sem esperar; saída e erro em ``stdout``."""
        return subprocess.Popen(
            ["ip", "netns", "exec", self.ns, sys.executable, "-c", code, *args],
            cwd=ROOT,
            env=self.env(**extra),
            stdout=stdout,
            stderr=subprocess.STDOUT,
            text=True,
        )

    def cluster(self, *args: str, timeout: float = 120, **extra: str):
        return self.run([sys.executable, "-m", "labutils.cluster", *args], timeout, **extra)

    def firewall(self) -> None:
        """Aceita só as portas da tabela da sala (TCP, vindas da rede da sala) e o loopback."""
        rules = [
            ["-P", "INPUT", "DROP"],
            ["-A", "INPUT", "-i", "lo", "-j", "ACCEPT"],
            ["-A", "INPUT", "-m", "conntrack", "--ctstate", "ESTABLISHED,RELATED", "-j", "ACCEPT"],
        ]
        for port in CLASSROOM_PORTS:
            dport = str(port.first) if port.first == port.last else f"{port.first}:{port.last}"
            rules.append(["-A", "INPUT", "-p", "tcp", "-s", f"{SUBNET}.0/24", "--dport", dport,
                          "-j", "ACCEPT"])  # fmt: skip
        for rule in rules:
            subprocess.run(["ip", "netns", "exec", self.ns, "iptables", *rule], check=True,
                           capture_output=True, timeout=10)  # fmt: skip

    def pids(self) -> list[int]:
        out = subprocess.run(
            ["ip", "netns", "pids", self.ns], capture_output=True, text=True, timeout=10
        )
        return [int(p) for p in out.stdout.split()]


def end(machines: list[Machine], switch: str) -> None:
    """Encerra todo processo iniciado nas máquinas e remove os namespaces (SIGTERM, SIGKILL)."""
    for sig, wait_s in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 2.0)):
        for pid in [pid for machine in machines for pid in machine.pids()]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        deadline = time.monotonic() + wait_s
        while any(m.pids() for m in machines) and time.monotonic() < deadline:
            time.sleep(0.2)
    for name in [m.ns for m in machines] + [switch]:
        subprocess.run(["ip", "netns", "del", name], capture_output=True, timeout=10)


@contextlib.contextmanager
def machines(count: int, *, firewalled: int = 0):
    """``count`` máquinas ligadas por um switch (uma ponte num namespace próprio); as
    ``firewalled`` primeiras atrás do firewall da sala. No fim, nada delas sobra."""
    root = Path(tempfile.mkdtemp(prefix="sala-", dir="/tmp"))
    switch = f"{TAG}sw"
    made = [Machine(k, root) for k in range(count)]
    try:
        ip("netns", "add", switch)
        ip("-n", switch, "link", "add", "br0", "type", "bridge")
        ip("-n", switch, "link", "set", "br0", "up")
        for k, machine in enumerate(made):
            ip("netns", "add", machine.ns)
            ip("link", "add", f"{TAG}v{k}", "type", "veth", "peer", "name", f"{TAG}s{k}")
            ip("link", "set", f"{TAG}v{k}", "netns", machine.ns)
            ip("link", "set", f"{TAG}s{k}", "netns", switch)
            ip("-n", switch, "link", "set", f"{TAG}s{k}", "master", "br0", "up")
            ip("-n", machine.ns, "addr", "add", f"{machine.ip}/24", "dev", f"{TAG}v{k}")
            ip("-n", machine.ns, "link", "set", "lo", "up")
            ip("-n", machine.ns, "link", "set", f"{TAG}v{k}", "up")
            # o Ray escolhe o IP do nó pela rota padrão
            ip("-n", machine.ns, "route", "add", "default", "dev", f"{TAG}v{k}")
        for machine in made[:firewalled]:
            machine.firewall()
        yield made
    finally:
        end(made, switch)
        shutil.rmtree(root, ignore_errors=True)
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    left = [name for name in [m.ns for m in made] + [switch] if name in listed]
    assert not left, f"namespaces que sobraram: {left}"
