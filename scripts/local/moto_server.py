"""moto in server mode, with DynamoDB's per-item atomicity.

moto serves requests on many threads and does not lock its DynamoDB tables, so two conditional
writes to one item can both pass their condition. Real DynamoDB never allows that, and the
scheduler's leases depend on it. This launcher serialises DynamoDB requests (SQS and the other
services stay concurrent, so long polls do not block anything) and then starts moto as usual.
"""
import sys
import threading

from moto.dynamodb.responses import DynamoHandler
from moto.server import main

_lock = threading.Lock()
_call_action = DynamoHandler.call_action


def _serialised_call_action(self):  # type: ignore[no-untyped-def]
    with _lock:
        return _call_action(self)


DynamoHandler.call_action = _serialised_call_action  # type: ignore[method-assign]

if __name__ == "__main__":
    main(sys.argv[1:])
