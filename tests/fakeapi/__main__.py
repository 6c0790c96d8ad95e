"""Entry point: `python -m tests.fakeapi --port PORT --kubeconfig FILE`."""

import sys

from tests.fakeapi.main import main

sys.exit(main())
