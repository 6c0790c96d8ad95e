import sys

from modelbooster.cli import main

sys.exit(main())
