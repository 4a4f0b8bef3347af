// Worker pools as synthesized: each pool has its own lanes and DLQ, its own worker with the pool's
// timeout fed by one event source mapping per lane at the pool's concurrency, exactly the grants
// it needs, and its queues on the dashboard and under the alarms.
import { beforeAll, describe, expect, it } from 'vitest';
import type { SchedulerStackConfig } from '../../lib/config';
import { synthesized } from './support/stacks';
import { dispatchQueue, workerConsumer } from '../../lambdas/store/schema';
import { UNCAPPED_POOL_LOW_LANE_CONCURRENCY } from '../../lambdas/store/pools';

type Resource = { Type: string; Properties: Record<string, any> };

const POOLS: SchedulerStackConfig['pools'] = [
  { name: 'exports', jobTypes: ['export', 'archive'], maxConcurrency: 3, timeoutSeconds: 300 },
  { name: 'billing-fast', jobTypes: ['invoice'], maxConcurrency: 20, lowMaxConcurrency: 3, timeoutSeconds: 60, batchSize: 5 },
];

function synth(id: string, config: Partial<SchedulerStackConfig>): Record<string, Resource> {
  return synthesized(id, config).resources;
}

let resources: Record<string, Resource>;
beforeAll(() => {
  resources = synth('Pools', { pools: POOLS });
});

function idMatching(type: string, pattern: RegExp): string {
  const found = Object.entries(resources).filter(([id, r]) => r.Type === type && pattern.test(id));
  expect(found, String(pattern)).toHaveLength(1);
  return found[0]![0];
}
const queues = (prefix: string) => ({
  standard: idMatching('AWS::SQS::Queue', new RegExp(`^Storage${prefix}Dispatch[0-9A-F]{8}$`)),
  high: idMatching('AWS::SQS::Queue', new RegExp(`^Storage${prefix}DispatchHigh[0-9A-F]{8}$`)),
  low: idMatching('AWS::SQS::Queue', new RegExp(`^Storage${prefix}DispatchLow[0-9A-F]{8}$`)),
  dlq: idMatching('AWS::SQS::Queue', new RegExp(`^Storage${prefix}DispatchDlq[0-9A-F]{8}$`)),
});
const workerId = (prefix: string) => idMatching('AWS::Lambda::Function', new RegExp(`^${prefix}Function[0-9A-F]{8}$`));
const mappingsOf = (fnId: string) =>
  Object.values(resources).filter((r) => r.Type === 'AWS::Lambda::EventSourceMapping' && r.Properties.FunctionName.Ref === fnId);

/** The queue actions granted to a function's role, each with the queue ids it applies to. */
function sqsGrantsOf(fnId: string): Record<string, string[]> {
  const roleRef = resources[fnId]!.Properties.Role['Fn::GetAtt'][0] as string;
  const grants = new Map<string, Set<string>>();
  for (const r of Object.values(resources)) {
    if (r.Type !== 'AWS::IAM::Policy' || !r.Properties.Roles.some((role: { Ref: string }) => role.Ref === roleRef)) continue;
    for (const statement of r.Properties.PolicyDocument.Statement as { Action: string | string[]; Resource: unknown }[]) {
      const refs =
        JSON.stringify(statement.Resource)
          .match(/"Fn::GetAtt":\["([A-Za-z0-9]+)"/g)
          ?.map((m) => m.replace(/.*\["/, '').replace(/"$/, '')) ?? [];
      for (const action of Array.isArray(statement.Action) ? statement.Action : [statement.Action]) {
        if (!action.startsWith('sqs:')) continue;
        const set = grants.get(action) ?? new Set<string>();
        refs.forEach((ref) => set.add(ref));
        grants.set(action, set);
      }
    }
  }
  return Object.fromEntries([...grants].map(([action, refs]) => [action, [...refs].sort()]));
}

describe('worker pools', () => {
  it('give each pool a high, a standard and a low lane that redrive into its own encrypted DLQ, visible for 6x its timeout', () => {
    for (const [prefix, timeout] of [
      ['PoolExports', 300],
      ['PoolBillingFast', 60],
      ['', workerConsumer.functionTimeoutSeconds],
    ] as const) {
      const { standard, high, low, dlq } = queues(prefix);
      for (const lane of [standard, high, low]) {
        const properties = resources[lane]!.Properties;
        expect(properties.RedrivePolicy).toEqual({ deadLetterTargetArn: { 'Fn::GetAtt': [dlq, 'Arn'] }, maxReceiveCount: dispatchQueue.maxReceiveCount });
        expect(properties.VisibilityTimeout).toBeGreaterThanOrEqual(6 * timeout);
        expect(properties.SqsManagedSseEnabled).toBe(true);
      }
      expect(resources[dlq]!.Properties.RedrivePolicy).toBeUndefined();
    }
    expect(Object.values(resources).filter((r) => r.Type === 'AWS::SQS::Queue')).toHaveLength(12);
  });

  /** Each mapping of a function: its queue id, with the concurrency and batch size it was given. */
  const feedsOf = (fnId: string) =>
    Object.fromEntries(
      mappingsOf(fnId).map((m) => {
        expect(m.Properties.FunctionResponseTypes).toEqual(['ReportBatchItemFailures']);
        return [
          m.Properties.EventSourceArn['Fn::GetAtt'][0] as string,
          { batchSize: m.Properties.BatchSize, concurrency: m.Properties.ScalingConfig?.MaximumConcurrency },
        ];
      }),
    );

  it("give each pool a worker with its own timeout, fed from its lanes: high and standard at the pool's concurrency, low at a quarter or as set", () => {
    for (const [prefix, pool, concurrency, lowConcurrency, timeout, batchSize] of [
      // A quarter of 3 is below the mapping's minimum of 2.
      ['WorkerPoolExports', 'PoolExports', 3, 2, 300, 10],
      ['WorkerPoolBillingFast', 'PoolBillingFast', 20, 3, 60, 5],
    ] as const) {
      const fn = workerId(prefix);
      expect(resources[fn]!.Properties.Timeout).toBe(timeout);
      const { standard, high, low } = queues(pool);
      expect(feedsOf(fn)).toEqual({
        [standard]: { batchSize, concurrency },
        [high]: { batchSize, concurrency },
        [low]: { batchSize, concurrency: lowConcurrency },
      });
    }
    // The default pool's worker consumes the default lanes only: uncapped, but for the low lane.
    const defaultWorker = workerId('Worker');
    expect(resources[defaultWorker]!.Properties.Timeout).toBe(workerConsumer.functionTimeoutSeconds);
    const { standard, high, low } = queues('');
    expect(feedsOf(defaultWorker)).toEqual({
      [standard]: { batchSize: 10, concurrency: undefined },
      [high]: { batchSize: 10, concurrency: undefined },
      [low]: { batchSize: 10, concurrency: UNCAPPED_POOL_LOW_LANE_CONCURRENCY },
    });
  });

  it("cap the default pool's low lane at a quarter of workerMaxConcurrency, or at workerLowMaxConcurrency", () => {
    const capped = (config: Partial<SchedulerStackConfig>) => {
      const synthesized = synth('Capped', config);
      const fn = Object.entries(synthesized).find(([id, r]) => r.Type === 'AWS::Lambda::Function' && /^WorkerFunction[0-9A-F]{8}$/.test(id))![0];
      return Object.values(synthesized)
        .filter((r) => r.Type === 'AWS::Lambda::EventSourceMapping' && r.Properties.FunctionName.Ref === fn)
        .map((m) => [String(m.Properties.EventSourceArn['Fn::GetAtt'][0]).replace(/[0-9A-F]{8}$/, ''), m.Properties.ScalingConfig.MaximumConcurrency])
        .sort();
    };
    expect(capped({ workerMaxConcurrency: 40 })).toEqual([
      ['StorageDispatch', 40],
      ['StorageDispatchHigh', 40],
      ['StorageDispatchLow', 10],
    ]);
    expect(capped({ workerMaxConcurrency: 40, workerLowMaxConcurrency: 4 })).toEqual([
      ['StorageDispatch', 40],
      ['StorageDispatchHigh', 40],
      ['StorageDispatchLow', 4],
    ]);
    expect(() => synth('Bad', { workerLowMaxConcurrency: 1 })).toThrow(/workerLowMaxConcurrency must be a whole number from 2 to 1000/);
  });

  it('let a pool worker consume its own lanes only, and send to every lane (a PATCH may move a job to another pool)', () => {
    const exports = queues('PoolExports');
    const billing = queues('PoolBillingFast');
    const fallback = queues('');
    const allLanes = [exports, billing, fallback].flatMap((q) => [q.standard, q.high, q.low]).sort();
    const own = [exports.standard, exports.high, exports.low].sort();
    expect(sqsGrantsOf(workerId('WorkerPoolExports'))).toEqual({
      'sqs:SendMessage': allLanes,
      'sqs:ReceiveMessage': own,
      'sqs:ChangeMessageVisibility': own,
      'sqs:GetQueueUrl': own,
      'sqs:DeleteMessage': own,
      'sqs:GetQueueAttributes': own,
    });
    // The API reads every queue's depth for the health report; the ticker only sends.
    const api = idMatching('AWS::Lambda::Function', /^ApiFunction[0-9A-F]{8}$/);
    expect(sqsGrantsOf(api)).toEqual({
      'sqs:SendMessage': allLanes,
      'sqs:GetQueueAttributes': [...allLanes, exports.dlq, billing.dlq, fallback.dlq].sort(),
    });
    expect(sqsGrantsOf(idMatching('AWS::Lambda::Function', /^TickerFunction[0-9A-F]{8}$/))).toEqual({ 'sqs:SendMessage': allLanes });
  });

  it('tell every function the routing table: job type to pool to lane queues', () => {
    const functions = Object.values(resources).filter(
      (r) => r.Type === 'AWS::Lambda::Function' && String(r.Properties.Description).startsWith('Job scheduler'),
    );
    expect(functions).toHaveLength(6);
    for (const fn of functions) {
      const variables = fn.Properties.Environment.Variables;
      expect(variables.DISPATCH_HIGH_QUEUE_URL).toEqual({ Ref: queues('').high });
      expect(variables.DISPATCH_LOW_QUEUE_URL).toEqual({ Ref: queues('').low });
      const routes = JSON.stringify(variables.DISPATCH_POOLS);
      for (const text of [
        '\\"name\\":\\"exports\\"',
        '\\"jobTypes\\":[\\"export\\",\\"archive\\"]',
        queues('PoolExports').high,
        queues('PoolExports').low,
        queues('PoolBillingFast').dlq,
      ])
        expect(routes).toContain(text);
    }
  });

  it('put every pool queue on the queue graphs, with a DLQ alarm per pool and an oldest-message alarm per lane', () => {
    const alarms = Object.values(resources).filter((r) => r.Type === 'AWS::CloudWatch::Alarm');
    const queueOf = (name: string) => {
      const found = alarms.filter((a) => a.Properties.AlarmName === `Pools-${name}`);
      expect(found, name).toHaveLength(1);
      const properties = found[0]!.Properties;
      // A labelled metric is rendered as a one-entry Metrics list.
      const metric = properties.Metrics ? properties.Metrics[0].MetricStat.Metric : properties;
      return [metric.MetricName, metric.Dimensions[0].Value['Fn::GetAtt'][0]];
    };
    const exports = queues('PoolExports');
    expect(queueOf('PoolExportsDlqNotEmpty')).toEqual(['ApproximateNumberOfMessagesVisible', exports.dlq]);
    expect(queueOf('PoolExportsOldestMessageTooOld')).toEqual(['ApproximateAgeOfOldestMessage', exports.standard]);
    expect(queueOf('PoolExportsOldestHighMessageTooOld')).toEqual(['ApproximateAgeOfOldestMessage', exports.high]);
    expect(queueOf('PoolExportsOldestLowMessageTooOld')).toEqual(['ApproximateAgeOfOldestMessage', exports.low]);
    expect(queueOf('OldestLowMessageTooOld')).toEqual(['ApproximateAgeOfOldestMessage', queues('').low]);
    expect(queueOf('PoolBillingFastDlqNotEmpty')).toEqual(['ApproximateNumberOfMessagesVisible', queues('PoolBillingFast').dlq]);
    expect(queueOf('OldestHighMessageTooOld')).toEqual(['ApproximateAgeOfOldestMessage', queues('').high]);
    expect(queueOf('DispatchDlqNotEmpty')).toEqual(['ApproximateNumberOfMessagesVisible', queues('').dlq]);

    const dashboard = Object.values(resources).find((r) => r.Type === 'AWS::CloudWatch::Dashboard')!;
    const body = JSON.stringify(dashboard.Properties.DashboardBody);
    const allQueues = [queues(''), exports, queues('PoolBillingFast')].flatMap((q) => [q.standard, q.high, q.low, q.dlq]);
    for (const metricName of ['ApproximateNumberOfMessagesVisible', 'ApproximateNumberOfMessagesNotVisible', 'ApproximateAgeOfOldestMessage']) {
      for (const id of allQueues) expect(body).toMatch(new RegExp(`${metricName}\\\\",\\\\"QueueName\\\\",\\\\"",\\{"Fn::GetAtt":\\["${id}"`));
    }
    // Every alarm, the pools' included, is on the alarm status widget.
    for (const [id, r] of Object.entries(resources)) if (r.Type === 'AWS::CloudWatch::Alarm') expect(body).toContain(id);
  });

  it("synthesizes many pools: each other pool's worker has a throttle alarm of its own (a metric math alarm takes 10 metrics at most)", () => {
    const many = synth('ManyPools', {
      pools: Array.from({ length: 8 }, (_, index) => ({ name: `pool-${index}`, jobTypes: [`type-${index}`], maxConcurrency: 2, timeoutSeconds: 60 })),
    });
    const alarms = Object.entries(many).filter(([, r]) => r.Type === 'AWS::CloudWatch::Alarm');
    const throttles = alarms.filter(([id]) => /WorkerThrottled/.test(id));
    expect(throttles).toHaveLength(8);
    for (const [, r] of throttles) expect(r.Properties).toMatchObject({ Namespace: 'AWS/Lambda', MetricName: 'Throttles', Statistic: 'Sum', Threshold: 0 });
    for (const [, r] of alarms) expect((r.Properties.Metrics ?? []).length, JSON.stringify(r.Properties.AlarmName)).toBeLessThanOrEqual(11);
  });

  it('refuses pools the event source mapping or the routing cannot honour', () => {
    const refuse = (pools: SchedulerStackConfig['pools'], message: RegExp) => expect(() => synth('Bad', { pools })).toThrow(message);
    refuse([{ name: 'a', jobTypes: ['x'], maxConcurrency: 1, timeoutSeconds: 60 }], /maxConcurrency must be a whole number from 2/);
    refuse([{ name: 'a', jobTypes: ['x'], maxConcurrency: 2, timeoutSeconds: 901 }], /timeoutSeconds/);
    refuse(
      [
        { name: 'a', jobTypes: ['x'], maxConcurrency: 2, timeoutSeconds: 60 },
        { name: 'b', jobTypes: ['x'], maxConcurrency: 2, timeoutSeconds: 60 },
      ],
      /job type "x" is in pools "a" and "b"/,
    );
    refuse([{ name: 'default', jobTypes: ['x'], maxConcurrency: 2, timeoutSeconds: 60 }], /implicit pool/);
    refuse([{ name: 'Exports', jobTypes: ['x'], maxConcurrency: 2, timeoutSeconds: 60 }], /lower-case/);
    refuse(
      [{ name: 'a', jobTypes: ['x'], maxConcurrency: 4, lowMaxConcurrency: 5, timeoutSeconds: 60 }],
      /lowMaxConcurrency must be a whole number from 2 to its maxConcurrency/,
    );
  });
});
