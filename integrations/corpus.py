"""A few support notes shared by the examples: exact error codes and prose worth paraphrasing."""

from __future__ import annotations

NOTES: list[tuple[str, str, dict[str, object]]] = [
    ("kb-1", "Error E4012 means the sync token expired; run `vault login` to get a new one.",
     {"session_id": 1, "kind": "kb"}),
    ("kb-2", "If uploads stop, check free disk space: the agent pauses synchronisation below 500 MB.",
     {"session_id": 1, "kind": "kb"}),
    ("kb-3", "Set max_retry_backoff in agent.toml to cap the wait between retries (default 300 seconds).",
     {"session_id": 2, "kind": "kb"}),
    ("kb-4", "Version 2.3.1 fixed a crash when a folder name contained emoji.",
     {"session_id": 2, "kind": "changelog"}),
    ("kb-5", "Two-factor authentication can be enforced for every member of a workspace.",
     {"session_id": 3, "kind": "kb"}),
    ("kb-6", "The FTS5 keyword index is rebuilt after an upgrade; searches may be slow for a minute.",
     {"session_id": 3, "kind": "kb"}),
]
