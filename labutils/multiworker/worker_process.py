"""Um processo de worker "à mão" (:func:`labutils.multiworker.by_hand.launch_by_hand`).

``python -m labutils.multiworker.worker_process PASTA ÍNDICE``: lê a função serializada em
``PASTA/job.pkl``, roda-a e grava o retorno em ``PASTA/result_ÍNDICE.pkl`` (ou, se ela falhar, o
traceback em ``PASTA/error_ÍNDICE.txt``, e sai com código 1).
"""

from __future__ import annotations

import sys
from pathlib import Path


def main(workdir: str, index: str) -> int:
    from ray import cloudpickle  # o mesmo serializador que o Ray usa

    fn, config = cloudpickle.loads((Path(workdir) / "job.pkl").read_bytes())
    try:
        value = fn(config)
    except Exception:
        import traceback

        (Path(workdir) / f"error_{index}.txt").write_text(traceback.format_exc())
        return 1
    (Path(workdir) / f"result_{index}.pkl").write_bytes(cloudpickle.dumps(value))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(*sys.argv[1:3]))
