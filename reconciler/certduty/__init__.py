"""The webhook-certificate duty, a peer of the process's controllers (reconciler/peer.py): its kinds (kinds.py),
flags (settings.py), the duty, its registration and its `PEER` (controller.py), its series (metrics.py)."""
