"""The CRD check, a peer of the process's controllers (reconciler/peer.py): the kind it reads (kinds.py), its
flags (settings.py), the check, its registration and its `PEER` (controller.py), its gauge (metrics.py)."""
