"""The webhook-certificate duty, a peer of the process (reconciler/peer.py): a runnable, not a controller —
its kinds (kinds.py), flags (settings.py), the duty (duty.py), its registration and `PEER` (wiring.py), its
series (metrics.py)."""
