"""moto in server mode, with DynamoDB's per-item atomicity and cheap transactions.

moto serves requests on many threads and does not lock its DynamoDB tables, so two conditional
writes to one item can both pass their condition. Real DynamoDB never allows that, and the
scheduler's leases depend on it. This launcher serialises DynamoDB requests (SQS and the other
services stay concurrent, so long polls do not block anything) and then starts moto as usual.

moto also backs up every table a transaction touches with a deep copy, once per item of the
transaction, to roll back a failed one: the cost of a transaction grows with the size of the table
(and its memory churn took moto past 18 GB in a benchmark of a thousand jobs). Requests are
serialised here, so it is enough to back up the items the transaction names and put them back if
it fails; this launcher does that instead.

Its SQS receive checks each message it returns against the queue's retention period by computing
all the queue's attributes, counts of visible, in-flight and delayed messages included, each a scan
of the queue with two clock reads per message; it also rebuilds the set of in-flight message groups
(which only FIFO queues use) on every call. A receive from a queue of a thousand messages took
40 ms to 250 ms. Here the retention check reads the one attribute it needs, the scans read the
clock once, and a standard queue has no pending groups.

moto knows nothing of SQS fair queues: it hands out a standard queue's messages in arrival order,
so one tenant's backlog delays every other tenant's messages. Here the visible messages are ordered
as a fair queue delivers them (see FAIR_QUEUE_MIN_IN_FLIGHT below).

moto answers every Query, on a table or an index, by walking every item of the table and keeping
those whose key matches: a query's cost grows with the table, where DynamoDB reads one partition.
With a few thousand runs a query of the time index took 180 ms to 600 ms under the DynamoDB lock,
so each tick stalled every other request for seconds. Here a query reads its partition: the
table's own items under the hash key, or, for an index, the items a map from the index's hash key
holds. The map is built from the table the first time an index is queried and then kept by every
write; it may hold keys that have since left the partition, which moto's own key checks drop (and
the map forgets), so a query returns exactly what moto's full walk would.

moto 5.2 writes every DynamoDB answer by walking the operation's output shape from botocore's model,
trying several spellings of each member's name at every level of every item: under load a quarter of
moto's CPU went there, more than to DynamoDB's own work. An item operation's answer is already the
wire format (moto's `DynamoResult` holds it as plain JSON values), so here it is written with
`json.dumps`; anything the shortcut cannot write as it stands (binary values, timestamps, other
operations) goes through moto's serializer as before. With MOTO_LAUNCHER_VERIFY=1 the launcher
writes both and reports any difference on stderr, which is how the shortcut was checked against the
integration suite.

A long poll in moto sleeps a second at a time between looks at the queue unless a send wakes it,
so a delayed message that comes due, or an in-flight one whose visibility timeout ends, waited up to
a second for the next look: delayed runs started up to a second late. SQS answers a long poll as
soon as a message is available; here the poll sleeps only until the next message of the queue
becomes visible, if that is sooner than the second.

Finally, moto finds the service of every request by listing its modules and matching hundreds of
URL patterns, under a lock; a third of its time under load went there. The answer for a host is
always the same, so it is remembered.
"""
import copy
import json
import os
import sys
import threading

import moto.dynamodb.models as dynamodb_models
from moto.dynamodb.models import DynamoDBBackend
from moto.dynamodb.models.dynamo_type import DynamoType
from moto.dynamodb.responses import DynamoHandler
from moto.moto_server.werkzeug_app import DomainDispatcherApplication
from moto.server import main
from moto.sqs.models import Queue
import moto.sqs.models as sqs_models

_lock = threading.Lock()
_call_action = DynamoHandler.call_action


def _serialised_call_action(self):  # type: ignore[no-untyped-def]
    with _lock:
        return _call_action(self)


DynamoHandler.call_action = _serialised_call_action  # type: ignore[method-assign]


class _NoTableCopies:
    """moto's module-level `copy`, except that a whole table is not copied (see below)."""

    def __getattr__(self, name):  # type: ignore[no-untyped-def]
        return getattr(copy, name)

    @staticmethod
    def deepcopy(value, memo=None):  # type: ignore[no-untyped-def]
        if isinstance(value, dynamodb_models.Table):
            return value
        return copy.deepcopy(value, memo)


dynamodb_models.copy = _NoTableCopies()  # type: ignore[assignment]
_transact_write_items = DynamoDBBackend.transact_write_items


def _key_of(table, op):  # type: ignore[no-untyped-def]
    attributes = op.get("Key") or op.get("Item") or {}
    hash_value = DynamoType(attributes[table.hash_key_attr])
    range_value = DynamoType(attributes[table.range_key_attr]) if table.range_key_attr else None
    return hash_value, range_value


def _transact_with_item_backups(self, transact_items):  # type: ignore[no-untyped-def]
    backups = []
    for entry in transact_items:
        _, op = next(iter(entry.items()))
        table = self.tables.get(op.get("TableName"))
        if table is None:
            continue
        try:
            hash_value, range_value = _key_of(table, op)
        except KeyError:
            continue  # moto reports the malformed request itself
        backups.append((table, hash_value, range_value, copy.deepcopy(table.get_item(hash_value, range_value))))
    try:
        return _transact_write_items(self, transact_items)
    except Exception:
        for table, hash_value, range_value, item in reversed(backups):
            if item is None:
                try:
                    if range_value is not None:
                        table.items[hash_value].pop(range_value, None)
                    else:
                        table.items.pop(hash_value, None)
                except KeyError:
                    pass
            elif range_value is not None:
                table.items[hash_value][range_value] = item
            else:
                table.items[hash_value] = item
        raise


DynamoDBBackend.transact_write_items = _transact_with_item_backups  # type: ignore[method-assign]

# Queries read a partition, not the table (see the module's docstring).
_query = dynamodb_models.Table.query
_table_put_item = dynamodb_models.Table.put_item
_backend_update_item = DynamoDBBackend.update_item
_MISSING = object()


def _index_hash_attributes(index):  # type: ignore[no-untyped-def]
    return tuple(key["AttributeName"] for key in index.schema if key["KeyType"] == "HASH")


def _partition_of(item, attributes):  # type: ignore[no-untyped-def]
    values = []
    for name in attributes:
        value = item.attrs.get(name)
        if value is None:
            return None
        values.append((value.type, str(value.value)))
    return tuple(values)


def _item_key(table, item):  # type: ignore[no-untyped-def]
    return (item.hash_key, item.range_key if table.range_key_attr else None)


def _index_maps(table):  # type: ignore[no-untyped-def]
    maps = table.__dict__.get("_partition_maps")
    if maps is None:
        maps = {}
        table.__dict__["_partition_maps"] = maps
    return maps


def _index_map(table, index):  # type: ignore[no-untyped-def]
    """The index's map from hash key to item keys, built from the table the first time."""
    maps = _index_maps(table)
    entry = maps.get(index.name)
    if entry is None:
        attributes = _index_hash_attributes(index)
        partitions: dict = {}
        for item in dynamodb_models.Table.all_items(table):
            partition = _partition_of(item, attributes)
            if partition is not None:
                partitions.setdefault(partition, {})[_item_key(table, item)] = None
        entry = (attributes, partitions)
        maps[index.name] = entry
    return entry


def _remember(table, item):  # type: ignore[no-untyped-def]
    if item is None:
        return
    for attributes, partitions in _index_maps(table).values():
        partition = _partition_of(item, attributes)
        if partition is not None:
            partitions.setdefault(partition, {})[_item_key(table, item)] = None


def _stored_item(table, key):  # type: ignore[no-untyped-def]
    hash_value, range_value = key
    stored = table.items.get(hash_value, _MISSING)
    if stored is _MISSING or range_value is None:
        return None if stored is _MISSING else stored
    return stored.get(range_value)


def _partition_items(table, hash_key, index_name, hash_key_conditions):  # type: ignore[no-untyped-def]
    """The items a query can match, or None when this query is not one it knows how to narrow."""
    if not index_name:
        if hash_key is None:
            return None
        stored = table.items.get(hash_key, _MISSING)
        if stored is _MISSING:
            return []
        return list(stored.values()) if table.range_key_attr else [stored]
    index = next((i for i in table.global_indexes if i.name == index_name), None)
    if index is None:
        return None  # a local index, or an unknown name that moto reports itself
    attributes = _index_hash_attributes(index)
    conditions = dict(hash_key_conditions or [])
    if not conditions and hash_key is not None and len(attributes) == 1:
        conditions = {attributes[0]: hash_key}
    if set(conditions) != set(attributes):
        return None
    partition = tuple((conditions[name].type, str(conditions[name].value)) for name in attributes)
    _, partitions = _index_map(table, index)
    keys = partitions.get(partition)
    if not keys:
        return []
    items = []
    for key in list(keys):
        item = _stored_item(table, key)
        if item is None or _partition_of(item, attributes) != partition:
            del keys[key]  # the item left the partition, or the table
        else:
            items.append(item)
    return items


def _query_partition(self, hash_key, *args, **kwargs):  # type: ignore[no-untyped-def]
    index_name = kwargs.get("index_name")
    if index_name is None and len(args) > 6:
        index_name = args[6]
    items = _partition_items(self, hash_key, index_name, kwargs.get("hash_key_conditions"))
    if items is None:
        return _query(self, hash_key, *args, **kwargs)
    # moto's query walks `self.all_items()`; for this call, that is the partition. DynamoDB
    # requests are serialised by this launcher, so no other request sees the substitute.
    self.__dict__["all_items"] = lambda: items
    try:
        return _query(self, hash_key, *args, **kwargs)
    finally:
        del self.__dict__["all_items"]


def _put_and_remember(self, *args, **kwargs):  # type: ignore[no-untyped-def]
    item = _table_put_item(self, *args, **kwargs)
    _remember(self, item)
    return item


def _update_and_remember(self, table_name, *args, **kwargs):  # type: ignore[no-untyped-def]
    item = _backend_update_item(self, table_name, *args, **kwargs)
    _remember(self.get_table(table_name), item)
    return item


dynamodb_models.Table.query = _query_partition  # type: ignore[method-assign]
dynamodb_models.Table.put_item = _put_and_remember  # type: ignore[method-assign]
DynamoDBBackend.update_item = _update_and_remember  # type: ignore[method-assign]

# DynamoDB answers written as JSON directly (see the module's docstring).
_ITEM_OPERATIONS = frozenset(
    {"GetItem", "PutItem", "UpdateItem", "DeleteItem", "Query", "Scan", "BatchGetItem", "BatchWriteItem", "TransactWriteItems", "TransactGetItems"}
)
_JSON_HEADERS = {"Content-Type": "application/x-amz-json-1.0"}
_VERIFY = os.environ.get("MOTO_LAUNCHER_VERIFY") == "1"
_output_members: dict = {}


def _item_answer(self, context):  # type: ignore[no-untyped-def]
    name = context.operation_model.name
    if name not in _ITEM_OPERATIONS or not isinstance(self.result, dict):
        return _dynamo_execute_result(self, context)
    members = _output_members.get(name)
    if members is None:
        output = context.operation_model.output_shape
        members = _output_members[name] = frozenset(output.members) if output is not None else frozenset()
    try:
        # Only the output shape's members, as moto's serializer writes (it drops legacy fields).
        body = json.dumps({key: value for key, value in self.result.items() if key in members}, separators=(",", ":"))
    except (TypeError, ValueError):
        return _dynamo_execute_result(self, context)  # bytes (binary attributes) or timestamps
    if _VERIFY:
        status, headers, expected = _dynamo_execute_result(self, context)
        same = status == 200 and json.loads(expected or "{}") == json.loads(body)
        same = same and {k.lower(): v for k, v in headers.items()} == {k.lower(): v for k, v in _JSON_HEADERS.items()}
        if not same:
            print(f"moto launcher: {name} answer differs: {status} {dict(headers)} {expected} != {body}", file=sys.stderr, flush=True)
    return 200, dict(_JSON_HEADERS), body


try:  # moto 5.2 and later; before, moto wrote DynamoDB answers as JSON itself
    from moto.dynamodb.responses import DynamoResult

    _dynamo_execute_result = DynamoResult.execute_result
    DynamoResult.execute_result = _item_answer  # type: ignore[method-assign]
except ImportError:
    pass

# SQS fair queues (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-fair-queues-detailed.html):
# on a standard queue, a message group (tenant) with more than 10% of the queue's in-flight
# messages and at least 30 of its own in flight is a noisy neighbour; while quiet groups have
# messages waiting, consumers get those first, and among noisy groups the one with the fewest in
# flight first. Messages without a group are each their own tenant. moto delivers in arrival order;
# this orders the visible messages the way SQS would hand them out. (SQS's second measure, a
# group's share of recent processing time, is not emulated: it needs the consumer's timings.)
FAIR_QUEUE_MIN_IN_FLIGHT = 30
FAIR_QUEUE_MIN_SHARE = 0.1


def _visible_messages(self):  # type: ignore[no-untyped-def]
    now = sqs_models.unix_time_millis()
    visible = []
    in_flight_by_group: dict = {}
    in_flight = 0
    for message in self._messages:
        if now > message.visible_at:
            if now >= message.delayed_until:
                visible.append(message)
        elif message.approximate_receive_count > 0:
            in_flight += 1
            if message.group_id is not None:
                in_flight_by_group[message.group_id] = in_flight_by_group.get(message.group_id, 0) + 1
    if self.fifo_queue or not in_flight_by_group:
        return visible
    noisy = {
        group
        for group, count in in_flight_by_group.items()
        if count >= FAIR_QUEUE_MIN_IN_FLIGHT and count > FAIR_QUEUE_MIN_SHARE * in_flight
    }
    if not noisy:
        return visible
    quiet = [message for message in visible if message.group_id not in noisy]
    loud = [message for message in visible if message.group_id in noisy]
    # A stable sort: within a group, messages keep their arrival order.
    loud.sort(key=lambda message: in_flight_by_group[message.group_id])
    return quiet + loud


_pending_message_groups = Queue.pending_message_groups.fget  # type: ignore[attr-defined]


def _fifo_pending_message_groups(self):  # type: ignore[no-untyped-def]
    return _pending_message_groups(self) if self.fifo_queue else set()


def _delayed_count(self):  # type: ignore[no-untyped-def]
    now = sqs_models.unix_time_millis()
    return sum(1 for message in self._messages if now < message.delayed_until)


def _not_visible_count(self):  # type: ignore[no-untyped-def]
    now = sqs_models.unix_time_millis()
    return sum(1 for message in self._messages if not now > message.visible_at)


def _valid_for_retention(self, queue_name, message):  # type: ignore[no-untyped-def]
    retention_period = int(self.get_queue(queue_name).message_retention_period)
    return retention_period + message.sent_timestamp / 1000 > sqs_models.unix_time()


def _wait_for_messages(self, timeout):  # type: ignore[no-untyped-def]
    with self._messages_lock:
        now = sqs_models.unix_time_millis()
        soonest = min(
            (max(message.visible_at, message.delayed_until) for message in self._messages if max(message.visible_at, message.delayed_until) > now),
            default=None,
        )
        wait = timeout if soonest is None else min(timeout, max(0.005, (soonest - now) / 1000 + 0.002))
        self._messages_lock.wait_for(lambda: self.messages, timeout=wait)


Queue.wait_for_messages = _wait_for_messages  # type: ignore[method-assign]
Queue.messages = property(_visible_messages)  # type: ignore[assignment]
Queue.approximate_number_of_messages_delayed = property(_delayed_count)  # type: ignore[assignment]
Queue.approximate_number_of_messages_not_visible = property(_not_visible_count)  # type: ignore[assignment]
sqs_models.SQSBackend.is_message_valid_based_on_retention_period = _valid_for_retention  # type: ignore[method-assign]
Queue.pending_message_groups = property(_fifo_pending_message_groups)  # type: ignore[assignment]

_get_backend_for_host = DomainDispatcherApplication.get_backend_for_host
_backend_by_host: dict = {}


def _cached_backend_for_host(self, host):  # type: ignore[no-untyped-def]
    if host is None:
        return None
    if host not in _backend_by_host:
        _backend_by_host[host] = _get_backend_for_host(self, host)
    return _backend_by_host[host]


DomainDispatcherApplication.get_backend_for_host = _cached_backend_for_host  # type: ignore[method-assign]

if __name__ == "__main__":
    main(sys.argv[1:])
