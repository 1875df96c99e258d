"""Configuração comum do pytest (testes unitários e notebooks via nbval).

Os testes rodam na escala ``smoke`` (dados locais, tamanhos mínimos), a menos que
``LABUTILS_SCALE`` já esteja definida. Com ``--nbval-current-env`` estas variáveis chegam
também aos kernels que executam os notebooks.

No fim da sessão, a sessão falha se ficou vivo algum processo do Ray **iniciado por ela** — e
só esses são encerrados. "Iniciado por ela" quer dizer: descendente deste pytest, ou com a
marca :data:`SESSION_MARK` no ambiente (todo processo filho a herda, inclusive os do Ray que um
``ray start`` deixa órfãos). O Ray de outra pessoa na mesma máquina nunca é tocado.
Desligue a verificação com ``LABUTILS_CHECK_RAY_LEFTOVERS=0``.
"""

import os
import secrets
import sys

import pytest

os.environ.setdefault("LABUTILS_SCALE", "smoke")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("RAY_AUTH_MODE", "token")
# Sem barra de progresso do tfds/Ray Data nos logs do CI.
os.environ.setdefault("TFDS_DISABLE_PROGRESS_BAR", "1")


# ---------------------------------------------------------------- nenhum Ray deixado para trás

#: variável de ambiente que marca os processos desta sessão (herdada por todos os filhos)
SESSION_MARK = "LABUTILS_PYTEST_SESSION"
LEFTOVER_GRACE_S = 15.0


def _ray_like(proc) -> bool:
    """Processo do Ray: os daemons (gcs_server, raylet) ou um processo Python do Ray
    (workers ``ray::...``, painel, agentes, ``ray start --block``)."""
    try:
        name = proc.name()
        cmdline = " ".join(proc.cmdline())
    except Exception:
        return False
    if name in ("gcs_server", "raylet") or cmdline.startswith("ray::"):
        return True
    return "/ray/" in cmdline or " ray start" in f" {cmdline}" or "/bin/ray " in cmdline


def session_processes(mark: str, root_pid: int | None = None) -> dict:
    """Processos vivos desta sessão: descendentes de ``root_pid`` (padrão: este processo) ou
    com ``SESSION_MARK=mark`` no ambiente. Zumbis não contam. Devolve ``{pid: Process}``."""
    import psutil

    root = psutil.Process(root_pid or os.getpid())
    found = {}
    try:
        for child in root.children(recursive=True):
            found[child.pid] = child
    except psutil.Error:
        pass
    for proc in psutil.process_iter(["pid", "uids"]):
        if proc.pid in found or proc.pid == root.pid:
            continue
        try:
            if proc.info["uids"] and proc.info["uids"].real != os.getuid():
                continue  # de outro usuário: nem olhamos
            if proc.environ().get(SESSION_MARK) == mark:
                found[proc.pid] = proc
        except psutil.Error:
            continue
    alive = {}
    for pid, proc in found.items():
        try:
            if proc.status() != psutil.STATUS_ZOMBIE:
                alive[pid] = proc
        except psutil.Error:
            continue
    return alive


def ray_leftovers(mark: str, grace: float = LEFTOVER_GRACE_S) -> dict[int, str]:
    """Processos do Ray desta sessão que continuam vivos depois de ``grace`` segundos
    (o Ray leva alguns segundos para encerrar os seus no ``ray.shutdown()``)."""
    import time

    deadline = time.monotonic() + grace
    while True:
        left = {}
        for pid, proc in session_processes(mark).items():
            if _ray_like(proc):
                try:
                    left[pid] = " ".join(proc.cmdline())[:120] or proc.name()
                except Exception:
                    continue
        if not left or time.monotonic() >= deadline:
            return left
        time.sleep(0.5)


def kill_leftovers(pids) -> None:
    """SIGKILL só nos PIDs dados (os que :func:`ray_leftovers` achou)."""
    import psutil

    procs = []
    for pid in pids:
        try:
            proc = psutil.Process(pid)
            proc.kill()
            procs.append(proc)
        except psutil.Error:
            continue
    psutil.wait_procs(procs, timeout=5)


def _check_enabled() -> bool:
    return os.environ.get("LABUTILS_CHECK_RAY_LEFTOVERS", "1") != "0"


def pytest_configure(config):
    # uma marca nova por sessão; um pytest dentro de outro (teste do próprio conftest) ganha
    # a sua, para não confundir os processos das duas
    os.environ[SESSION_MARK] = secrets.token_hex(8)


def pytest_sessionfinish(session, exitstatus):
    _check_leftovers(session)
    session.config.stash[EXIT_STATUS] = int(session.exitstatus)


def _check_leftovers(session):
    """Falha a sessão se algum teste deixou processos do Ray vivos, e encerra só esses."""
    if not _check_enabled():
        return
    left = ray_leftovers(os.environ[SESSION_MARK])
    if not left:
        return
    listing = "\n".join(f"  {pid}: {cmd}" for pid, cmd in sorted(left.items()))
    print(
        f"\nERRO: processos do Ray deixados pelos testes desta sessão (encerrando-os):\n{listing}"
    )
    kill_leftovers(left)
    session.exitstatus = 1


# ---------------------------------------------------------------- saída sem o teardown nativo

#: o código de saída da sessão, guardado no pytest_sessionfinish para o pytest_unconfigure
EXIT_STATUS = pytest.StashKey[int]()


def pytest_unconfigure(config):
    """Sai com o código da sessão sem o teardown das bibliotecas nativas (TF, gRPC, Ray).

    Medido em 3/12/2026: numa de quatro execuções completas, com os 757 testes aprovados e o
    resumo já impresso, o pytest morreu com "Segmentation fault" ao encerrar o interpretador, e o
    make falhou (139). Resumo e JUnit já estão gravados aqui; só o fim do Python é pulado.
    ``LABUTILS_HARD_EXIT=0`` desliga.
    """
    if EXIT_STATUS in config.stash and os.environ.get("LABUTILS_HARD_EXIT", "1") != "0":
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(config.stash[EXIT_STATUS])
