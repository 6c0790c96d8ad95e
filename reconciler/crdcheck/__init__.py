"""The CRD check, a peer of the process (reconciler/peer.py): a runnable, not a controller — the kind it reads
(kinds.py), its flags (settings.py), the check (check.py), its registration and `PEER` (wiring.py), its gauge
(metrics.py)."""
