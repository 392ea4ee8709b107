"""Container health check: is the gateway process serving HTTP?

Exit 0 when GET /health answers 200 (healthy) or 503 (up, but the upstream model API is
known bad: restarting the container would not fix that, and the alerts cover it). Exit 1
on any other status, a timeout or a refused connection. Standard library only: the slim
image has no curl.
"""

from __future__ import annotations

import os
import sys
import urllib.error
import urllib.request

ALIVE = frozenset({200, 503})


def main() -> int:
    url = f"http://127.0.0.1:{os.environ.get('PORT', '3001')}/health"
    try:
        with urllib.request.urlopen(url, timeout=4) as response:
            status = int(response.status)
    except urllib.error.HTTPError as exc:
        status = exc.code
    except OSError as exc:
        print(f"unhealthy: {url}: {exc}", file=sys.stderr)
        return 1
    if status in ALIVE:
        return 0
    print(f"unhealthy: {url} answered {status}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
