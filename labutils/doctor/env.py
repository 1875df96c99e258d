"""A máquina e os dados: núcleos, escala, conjuntos em ``data/`` e acesso aos servidores."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

from labutils import data
from labutils.config import (
    DATA_DIR_ENV,
    SCALE_ENV,
    SCALES,
    SYNTHETIC_ENV,
    current_scale,
    data_dir,
    synthetic_data,
)
from labutils.doctor.rows import FAIL, OK, WARN, Row

HOST_TIMEOUT_S = 2.0


def check_cpus(count: int | None = None) -> Row:
    if count is not None and (isinstance(count, bool) or not isinstance(count, int) or count < 1):
        raise ValueError(f"count deve ser um inteiro >= 1 (núcleos), recebi {count!r}.")
    count = count if count is not None else (os.cpu_count() or 1)
    if count >= 2:
        return Row(OK, "CPUs", f"{count} CPUs lógicas{_physical()}")
    return Row(
        WARN,
        "CPUs",
        f"{count} núcleo: as comparações com 2 workers não terão ganho",
        "Use uma máquina com 2 ou mais núcleos (ou junte outro nó ao cluster Ray).",
    )


def _physical() -> str:
    """``", N núcleos físicos, M GB de memória"`` (o que o psutil souber dizer)."""
    import psutil

    cores = psutil.cpu_count(logical=False)
    memory = psutil.virtual_memory().total / 2**30
    return (f", {cores} núcleos físicos" if cores else "") + f", {memory:.0f} GB de memória"


def check_scale() -> Row:
    try:
        scale = current_scale()
    except ValueError as err:
        return Row(
            FAIL, "escala", str(err), f"Use {SCALE_ENV}=full (aula) ou smoke (teste rápido)."
        )
    if scale == "smoke":
        return Row(
            OK,
            "escala",
            "smoke: tamanhos mínimos e dados locais/sintéticos (para testar, não para medir)",
        )
    return Row(OK, "escala", f"full: tamanhos da aula (mude com {SCALE_ENV}={'|'.join(SCALES)})")


def dataset_hosts() -> dict[str, str]:
    """Servidores de onde cada conjunto é baixado."""
    from urllib.parse import urlparse

    try:
        from sklearn.datasets._california_housing import ARCHIVE

        housing = urlparse(ARCHIVE.url).hostname or ARCHIVE.url
    except (ImportError, AttributeError):  # scikit-learn ausente ou mudou: a linha do pacote acusa
        housing = "ndownloader.figshare.com"
    return {"California Housing": housing, "CIFAR-100": data.CIFAR_HOST}


def check_datasets(reachable: dict[str, bool] | None = None) -> list[Row]:
    """Dados em ``data/``. ``reachable``: nome → servidor acessível (``None`` = não testado)."""
    try:
        smoke = current_scale() == "smoke"
    except ValueError:
        smoke = False
    rows = []
    for name, present in data.datasets_present().items():
        item = f"dados: {name}"
        if present:
            rows.append(Row(OK, item, f"presente em {data_dir()}"))
        elif smoke:
            rows.append(Row(OK, item, "ausente, mas a escala smoke usa dados locais"))
        elif synthetic_data():
            detail = f"ausente; {SYNTHETIC_ENV}=1: o ensaio usa dados SINTÉTICOS do tamanho real"
            rows.append(Row(WARN, item, detail, "para a aula, baixe os reais: `make data`"))
        elif reachable is not None and not reachable.get(name, False):
            rows.append(
                Row(
                    FAIL,
                    item,
                    f"ausente em {data_dir()} e o servidor está inacessível",
                    "Numa máquina com internet rode `make data` e copie a pasta data/ para cá "
                    f"(ou aponte {DATA_DIR_ENV} para ela); para só testar: {SCALE_ENV}=smoke.",
                )
            )
        else:
            rows.append(
                Row(
                    WARN,
                    item,
                    f"ausente em {data_dir()}: será baixado na primeira lição que o usar",
                    "Baixe antes da aula para não depender da rede: `make data`.",
                )
            )
    return rows


def check_hosts(
    hosts: dict[str, str | tuple[str, int]] | None = None, timeout: float = HOST_TIMEOUT_S
) -> tuple[list[Row], dict[str, bool]]:
    """Testa em paralelo se cada servidor abre conexão em até ``timeout`` segundos
    (:func:`labutils.data.host_reachable`)."""
    targets = {
        k: v if isinstance(v, tuple) else (v, 443) for k, v in (hosts or dataset_hosts()).items()
    }
    with ThreadPoolExecutor(max_workers=max(1, len(targets))) as pool:
        futures = {
            k: pool.submit(data.host_reachable, h, p, timeout) for k, (h, p) in targets.items()
        }
        reachable = {k: f.result() for k, f in futures.items()}
    rows = []
    for name, (host, _port) in targets.items():
        item = f"rede: {host}"
        if reachable[name]:
            rows.append(Row(OK, item, f"acessível ({name})"))
        else:
            rows.append(
                Row(
                    WARN,
                    item,
                    f"sem resposta em {timeout:g} s ({name})",
                    "Sem internet só funcionam os dados já em data/ e a escala smoke; "
                    "confira proxy/firewall ou rode `make data` onde houver rede.",
                )
            )
    return rows, reachable
