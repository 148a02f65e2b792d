"""A harness's event loop, for test_remote.py to kill.

Follows a remote daemon's events after argv's since, printing each as a
JSON line the moment it arrives (what a harness would persist):

    python3 remote_follower.py URL TLS_DIR SINCE
"""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from cowfs import Client  # noqa: E402 (after the path is set)


def main() -> None:
    url, tls_dir, since = sys.argv[1:4]
    c = Client(remote=url, tls_dir=tls_dir)
    for e in c.events(since=int(since), retry_delay=0.02, max_retry_delay=0.2):
        sys.stdout.write(json.dumps(e.to_wire()) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
