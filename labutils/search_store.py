"""Resultados de uma busca que nunca se perdem: CSV com uma linha por configuração, gravada
assim que ela termina (escrita atômica), barra de progresso com ``ray.wait`` e retomada.

Reexportado por :mod:`labutils.search`.
"""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from labutils.config import results_dir
from labutils.grid import validate_grid

#: colunas dos resultados de uma busca (uma linha por configuração)
RESULT_COLUMNS = ("n_estimators", "max_depth", "mse", "segundos")


def results_path(name: str) -> Path:
    """Caminho do CSV ``<pasta de resultados>/<name>.csv``."""
    if not isinstance(name, str) or not name or "/" in name or "\\" in name or name.startswith("."):
        raise ValueError(
            "O nome do resultado deve ser um nome de arquivo simples (ex.: '02_busca'), "
            f"recebi {name!r}."
        )
    return results_dir() / f"{name}.csv"


def _csv_line(row: Sequence[Any]) -> bytes:

    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerow(row)
    return buf.getvalue().encode("utf-8")


def save_results(
    results: Iterable[Sequence[Any]], name: str, columns: Sequence[str] = RESULT_COLUMNS
) -> Path:
    """Grava os resultados (uma tupla por linha) em ``results/<name>.csv`` e devolve o caminho.

    A escrita é atômica: o arquivo é montado ao lado e trocado de uma vez (``os.replace``), então
    quem lê nunca vê um CSV pela metade.
    """
    path = results_path(name)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(_csv_line(columns) + b"".join(_csv_line(r) for r in results))
    os.replace(tmp, path)
    return path


def start_csv(path: Path | str, columns: Sequence[str] = RESULT_COLUMNS) -> Path:
    """Cria (ou recria) o CSV só com o cabeçalho, de forma atômica."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(_csv_line(columns))
    os.replace(tmp, path)
    return path


def append_row(path: Path | str, row: Sequence[Any]) -> None:
    """Acrescenta UMA linha ao CSV numa única escrita ``O_APPEND`` e força a gravação em disco.

    Se o processo morrer, o arquivo termina numa linha inteira (ou, no pior caso, numa linha
    cortada sem ``\\n``, que :func:`read_results` descarta): nada do que já estava lá se perde.
    """
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, _csv_line(row))
        os.fsync(fd)
    finally:
        os.close(fd)


def read_results(path: Path | str) -> list[tuple[int, int, float, float]]:
    """Lê um CSV de resultados: ``[(n_estimators, max_depth, mse, segundos), ...]``.

    Uma última linha sem ``\\n`` (o processo morreu no meio da escrita) é ignorada. Arquivo
    ausente = nenhum resultado.
    """
    path = Path(path)
    if not path.exists():
        return []
    text = path.read_text(encoding="utf-8")
    lines = text.split("\n")[1:]  # sem o cabeçalho
    lines = lines[:-1]  # o que vem depois do último \n: vazio, ou uma linha cortada
    rows = []
    for fields in csv.reader(lines):
        if len(fields) != len(RESULT_COLUMNS):
            continue
        n, d, mse, sec = fields
        rows.append((int(n), int(d), float(mse), float(sec)))
    return rows


def gather_with_progress(
    refs: Sequence[Any],
    *,
    desc: str = "tarefas",
    csv_path: Path | str | None = None,
    columns: Sequence[str] = RESULT_COLUMNS,
    timeout_s: float | None = None,
    append: bool = False,
) -> list[Any]:
    """Espera as tarefas com ``ray.wait`` e uma barra ``tqdm``; devolve na ordem de envio.

    Com ``csv_path``, cada resultado é acrescentado ao CSV assim que chega, numa escrita atômica
    (:func:`append_row`): se a busca cair no meio, o que já terminou está salvo. O arquivo é
    recriado no início, a menos que ``append=True`` (retomada, :func:`resumable_search`). Com
    ``timeout_s``, levanta ``TimeoutError`` se nenhuma tarefa terminar nesse intervalo (em vez de
    esperar para sempre).
    """
    import ray
    from tqdm import tqdm

    refs = list(refs)
    position = {ref: i for i, ref in enumerate(refs)}
    results: list[Any] = [None] * len(refs)
    pending = list(refs)
    if csv_path is not None and (
        not append or not Path(csv_path).exists() or Path(csv_path).stat().st_size == 0
    ):
        start_csv(csv_path, columns)
    with tqdm(total=len(refs), desc=desc, unit="tarefa") as bar:
        while pending:
            done, pending = ray.wait(pending, num_returns=1, timeout=timeout_s)
            if not done:
                raise TimeoutError(
                    f"Nenhuma tarefa terminou em {timeout_s} s ({len(pending)} pendentes). "
                    "Confira se o cluster tem CPUs livres (ray.cluster_resources()); "
                    f"os resultados já recebidos estão em {csv_path or 'memória'}."
                )
            for ref in done:
                value = ray.get(ref)
                results[position[ref]] = value
                if csv_path is not None:
                    append_row(csv_path, value)
                bar.update(1)
    return results


def resumable_search(
    grid: Iterable[Any],
    submit: Any,
    csv_path: Path | str,
    *,
    desc: str = "busca",
    timeout_s: float | None = None,
) -> list[tuple[int, int, float, float]]:
    """Uma busca que retoma de onde parou: nada do que terminou é perdido nem refeito.

    ``submit(n_estimators, max_depth)`` envia uma configuração e devolve a referência Ray de
    ``(n, profundidade, mse, segundos)``. As configurações que já estão em ``csv_path`` (de uma
    execução anterior, interrompida ou não) não são enviadas de novo; as outras são acrescentadas
    ao CSV uma linha por vez, assim que terminam. Devolve os resultados na ordem da grade.
    """
    checked = validate_grid(grid)
    if len(set(checked)) != len(checked):
        raise ValueError(
            "A grade tem configurações repetidas: na busca retomável cada par "
            "(n_estimators, max_depth) identifica uma linha do CSV e deve aparecer uma vez só."
        )
    path = Path(csv_path)
    done = {(n, d): (n, d, mse, s) for n, d, mse, s in read_results(path)}
    if path.exists():  # descarta uma linha cortada no fim (o processo morreu escrevendo)
        raw = path.read_bytes()
        os.truncate(path, raw.rfind(b"\n") + 1)
    todo = [cfg for cfg in checked if cfg not in done]
    refs = [submit(n, d) for n, d in todo]
    for value in gather_with_progress(
        refs, desc=desc, csv_path=path, timeout_s=timeout_s, append=True
    ):
        done[(value[0], value[1])] = tuple(value)
    return [done[cfg] for cfg in checked]
