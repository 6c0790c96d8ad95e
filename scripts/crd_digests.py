"""Record the digest of every CRD this version generates in shared/crd_digests.json.

The reconciler compares the served CRDs with these digests (shared/crd_digest.py) without building the CRDs from
the models, which would keep ~10 MB of its memory. Run it whenever the CRDs change (as `modelbooster crds
--chart charts/modelbooster` is run); a test fails while the recorded table differs from what is generated.

    python scripts/crd_digests.py           # print the table
    python scripts/crd_digests.py --write   # record it
    python scripts/crd_digests.py --check   # exit 1 when the recorded table is stale
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from shared.crd_digest import DIGEST_TABLE_FILE  # noqa: E402
from shared.crds import digest_table  # noqa: E402


def table_text() -> str:
    return json.dumps(digest_table(), indent=2, sort_keys=True) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--write", action="store_true", help=f"write {DIGEST_TABLE_FILE.name}")
    mode.add_argument("--check", action="store_true", help="exit 1 when the recorded table is stale")
    args = parser.parse_args(argv)
    text = table_text()
    if args.write:
        DIGEST_TABLE_FILE.write_text(text, encoding="utf-8")
        return 0
    if args.check:
        current = DIGEST_TABLE_FILE.read_text(encoding="utf-8") if DIGEST_TABLE_FILE.exists() else ""
        if current != text:
            print(f"{DIGEST_TABLE_FILE} is stale: run python scripts/crd_digests.py --write", file=sys.stderr)
            return 1
        return 0
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
