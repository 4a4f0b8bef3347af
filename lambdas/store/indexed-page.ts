// One page of a listing read through a keys-only index: the index gives the order and the primary
// filter (its key); the rows are then read by key and the other filters kept in memory. Reads go on
// until the page holds `limit` matches and one more is known to exist (so the cursor is null exactly
// when nothing follows), the index ends, or the request's read budget is spent (decision 0095).
import type { DynamoDBDocumentClient, QueryCommandInput } from '@aws-sdk/lib-dynamodb';
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { MAX_ITEMS_READ_PER_PAGE } from './filtered-page';

type Item = Record<string, unknown>;

/** Index entries asked for at a time when rows may be filtered out. */
const INDEXED_QUERY_LIMIT = 100;

export interface IndexedPage<T> {
  readonly items: T[];
  /** The index key to start the next page from; undefined when nothing follows. */
  readonly next: Item | undefined;
}

export async function readIndexedPage<T>(
  dynamo: DynamoDBDocumentClient,
  input: Omit<QueryCommandInput, 'ExclusiveStartKey' | 'Limit'>,
  options: {
    readonly limit: number;
    readonly start: Item | undefined;
    /** The index key of an entry (table and index key attributes), to resume right after it. */
    readonly keyOf: (entry: Item) => Item;
    /** The rows of the entries, in their order; null where a row no longer exists. */
    readonly load: (entries: readonly Item[]) => Promise<(T | null)[]>;
    /** The filters the index key does not serve. */
    readonly keep: (row: T) => boolean;
    /** Whether any row may be filtered out (otherwise only what the page needs is read). */
    readonly filtered: boolean;
    readonly maxItemsRead?: number;
  },
): Promise<IndexedPage<T>> {
  const budget = options.maxItemsRead ?? MAX_ITEMS_READ_PER_PAGE;
  const found: { row: T; entry: Item }[] = [];
  let read = 0;
  let next = options.start;
  do {
    const wanted = options.limit + 1 - found.length;
    const ask = Math.max(1, Math.min(options.filtered ? Math.max(wanted, INDEXED_QUERY_LIMIT) : wanted, budget - read));
    const page = await dynamo.send(new QueryCommand({ ...input, Limit: ask, ExclusiveStartKey: next }));
    const entries = page.Items ?? [];
    read += entries.length;
    next = page.LastEvaluatedKey;
    const rows = await options.load(entries);
    entries.forEach((entry, index) => {
      const row = rows[index];
      if (row !== null && row !== undefined && options.keep(row)) found.push({ row, entry });
    });
  } while (next && found.length <= options.limit && read < budget);
  if (found.length > options.limit) {
    // Resume right after the last item returned, not after the last one read.
    const last = found[options.limit - 1] as { entry: Item };
    return { items: found.slice(0, options.limit).map((match) => match.row), next: options.keyOf(last.entry) };
  }
  return { items: found.map((match) => match.row), next };
}
