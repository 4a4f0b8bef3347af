// One page of a listing whose query may carry a FilterExpression. DynamoDB applies `Limit` before
// the filter, so a single query can return fewer matches than asked, or none with a key to go on.
// This reads on until the page holds `limit` matches and one more is known to exist (so the cursor
// is null exactly when nothing follows), the data ends, or the request's read budget is spent.
import type { DynamoDBDocumentClient, QueryCommandInput } from '@aws-sdk/lib-dynamodb';
import { QueryCommand } from '@aws-sdk/lib-dynamodb';

type Item = Record<string, unknown>;

/**
 * At most this many items are evaluated for one page of a filtered listing: a filter that matches
 * little of a large partition costs a bounded read per request, and the page may then hold fewer
 * than `limit` items (even none) with a cursor to go on.
 */
export const MAX_ITEMS_READ_PER_PAGE = 1000;
/** Items a filtered query asks for at a time: fewer round trips than asking for only what is missing. */
const FILTERED_QUERY_LIMIT = 100;

export interface FilteredPage {
  readonly items: Item[];
  /** The key to start the next page from; undefined when nothing follows. */
  readonly next: Item | undefined;
}

export async function readFilteredPage(
  dynamo: DynamoDBDocumentClient,
  input: Omit<QueryCommandInput, 'ExclusiveStartKey' | 'Limit'>,
  limit: number,
  /** The index key (table and index attributes) of an item, to resume right after it. */
  keyOf: (item: Item) => Item,
  start: Item | undefined,
  maxItemsRead = MAX_ITEMS_READ_PER_PAGE,
): Promise<FilteredPage> {
  const filtered = input.FilterExpression !== undefined;
  const found: Item[] = [];
  let read = 0;
  let next = start;
  do {
    // One more than the page: if it exists, a next page does.
    const wanted = limit + 1 - found.length;
    const ask = Math.min(filtered ? Math.max(wanted, FILTERED_QUERY_LIMIT) : wanted, maxItemsRead - read);
    const page = await dynamo.send(new QueryCommand({ ...input, Limit: ask, ExclusiveStartKey: next }));
    const items = page.Items ?? [];
    found.push(...items);
    read += page.ScannedCount ?? items.length;
    next = page.LastEvaluatedKey;
  } while (next && found.length <= limit && read < maxItemsRead);
  if (found.length > limit) {
    // Resume right after the last item returned, not after the last one read.
    return { items: found.slice(0, limit), next: keyOf(found[limit - 1] as Item) };
  }
  return { items: found, next };
}
