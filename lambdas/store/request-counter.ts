// Counts the AWS requests a process makes, by service and operation, and the DynamoDB capacity
// they consume (ReturnConsumedCapacity). For benchmarks and for tests that hold the number of
// requests per execution to a budget; production clients do not carry it.
import type { AwsClients } from './aws';

type Handler = (args: { input: Record<string, unknown> }) => Promise<{ output: Record<string, unknown> }>;
interface Stack {
  add(middleware: (next: Handler, context: { commandName?: string }) => Handler, options: { step: 'initialize'; name: string }): void;
}

const CAPACITY_OPERATIONS = new Set([
  'GetItem',
  'PutItem',
  'UpdateItem',
  'DeleteItem',
  'Query',
  'Scan',
  'BatchGetItem',
  'BatchWriteItem',
  'TransactWriteItems',
  'TransactGetItems',
]);

interface Capacity {
  readonly CapacityUnits?: number;
  readonly ReadCapacityUnits?: number;
  readonly WriteCapacityUnits?: number;
}

export interface RequestTally {
  /** Requests by `service.Operation`, e.g. `dynamodb.UpdateItem`, `sqs.SendMessageBatch`. */
  readonly calls: Record<string, number>;
  /** DynamoDB capacity units as the backend reports them (moto: an approximation). */
  readonly readUnits: number;
  readonly writeUnits: number;
}

export class RequestCounter {
  private calls = new Map<string, number>();
  private readUnits = 0;
  private writeUnits = 0;

  /** Counts every request of these clients from now on. */
  attach(clients: AwsClients): void {
    this.attachTo(clients.dynamo.middlewareStack as unknown as Stack, 'dynamodb');
    this.attachTo(clients.sqs.middlewareStack as unknown as Stack, 'sqs');
    this.attachTo(clients.cloudwatch.middlewareStack as unknown as Stack, 'cloudwatch');
    this.attachTo(clients.s3.middlewareStack as unknown as Stack, 's3');
  }

  tally(): RequestTally {
    return {
      calls: Object.fromEntries([...this.calls.entries()].sort(([a], [b]) => a.localeCompare(b))),
      readUnits: this.readUnits,
      writeUnits: this.writeUnits,
    };
  }

  reset(): void {
    this.calls = new Map();
    this.readUnits = 0;
    this.writeUnits = 0;
  }

  private attachTo(stack: Stack, service: string): void {
    stack.add(
      (next, context) => async (args) => {
        const operation = (context.commandName ?? 'Unknown').replace(/Command$/, '');
        const name = `${service}.${operation}`;
        this.calls.set(name, (this.calls.get(name) ?? 0) + 1);
        const isCapacityOperation = service === 'dynamodb' && CAPACITY_OPERATIONS.has(operation);
        if (isCapacityOperation && args.input.ReturnConsumedCapacity === undefined) args.input.ReturnConsumedCapacity = 'TOTAL';
        const result = await next(args);
        if (isCapacityOperation) this.addCapacity(operation, result.output.ConsumedCapacity as Capacity | Capacity[] | undefined);
        return result;
      },
      { step: 'initialize', name: `requestCounter-${service}` },
    );
  }

  private addCapacity(operation: string, consumed: Capacity | Capacity[] | undefined): void {
    for (const entry of [consumed ?? []].flat()) {
      const total = entry.CapacityUnits ?? 0;
      const reads = entry.ReadCapacityUnits ?? (/^(Get|Query|Scan|BatchGet|TransactGet)/.test(operation) ? total : 0);
      const writes = entry.WriteCapacityUnits ?? (reads === 0 ? total : 0);
      this.readUnits += reads;
      this.writeUnits += writes;
    }
  }
}
