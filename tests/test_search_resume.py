"""Nada se perde: a busca grava uma linha por configuração assim que ela termina e, rodada de novo,
pula o que já está no CSV.

O teste principal mata (SIGKILL) o processo driver no meio de uma busca real — um Ray local que o
próprio driver iniciou —, roda a busca de novo e confere que cada configuração aparece exatamente
uma vez, com o mesmo MSE de uma busca sem interrupção. Só os processos desse driver são encerrados.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import types
from pathlib import Path

import numpy as np
import pytest
from processes import kill_tree

from labutils import search, system
from labutils.search import (
    RESULT_COLUMNS,
    append_row,
    read_results,
    resumable_search,
    start_csv,
)

ROOT = Path(__file__).resolve().parents[1]
GRID = [(30, d) for d in range(3, 11)]  # 8 configurações de ~0,2–0,5 s, uma por vez (1 CPU)
KILL_AFTER = 3

DRIVER = """
import sys
import numpy as np
import ray
from labutils.raytools import init_ray
from labutils.search import fit_and_score, resumable_search

grid = [tuple(p) for p in eval(sys.argv[2])]
rng = np.random.default_rng(0)
X = rng.normal(size=(3000, 8))
y = X @ rng.normal(size=8) + rng.normal(scale=0.1, size=3000)
data = (X[:2400], y[:2400], X[2400:], y[2400:])
init_ray(num_cpus=1, dashboard=False)


@ray.remote(max_retries=0)
def fit(n, d, data):
    return fit_and_score(n, d, *data)


ref = ray.put(data)
resumable_search(grid, lambda n, d: fit.remote(n, d, ref), sys.argv[1], timeout_s=120)
ray.shutdown()
print("BUSCA COMPLETA")
"""


def _data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(3000, 8))
    y = X @ rng.normal(size=8) + rng.normal(scale=0.1, size=3000)
    return X[:2400], y[:2400], X[2400:], y[2400:]


def _driver(csv_path: Path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "RAY_AUTH_MODE": "token"}
    return system.spawn_group(
        [sys.executable, "-c", DRIVER, str(csv_path), repr(GRID)],
        env=env,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )


def _rows(path: Path) -> int:
    return len(read_results(path)) if path.exists() else 0


@pytest.mark.slow
def test_killed_driver_resumes_without_losing_or_repeating(tmp_path):
    csv_path = tmp_path / "busca.csv"
    proc = _driver(csv_path)
    try:
        deadline = time.monotonic() + 130
        while _rows(csv_path) < KILL_AFTER:
            assert proc.poll() is None, f"o driver terminou antes da hora:\n{proc.stdout.read()}"
            assert time.monotonic() < deadline, "a busca não gravou resultados em 130 s"
            time.sleep(0.05)
    finally:
        kill_tree(proc)
    before = read_results(csv_path)
    assert KILL_AFTER <= len(before) < len(GRID), "o driver deveria morrer no meio da busca"

    proc = _driver(csv_path)
    try:
        out, _ = proc.communicate(timeout=150)
    finally:
        kill_tree(proc)
    assert proc.returncode == 0 and "BUSCA COMPLETA" in out, out[-3000:]

    after = read_results(csv_path)
    assert after[: len(before)] == before, "as linhas gravadas antes da queda mudaram"
    configs = [(n, d) for n, d, _, _ in after]
    assert sorted(configs) == sorted(GRID), f"cada configuração deveria aparecer 1 vez: {configs}"
    uninterrupted = {(n, d): search.fit_and_score(n, d, *_data())[2] for n, d in GRID}
    for n, d, mse, _ in after:
        assert mse == pytest.approx(uninterrupted[(n, d)], rel=0, abs=1e-12), (n, d)


# ---------------------------------------------------------------- sem Ray: o arquivo


class _FakeRay(types.ModuleType):
    def __init__(self):
        super().__init__("ray")

    def wait(self, pending, num_returns=1, timeout=None):
        return [pending[0]], pending[1:]

    def get(self, ref):
        return ref


def test_resume_skips_done_and_drops_a_cut_line(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", _FakeRay())
    path = tmp_path / "r.csv"
    start_csv(path)
    append_row(path, (10, 4, 0.5, 1.0))
    with path.open("ab") as fh:
        fh.write(b"20,6,0.2")  # o processo morreu no meio desta linha
    assert read_results(path) == [(10, 4, 0.5, 1.0)]
    submitted = []

    def submit(n, d):
        submitted.append((n, d))
        return (n, d, 0.1 * d, 2.0)

    out = resumable_search([(10, 4), (20, 6), (30, 8)], submit, path)
    assert submitted == [(20, 6), (30, 8)], "a configuração já gravada foi enviada de novo"
    assert out == [(10, 4, 0.5, 1.0), (20, 6, 0.6000000000000001, 2.0), (30, 8, 0.8, 2.0)]
    assert read_results(path) == [out[0], out[1], out[2]]
    assert path.read_text(encoding="utf-8").count("\n") == 4  # cabeçalho + 3, sem a linha cortada
    assert resumable_search([(10, 4), (20, 6)], submit, path) == out[:2]
    assert len(submitted) == 2, "com tudo gravado, nada deveria ser enviado"
    with pytest.raises(ValueError, match="repetidas"):
        resumable_search([(10, 4), (10, 4)], submit, path)


def test_resume_of_an_empty_or_headless_file(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", _FakeRay())
    path = tmp_path / "r.csv"
    path.write_bytes(b"n_estim")  # morreu escrevendo o cabeçalho
    out = resumable_search([(10, 4)], lambda n, d: (n, d, 0.5, 1.0), path)
    assert out == [(10, 4, 0.5, 1.0)]
    assert path.read_text(encoding="utf-8").splitlines()[0] == ",".join(RESULT_COLUMNS)
