"""Configuração comum do pytest (testes unitários e notebooks via nbval).

Os testes rodam na escala ``smoke`` (dados locais, tamanhos mínimos), a menos que
``LABUTILS_SCALE`` já esteja definida. Com ``--nbval-current-env`` estas variáveis chegam
também aos kernels que executam os notebooks.
"""

import os

os.environ.setdefault("LABUTILS_SCALE", "smoke")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("RAY_AUTH_MODE", "token")
# Sem barra de progresso do tfds/Ray Data nos logs do CI.
os.environ.setdefault("TFDS_DISABLE_PROGRESS_BAR", "1")


# ---------------------------------------------------------------- nenhum Ray deixado para trás

_RAY_DAEMONS = ("gcs_server", "raylet")
_ray_before: set[int] = set()


def _ray_daemons() -> dict[int, str]:
    import psutil

    found = {}
    for proc in psutil.process_iter(["pid", "name"]):
        if proc.info["name"] in _RAY_DAEMONS:
            found[proc.info["pid"]] = proc.info["name"]
    return found


def _check_enabled() -> bool:
    # ligado pelo `make test` (e no CI); desligado quando outras sessões usam Ray na máquina
    return os.environ.get("LABUTILS_CHECK_RAY_LEFTOVERS") == "1"


def pytest_sessionstart(session):
    if _check_enabled():
        _ray_before.update(_ray_daemons())


def pytest_sessionfinish(session, exitstatus):
    """Falha a sessão se algum teste deixou processos do Ray vivos (e os encerra)."""
    import time

    import psutil

    if not _check_enabled():
        return
    deadline = time.monotonic() + 15
    leftovers = {}
    while time.monotonic() < deadline:
        leftovers = {p: n for p, n in _ray_daemons().items() if p not in _ray_before}
        if not leftovers:
            return
        time.sleep(0.5)
    print(f"\nERRO: processos do Ray deixados pelos testes: {leftovers}; encerrando-os.")
    for pid in leftovers:
        try:
            psutil.Process(pid).kill()
        except psutil.Error:
            pass
    session.exitstatus = 1
