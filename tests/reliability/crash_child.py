"""The child process of the crash-safety runs: writes batches through a journaled engine until killed.

Run as ``python -m tests.reliability.crash_child DIR ROUND SEED MAX_DOCS``. Prints ``ready`` once the engine
is open (recovery done), then adds new documents, upserts new versions of earlier ones and deletes some, in
random batches, through :meth:`HybridEngine.add` / ``delete`` on a persistent FTS5 file, a persistent
QdrantEdgeDenseStore and a journal, until SIGKILL arrives (new ids stop at ``MAX_DOCS``; upserts and deletes go on).
"""

from __future__ import annotations

import random
import sys
import time
from pathlib import Path

from tests.reliability.workloads import crash_doc, open_crash_stack


def main(directory: str, round_no: int, seed: int, max_docs: int) -> None:
    rng = random.Random(seed)
    engine = open_crash_stack(Path(directory))
    print("ready", flush=True)
    written: list[str] = []
    versions: dict[str, int] = {}
    n = 0
    # After MAX_DOCS new ids the child keeps upserting and deleting (never idle) until killed, so every kill lands
    # mid-write whatever the machine's speed; the deadline only ends an orphaned child.
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        action = rng.random()
        if action < 0.15 and written:
            ids = rng.sample(written, min(len(written), rng.randint(1, 16)))
            engine.delete(ids)
            written = [i for i in written if i not in set(ids)]
            continue
        size = rng.randint(1, 64)
        ids: list[str] = []
        for _ in range(size):
            if written and (n >= max_docs or rng.random() < 0.2):
                doc_id = rng.choice(written)
            elif n >= max_docs:
                break  # new ids stay below max_docs: the parent checks exactly r{round}-0 .. r{round}-{max_docs-1}
            else:
                doc_id = f"r{round_no}-{n}"
                n += 1
                written.append(doc_id)
            if doc_id not in ids:
                ids.append(doc_id)
        for doc_id in ids:
            versions[doc_id] = versions.get(doc_id, -1) + 1
        if not ids:
            continue
        docs = [crash_doc(doc_id, versions[doc_id]) for doc_id in ids]
        engine.add(ids, [d[0] for d in docs], [d[1] for d in docs])
    print("done", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]))
