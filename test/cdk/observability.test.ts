// The dashboard and the alarms as synthesized: which metric each widget and alarm reads, with
// which statistic, threshold and missing-data rule, and who is notified.
import { beforeAll, describe, expect, it } from 'vitest';
import { METRICS_NAMESPACE, Metric, SERVICE_NAME } from '../../lambdas/core/metrics';
import type { SchedulerStackConfig } from '../../lib/config';
import { App, Aspects } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { MINISTACK_CONTEXT, MINISTACK_SQS_BATCH_ACTIONS, MiniStackTemplateAdjustments } from '../../lib/ministack-adjustments';
import { SchedulerStack } from '../../lib/scheduler-stack';
import { synthesized, TEST_ENV } from './support/stacks';

type Resource = { Type: string; Properties: Record<string, any> };
type Series = {
  namespace?: string;
  metricName?: string;
  dimensions: Record<string, string>;
  expression?: string;
  options: Record<string, any>;
};

const TOPIC = 'arn:aws:sns:us-east-1:123456789012:ops';
const ALARMS = [
  'DispatchDlqNotEmpty',
  'DeadRunsRising',
  // Outcome notifications that spent their budget (docs/notifications.md).
  'NotificationsDead',
  'StartLagP99High',
  'OldestMessageTooOld',
  'TickerErrors',
  'TickerNotRunning',
  'LambdaThrottles',
  // The default pool's high lane (decision 0050) and low lane (decision 0051).
  'OldestHighMessageTooOld',
  'OldestLowMessageTooOld',
] as const;

function synth(id: string, config?: Partial<SchedulerStackConfig>): Record<string, Resource> {
  return synthesized(id, config).resources;
}

/** A token as a placeholder that can sit inside a JSON string: <Ref:Id> or <GetAtt:Id.Attr>. */
function placeholder(token: any): string {
  if (token.Ref) return `<Ref:${token.Ref}>`;
  if (token['Fn::GetAtt']) return `<GetAtt:${token['Fn::GetAtt'][0]}.${token['Fn::GetAtt'][1]}>`;
  throw new Error(`unexpected token ${JSON.stringify(token)}`);
}

function dashboardOf(resources: Record<string, Resource>): { name: string; body: any } {
  const dashboards = Object.values(resources).filter((r) => r.Type === 'AWS::CloudWatch::Dashboard');
  expect(dashboards).toHaveLength(1);
  const { DashboardName, DashboardBody } = dashboards[0]!.Properties;
  const [separator, parts] = DashboardBody['Fn::Join'];
  const text = (parts as unknown[]).map((part) => (typeof part === 'string' ? part : placeholder(part))).join(separator);
  return { name: DashboardName, body: JSON.parse(text) };
}

function seriesOf(widget: any): Series[] {
  return (widget.properties.metrics as unknown[][]).map((row) => {
    const last = row[row.length - 1];
    const options = typeof last === 'object' ? (last as Record<string, any>) : {};
    const parts = (typeof last === 'object' ? row.slice(0, -1) : row) as string[];
    if (parts.length === 0) return { expression: options.expression, dimensions: {}, options };
    const [namespace, metricName, ...pairs] = parts;
    const dimensions: Record<string, string> = {};
    for (let i = 0; i < pairs.length; i += 2) dimensions[pairs[i]!] = pairs[i + 1]!;
    return { namespace, metricName, dimensions, options };
  });
}

/** The visible series of a graph as short strings: `namespace/name stat` or the expression. */
function visible(widget: any): string[] {
  return seriesOf(widget)
    .filter((s) => s.options.visible !== false)
    .map((s) => s.expression ?? `${s.namespace}/${s.metricName} ${s.options.stat}`);
}

const service = { Service: SERVICE_NAME };
const custom = (name: string) => `${METRICS_NAMESPACE}/${name}`;

let resources: Record<string, Resource>;
let widgets: any[];
let dashboardName: string;

const logicalIdOf = (type: string, predicate: (r: Resource) => boolean) => {
  const found = Object.entries(resources).filter(([, r]) => r.Type === type && predicate(r));
  expect(found).toHaveLength(1);
  return found[0]![0];
};
const functionId = (description: string) => logicalIdOf('AWS::Lambda::Function', (r) => String(r.Properties.Description).startsWith(description));
/** The default pool's standard lane, high lane and DLQ, by their construct ids (Storage/Dispatch, …). */
const queueIdMatching = (pattern: RegExp) => {
  const found = Object.entries(resources).filter(([id, r]) => r.Type === 'AWS::SQS::Queue' && pattern.test(id));
  expect(found).toHaveLength(1);
  return found[0]![0];
};
const queueId = () => queueIdMatching(/^StorageDispatch[0-9A-F]{8}$/);
const highId = () => queueIdMatching(/^StorageDispatchHigh[0-9A-F]{8}$/);
const lowId = () => queueIdMatching(/^StorageDispatchLow[0-9A-F]{8}$/);
const dlqId = () => queueIdMatching(/^StorageDispatchDlq[0-9A-F]{8}$/);
const tableId = (attribute: string) =>
  logicalIdOf('AWS::DynamoDB::GlobalTable', (r) => JSON.stringify(r.Properties.AttributeDefinitions).includes(`"${attribute}"`));

function widget(title: string): any {
  const found = widgets.filter((w) => w.properties.title === title);
  expect(found, `one widget titled "${title}"`).toHaveLength(1);
  return found[0];
}

function alarm(name: (typeof ALARMS)[number], from = resources): Record<string, any> {
  const found = Object.values(from).filter((r) => r.Type === 'AWS::CloudWatch::Alarm' && String(r.Properties.AlarmName).endsWith(`-${name}`));
  expect(found, `one alarm ${name}`).toHaveLength(1);
  return found[0]!.Properties;
}

beforeAll(() => {
  resources = synth('Test');
  const dashboard = dashboardOf(resources);
  dashboardName = dashboard.name;
  widgets = dashboard.body.widgets;
});

describe('dashboard', () => {
  it('is named after the stack, shows 3 hours and has these graphs, all of one-minute datapoints', () => {
    expect(dashboardName).toBe('Test-scheduler');
    expect(dashboardOf(resources).body.start).toBe('-PT3H');
    const graphs = widgets.filter((w) => w.type === 'metric');
    expect(graphs.map((g) => g.properties.title)).toEqual([
      'Start lag (p50, p95, p99)',
      'Where the lag comes from (p99, ticker max)',
      'External runs: wait for a claim (p50, p99)',
      'Runs per minute',
      'Success rate (% of ended runs)',
      'Run duration (p50, p99)',
      'Failed runs by job type',
      'Timed-out runs by job type',
      'Dead runs by job type',
      'Retried, skipped, cancelled and deferred runs',
      'Lease expirations and lost workers',
      'Outcome notifications: sent, failed tries, dead',
      'Messages visible (waiting)',
      'Messages in flight (received, not deleted)',
      'Age of oldest message',
      'Lambda concurrent executions (max)',
      'Lambda errors',
      'Lambda throttles',
      'Lambda duration (p50, p99)',
      'DynamoDB throttled requests',
      'Consumed read capacity units',
      'Consumed write capacity units',
      'Ticks, tick errors, ticks out of budget, unreadable partitions',
      'Runs released, messages redelivered, chains repaired',
      'Tick duration (max)',
      'Workflow runs per minute',
      'Failed workflow runs by workflow',
      'Workflow step failures by workflow',
      'Workflow run duration (p50, p99)',
    ]);
    for (const graph of graphs) {
      expect(graph.properties.period, graph.properties.title).toBe(60);
      for (const s of seriesOf(graph)) expect(s.options.period, `${graph.properties.title}: ${s.metricName ?? s.expression}`).toBe(60);
    }
  });

  it('lays the widgets out on the 24-column grid without overlaps', () => {
    const cells = new Set<string>();
    for (const w of widgets) {
      expect(w.x + w.width).toBeLessThanOrEqual(24);
      for (let x = w.x; x < w.x + w.width; x++)
        for (let y = w.y; y < w.y + w.height; y++) {
          expect(cells.has(`${x},${y}`), `cell ${x},${y}`).toBe(false);
          cells.add(`${x},${y}`);
        }
    }
  });

  it('heads each section with a full-width text widget, in reading order', () => {
    const headers = widgets
      .filter((w) => w.type === 'text' && w.width === 24)
      .sort((a, b) => a.y - b.y)
      .map((w) => (w.properties.markdown as string).split('\n')[0]);
    expect(headers).toEqual([
      '## 1. Is it late?',
      '## 2. Throughput and success',
      '## 3. What fails',
      '## 4. Queues',
      '## 5. Lambda',
      '## 6. DynamoDB',
      '## 7. Ticker',
      '## 8. Workflows',
    ]);
    // Each section's graphs sit between its header and the next.
    const y = (markdown: string) => widgets.find((w) => w.type === 'text' && w.properties.markdown.startsWith(markdown)).y;
    expect(widget('Start lag (p50, p95, p99)').y).toBeGreaterThan(y('## 1.'));
    expect(widget('Start lag (p50, p95, p99)').y).toBeLessThan(y('## 2.'));
    expect(widget('Tick duration (max)').y).toBeGreaterThan(y('## 7.'));
  });

  it('graphs workflow runs (started, succeeded, failed, cancelled), failed runs and step failures per workflow, and workflow run duration', () => {
    expect(widget('Workflow runs per minute').y).toBeGreaterThan(widgets.find((w) => w.type === 'text' && w.properties.markdown.startsWith('## 8.')).y);
    expect(visible(widget('Workflow runs per minute'))).toEqual(
      ['WorkflowRunsStarted', 'WorkflowRunsSucceeded', 'WorkflowRunsFailed', 'WorkflowRunsCancelled'].map((name) => `${custom(name)} Sum`),
    );
    for (const s of seriesOf(widget('Workflow runs per minute'))) expect(s.dimensions).toEqual(service);
    for (const [title, metric] of [
      ['Failed workflow runs by workflow', Metric.WorkflowRunsFailed],
      ['Workflow step failures by workflow', Metric.WorkflowStepFailures],
    ] as const) {
      const [search] = seriesOf(widget(title));
      expect(search!.expression).toBe(`SEARCH('{${METRICS_NAMESPACE},Service,JobType} MetricName="${metric}" Service="${SERVICE_NAME}"', 'Sum', 60)`);
      expect(search!.options.label).toBe("${PROP('Dim.JobType')}");
    }
    expect(visible(widget('Workflow run duration (p50, p99)'))).toEqual([`${custom('WorkflowRunDuration')} p50`, `${custom('WorkflowRunDuration')} p99`]);
  });

  it('shows the state of every alarm at the top', () => {
    const alarmWidget = widgets.filter((w) => w.type === 'alarm');
    expect(alarmWidget).toHaveLength(1);
    expect(alarmWidget[0].y).toBe(0);
    const alarmIds = Object.entries(resources)
      .filter(([, r]) => r.Type === 'AWS::CloudWatch::Alarm')
      .map(([id]) => `<GetAtt:${id}.Arn>`);
    expect(alarmIds).toHaveLength(ALARMS.length);
    expect([...alarmWidget[0].properties.alarms].sort()).toEqual(alarmIds.sort());
  });

  describe('1. Is it late?', () => {
    it('plots start lag p50, p95 and p99 against the 2 s objective', () => {
      const graph = widget('Start lag (p50, p95, p99)');
      expect(visible(graph)).toEqual([`${custom('StartLag')} p50`, `${custom('StartLag')} p95`, `${custom('StartLag')} p99`]);
      for (const s of seriesOf(graph)) expect(s.dimensions).toEqual(service);
      expect(graph.properties.annotations.horizontal).toEqual([expect.objectContaining({ value: 2000, label: '2 s objective' })]);
    });

    it('breaks the lag down into the time gate, the lease and the ticker', () => {
      const graph = widget('Where the lag comes from (p99, ticker max)');
      expect(visible(graph)).toEqual([`${custom('SchedulingLag')} p99`, `${custom('StartLag')} p99`, `${custom('TickerLag')} Maximum`]);
      for (const s of seriesOf(graph)) expect(s.dimensions).toEqual(service);
    });

    it("plots external runs' wait for a claim apart from start lag, without the objective", () => {
      const graph = widget('External runs: wait for a claim (p50, p99)');
      expect(visible(graph)).toEqual([`${custom('ClaimWait')} p50`, `${custom('ClaimWait')} p99`]);
      for (const s of seriesOf(graph)) expect(s.dimensions).toEqual(service);
      expect(graph.properties.annotations).toBeUndefined();
    });
  });

  describe('2. Throughput and success', () => {
    it('counts runs created, queued, started and succeeded per minute', () => {
      expect(visible(widget('Runs per minute'))).toEqual(
        [Metric.RunsCreated, Metric.RunsQueued, Metric.RunsStarted, Metric.RunsSucceeded].map((name) => `${custom(name)} Sum`),
      );
    });

    it('computes the success rate without dividing by zero when no run ended', () => {
      const graph = widget('Success rate (% of ended runs)');
      const series = seriesOf(graph);
      expect(visible(graph)).toEqual(['IF(ended > 0, 100 * FILL(succeeded, 0) / ended)']);
      const byId = Object.fromEntries(series.filter((s) => s.options.id).map((s) => [s.options.id, s]));
      expect(byId.ended!.expression).toBe('FILL(succeeded, 0) + FILL(failed, 0) + FILL(timedOut, 0) + FILL(dead, 0)');
      expect([byId.succeeded, byId.failed, byId.timedOut, byId.dead].map((s) => `${s!.metricName} ${s!.options.stat}`)).toEqual([
        'RunsSucceeded Sum',
        'RunsFailed Sum',
        'RunsTimedOut Sum',
        'RunsDead Sum',
      ]);
      expect(graph.properties.yAxis.left).toMatchObject({ min: 0, max: 100 });
      expect(graph.properties.annotations.horizontal).toEqual([expect.objectContaining({ value: 99 })]);
    });

    it('plots run duration p50 and p99', () => {
      expect(visible(widget('Run duration (p50, p99)'))).toEqual([`${custom('RunDuration')} p50`, `${custom('RunDuration')} p99`]);
    });
  });

  describe('3. What fails', () => {
    it.each([
      ['Failed runs by job type', Metric.RunsFailed],
      ['Timed-out runs by job type', Metric.RunsTimedOut],
      ['Dead runs by job type', Metric.RunsDead],
    ])('%s: one line per job type from a SEARCH over [Service, JobType]', (title, name) => {
      const graph = widget(title);
      expect(visible(graph)).toEqual([`SEARCH('{${METRICS_NAMESPACE},Service,JobType} MetricName="${name}" Service="${SERVICE_NAME}"', 'Sum', 60)`]);
      expect(seriesOf(graph)[0]!.options.label).toBe("${PROP('Dim.JobType')}");
    });

    it('counts retries, skips, cancels, deferrals, lease expirations and lost workers', () => {
      expect(visible(widget('Retried, skipped, cancelled and deferred runs'))).toEqual(
        [Metric.RunsRetried, Metric.RunsSkipped, Metric.RunsCancelled, Metric.RunsDeferred].map((name) => `${custom(name)} Sum`),
      );
      expect(visible(widget('Lease expirations and lost workers'))).toEqual([Metric.LeaseExpirations, Metric.WorkerLost].map((name) => `${custom(name)} Sum`));
    });

    it('counts outcome notifications sent, tries that failed and dead ones, as the NotificationsDead alarm reads them', () => {
      const graph = widget('Outcome notifications: sent, failed tries, dead');
      expect(visible(graph)).toEqual([Metric.NotificationsSent, Metric.NotificationsFailed, Metric.NotificationsDead].map((name) => `${custom(name)} Sum`));
      for (const s of seriesOf(graph)) expect(s.dimensions).toEqual(service);
    });
  });

  describe('4. Queues', () => {
    it.each([
      ['Messages visible (waiting)', 'ApproximateNumberOfMessagesVisible'],
      ['Messages in flight (received, not deleted)', 'ApproximateNumberOfMessagesNotVisible'],
      ['Age of oldest message', 'ApproximateAgeOfOldestMessage'],
    ])('%s: %s of the dispatch queue, its high and low lanes and its DLQ', (title, metricName) => {
      const series = seriesOf(widget(title));
      expect(series.map((s) => [s.namespace, s.metricName, s.options.stat, s.dimensions])).toEqual([
        ['AWS/SQS', metricName, 'Maximum', { QueueName: `<GetAtt:${queueId()}.QueueName>` }],
        ['AWS/SQS', metricName, 'Maximum', { QueueName: `<GetAtt:${highId()}.QueueName>` }],
        ['AWS/SQS', metricName, 'Maximum', { QueueName: `<GetAtt:${lowId()}.QueueName>` }],
        ['AWS/SQS', metricName, 'Maximum', { QueueName: `<GetAtt:${dlqId()}.QueueName>` }],
      ]);
    });

    it('draws the OldestMessageTooOld threshold on the age graph', () => {
      expect(widget('Age of oldest message').properties.annotations.horizontal).toEqual([expect.objectContaining({ value: 1200 })]);
    });
  });

  describe('5. Lambda', () => {
    const functions = () => [
      functionId('Job scheduler HTTP API'),
      functionId('Job scheduler worker'),
      functionId('Job scheduler ticker'),
      functionId('Job scheduler API authorizer'),
      functionId('Web console of the job scheduler'),
    ];

    it.each([
      ['Lambda concurrent executions (max)', 'ConcurrentExecutions', 'Maximum'],
      ['Lambda errors', 'Errors', 'Sum'],
      ['Lambda throttles', 'Throttles', 'Sum'],
    ])('%s: one line per function', (title, metricName, stat) => {
      expect(seriesOf(widget(title)).map((s) => [s.namespace, s.metricName, s.options.stat, s.dimensions.FunctionName])).toEqual(
        functions().map((id) => ['AWS/Lambda', metricName, stat, `<Ref:${id}>`]),
      );
    });

    it('plots duration p50 and p99 of each function', () => {
      expect(seriesOf(widget('Lambda duration (p50, p99)')).map((s) => [s.metricName, s.options.stat, s.dimensions.FunctionName])).toEqual(
        functions().flatMap((id) => [
          ['Duration', 'p50', `<Ref:${id}>`],
          ['Duration', 'p99', `<Ref:${id}>`],
        ]),
      );
    });
  });

  describe('6. DynamoDB', () => {
    it('sums throttled requests over every operation, per table, filling silent operations with 0', () => {
      const series = seriesOf(widget('DynamoDB throttled requests'));
      const expressions = series.filter((s) => s.expression);
      expect(expressions.map((s) => s.options.label)).toEqual(['jobs table', 'runs table']);
      for (const [expression, table] of [
        [expressions[0]!, tableId('tenantSort')],
        [expressions[1]!, tableId('gateKey')],
      ] as const) {
        const terms = expression.expression!.split(' + ');
        expect(terms.length).toBeGreaterThanOrEqual(6);
        const inputs = terms.map((term) => {
          const id = /^FILL\((\w+), 0\)$/.exec(term)![1];
          return series.find((s) => s.options.id === id)!;
        });
        for (const input of inputs) {
          expect([input.namespace, input.metricName, input.options.stat, input.dimensions.TableName]).toEqual([
            'AWS/DynamoDB',
            'ThrottledRequests',
            'Sum',
            `<Ref:${table}>`,
          ]);
          expect(input.options.visible).toBe(false);
        }
        // Every operation the functions are granted is among them.
        expect(inputs.map((i) => i.dimensions.Operation)).toEqual(
          expect.arrayContaining(['GetItem', 'BatchGetItem', 'Query', 'PutItem', 'UpdateItem', 'DeleteItem']),
        );
      }
    });

    it.each([
      ['Consumed read capacity units', 'ConsumedReadCapacityUnits'],
      ['Consumed write capacity units', 'ConsumedWriteCapacityUnits'],
    ])('%s per table', (title, metricName) => {
      expect(seriesOf(widget(title)).map((s) => [s.namespace, s.metricName, s.options.stat, s.dimensions.TableName])).toEqual([
        ['AWS/DynamoDB', metricName, 'Sum', `<Ref:${tableId('tenantSort')}>`],
        ['AWS/DynamoDB', metricName, 'Sum', `<Ref:${tableId('gateKey')}>`],
      ]);
    });
  });

  describe('7. Ticker', () => {
    it('counts ticks, errors and the work of each tick, and its duration', () => {
      expect(visible(widget('Ticks, tick errors, ticks out of budget, unreadable partitions'))).toEqual([
        `${custom('TickerRuns')} Sum`,
        `${custom('TickerErrors')} Sum`,
        `${custom('TickerBehind')} Sum`,
        `${custom('TickerUnreadable')} Sum`,
      ]);
      expect(visible(widget('Runs released, messages redelivered, chains repaired'))).toEqual(
        [Metric.TickerReleased, Metric.TickerRedelivered, Metric.TickerRepairedJobs].map((name) => `${custom(name)} Sum`),
      );
      expect(visible(widget('Tick duration (max)'))).toEqual([`${custom('TickerDuration')} Maximum`]);
    });
  });
});

describe('alarms', () => {
  /** The single metric an alarm reads, whether given as top-level properties or as Metrics[0]. */
  function metricOf(properties: Record<string, any>) {
    if (properties.MetricName) {
      return {
        namespace: properties.Namespace,
        name: properties.MetricName,
        stat: properties.Statistic ?? properties.ExtendedStatistic,
        period: properties.Period,
        dimensions: properties.Dimensions,
      };
    }
    throw new Error(`the alarm reads no single metric directly: ${JSON.stringify(properties)}`);
  }

  const serviceDimension = [{ Name: 'Service', Value: SERVICE_NAME }];

  it('has exactly the alarms of docs/operations.md, each pointing there', () => {
    const all = Object.values(resources).filter((r) => r.Type === 'AWS::CloudWatch::Alarm');
    expect(all.map((r) => r.Properties.AlarmName).sort()).toEqual(ALARMS.map((name) => `Test-${name}`).sort());
    for (const r of all) expect(r.Properties.AlarmDescription).toContain('docs/operations.md#alarms');
  });

  it('writes a Metrics array only for the alarms that are metric math (a label alone would make one, which some CloudFormation implementations refuse)', () => {
    const withPools = synth('PoolAlarms', { pools: [{ name: 'exports', jobTypes: ['export'], maxConcurrency: 3, timeoutSeconds: 300 }] });
    for (const from of [resources, withPools]) {
      const all = Object.values(from).filter((r) => r.Type === 'AWS::CloudWatch::Alarm');
      const math = all.filter((r) => r.Properties.Metrics !== undefined).map((r) => String(r.Properties.AlarmName).replace(/^[^-]+-/, ''));
      expect(math.sort()).toEqual(['LambdaThrottles', 'TickerErrors']);
      for (const r of all.filter((candidate) => candidate.Properties.Metrics === undefined)) {
        expect(r.Properties.MetricName, r.Properties.AlarmName).toEqual(expect.any(String));
      }
      for (const r of all.filter((candidate) => candidate.Properties.Metrics !== undefined)) {
        expect(
          (r.Properties.Metrics as any[]).some((m) => m.Expression),
          r.Properties.AlarmName,
        ).toBe(true);
      }
    }
  });

  it('DispatchDlqNotEmpty: any message visible in the DLQ within a minute', () => {
    const a = alarm('DispatchDlqNotEmpty');
    expect(metricOf(a)).toEqual({
      namespace: 'AWS/SQS',
      name: 'ApproximateNumberOfMessagesVisible',
      stat: 'Maximum',
      period: 60,
      dimensions: [{ Name: 'QueueName', Value: { 'Fn::GetAtt': [dlqId(), 'QueueName'] } }],
    });
    expect(a).toMatchObject({ Threshold: 0, ComparisonOperator: 'GreaterThanThreshold', EvaluationPeriods: 1, TreatMissingData: 'notBreaching' });
    expect(a.DatapointsToAlarm).toBeUndefined();
  });

  it('DeadRunsRising: any dead run in 5 minutes', () => {
    const a = alarm('DeadRunsRising');
    expect(metricOf(a)).toEqual({ namespace: METRICS_NAMESPACE, name: 'RunsDead', stat: 'Sum', period: 300, dimensions: serviceDimension });
    expect(a).toMatchObject({ Threshold: 0, ComparisonOperator: 'GreaterThanThreshold', EvaluationPeriods: 1, TreatMissingData: 'notBreaching' });
  });

  it('NotificationsDead: any notification that ended dead in 5 minutes', () => {
    const a = alarm('NotificationsDead');
    expect(metricOf(a)).toEqual({ namespace: METRICS_NAMESPACE, name: 'NotificationsDead', stat: 'Sum', period: 300, dimensions: serviceDimension });
    expect(a).toMatchObject({ Threshold: 0, ComparisonOperator: 'GreaterThanThreshold', EvaluationPeriods: 1, TreatMissingData: 'notBreaching' });
  });

  it('StartLagP99High: p99 over 2000 ms in 3 of 5 minutes', () => {
    const a = alarm('StartLagP99High');
    expect(metricOf(a)).toEqual({ namespace: METRICS_NAMESPACE, name: 'StartLag', stat: 'p99', period: 60, dimensions: serviceDimension });
    expect(a).toMatchObject({
      Threshold: 2000,
      ComparisonOperator: 'GreaterThanThreshold',
      EvaluationPeriods: 5,
      DatapointsToAlarm: 3,
      TreatMissingData: 'notBreaching',
    });
  });

  it('OldestMessageTooOld: the dispatch queue holds a message older than 1200 s for 3 minutes in a row', () => {
    const a = alarm('OldestMessageTooOld');
    expect(metricOf(a)).toEqual({
      namespace: 'AWS/SQS',
      name: 'ApproximateAgeOfOldestMessage',
      stat: 'Maximum',
      period: 60,
      dimensions: [{ Name: 'QueueName', Value: { 'Fn::GetAtt': [queueId(), 'QueueName'] } }],
    });
    expect(a).toMatchObject({
      Threshold: 1200,
      ComparisonOperator: 'GreaterThanThreshold',
      EvaluationPeriods: 3,
      DatapointsToAlarm: 3,
      TreatMissingData: 'notBreaching',
    });
  });

  it('TickerErrors: a caught tick error or a failed ticker invocation in 5 minutes', () => {
    const a = alarm('TickerErrors');
    const [expression, ...inputs] = a.Metrics as any[];
    expect(expression).toMatchObject({ Expression: 'FILL(tickerErrors, 0) + FILL(lambdaErrors, 0)', ReturnData: true });
    expect(
      inputs.map((m) => [m.Id, m.MetricStat.Metric.Namespace, m.MetricStat.Metric.MetricName, m.MetricStat.Stat, m.MetricStat.Period, m.ReturnData]),
    ).toEqual([
      ['tickerErrors', METRICS_NAMESPACE, 'TickerErrors', 'Sum', 300, false],
      ['lambdaErrors', 'AWS/Lambda', 'Errors', 'Sum', 300, false],
    ]);
    expect(inputs[1].MetricStat.Metric.Dimensions).toEqual([{ Name: 'FunctionName', Value: { Ref: functionId('Job scheduler ticker') } }]);
    expect(a).toMatchObject({ Threshold: 0, ComparisonOperator: 'GreaterThanThreshold', EvaluationPeriods: 1, TreatMissingData: 'notBreaching' });
  });

  it('TickerNotRunning: no tick in 5 minutes, and no data counts as no tick', () => {
    const a = alarm('TickerNotRunning');
    expect(metricOf(a)).toEqual({ namespace: METRICS_NAMESPACE, name: 'TickerRuns', stat: 'Sum', period: 300, dimensions: serviceDimension });
    expect(a).toMatchObject({ Threshold: 1, ComparisonOperator: 'LessThanThreshold', EvaluationPeriods: 1, TreatMissingData: 'breaching' });
  });

  it("LambdaThrottles: a throttle of any of the five functions (the default pool's worker among them) in 5 minutes, each named in its description and label", () => {
    const a = alarm('LambdaThrottles');
    const [expression, ...inputs] = a.Metrics as any[];
    expect(expression).toMatchObject({
      Expression: 'FILL(api, 0) + FILL(worker, 0) + FILL(ticker, 0) + FILL(authorizer, 0) + FILL(console, 0)',
      Label: 'throttles (api + worker + ticker + authorizer + console)',
      ReturnData: true,
    });
    expect(inputs.map((m) => [m.Id, m.MetricStat.Metric.MetricName, m.MetricStat.Stat, m.MetricStat.Period, m.MetricStat.Metric.Dimensions])).toEqual(
      [
        ['api', 'Job scheduler HTTP API'],
        ['worker', 'Job scheduler worker'],
        ['ticker', 'Job scheduler ticker'],
        ['authorizer', 'Job scheduler API authorizer'],
        ['console', 'Web console of the job scheduler'],
      ].map(([id, description]) => [id, 'Throttles', 'Sum', 300, [{ Name: 'FunctionName', Value: { Ref: functionId(description!) } }]]),
    );
    expect(a.AlarmDescription).toContain("(api, the default pool's worker, ticker, authorizer, console)");
    expect(a.AlarmDescription).toContain('Pool<Name>WorkerThrottled');
    expect(a).toMatchObject({ Threshold: 0, ComparisonOperator: 'GreaterThanThreshold', EvaluationPeriods: 1, TreatMissingData: 'notBreaching' });
  });

  it("LambdaThrottles: with pools, still the default pool's worker alone, the others having an alarm each", () => {
    const withPools = synth('PoolAlarms', { pools: [{ name: 'exports', jobTypes: ['export'], maxConcurrency: 3, timeoutSeconds: 300 }] });
    expect((alarm('LambdaThrottles', withPools).Metrics as any[])[0].Expression).toBe(
      'FILL(api, 0) + FILL(worker, 0) + FILL(ticker, 0) + FILL(authorizer, 0) + FILL(console, 0)',
    );
    const own = Object.values(withPools).filter(
      (r) => r.Type === 'AWS::CloudWatch::Alarm' && String(r.Properties.AlarmName).endsWith('-PoolExportsWorkerThrottled'),
    );
    expect(own).toHaveLength(1);
  });

  it('notifies nobody without an alarm topic', () => {
    for (const name of ALARMS) {
      const a = alarm(name);
      expect(a.AlarmActions, name).toBeUndefined();
      expect(a.OKActions, name).toBeUndefined();
    }
  });

  it('notifies the alarm topic from every alarm when one is configured', () => {
    const withTopic = synth('WithTopic', { alarmTopicArn: TOPIC });
    for (const name of ALARMS) expect(alarm(name, withTopic).AlarmActions, name).toEqual([TOPIC]);
  });

  it('takes its thresholds from the stack config', () => {
    const tuned = synth('Tuned', {
      alarms: { deadRunsThreshold: 4, startLagP99Ms: 1500, oldestMessageAgeSeconds: 600, oldestLowMessageAgeSeconds: 1800, minTicksPerFiveMinutes: 3 },
    });
    expect(alarm('DeadRunsRising', tuned).Threshold).toBe(4);
    expect(alarm('StartLagP99High', tuned).Threshold).toBe(1500);
    expect(alarm('OldestMessageTooOld', tuned).Threshold).toBe(600);
    expect(alarm('OldestLowMessageTooOld', tuned).Threshold).toBe(1800);
    expect(alarm('TickerNotRunning', tuned).Threshold).toBe(3);
    const startLag = dashboardOf(tuned).body.widgets.find((w: any) => w.properties.title === 'Start lag (p50, p95, p99)');
    expect(startLag.properties.annotations.horizontal).toEqual([expect.objectContaining({ value: 1500, label: '1.5 s objective' })]);
  });
});

describe('MiniStack template adjustments (deploy test only)', () => {
  // Synthesized once, on first use, and shared by these tests.
  let emulatedResources: Record<string, Resource> | undefined;
  const emulatedSynthesis = (): Record<string, Resource> => {
    if (!emulatedResources) {
      const app = new App({ context: { 'aws:cdk:bundling-stacks': [], [MINISTACK_CONTEXT]: 'true' } });
      const stack = new SchedulerStack(app, 'Emulated', { env: TEST_ENV });
      Aspects.of(stack).add(new MiniStackTemplateAdjustments());
      emulatedResources = Template.fromStack(stack).toJSON().Resources as Record<string, Resource>;
    }
    return emulatedResources;
  };
  it('turn each math alarm into an alarm on its first input when asked for, and are not in the default synthesis', () => {
    const emulated = emulatedSynthesis();
    const alarms = Object.values(emulated).filter((r) => r.Type === 'AWS::CloudWatch::Alarm');
    expect(alarms.filter((r) => r.Properties.Metrics !== undefined)).toEqual([]);
    expect(alarm('TickerErrors', emulated)).toMatchObject({ Namespace: METRICS_NAMESPACE, MetricName: 'TickerErrors', Statistic: 'Sum', Period: 300 });
    expect(alarm('LambdaThrottles', emulated)).toMatchObject({ Namespace: 'AWS/Lambda', MetricName: 'Throttles', Statistic: 'Sum', Period: 300 });
    // The default synthesis keeps them math.
    expect(alarm('TickerErrors').Metrics).toBeDefined();
  });

  it("grant MiniStack's SQS batch action names (AUTH=true) beside the single calls granted, on the same resources, and nothing else", () => {
    const statementsOf = (resources: Record<string, Resource>) =>
      Object.values(resources)
        .filter((r) => r.Type === 'AWS::IAM::Policy')
        .flatMap((r) => r.Properties.PolicyDocument.Statement as { Action: string | string[]; Resource: unknown }[])
        .map((statement) => ({ actions: ([] as string[]).concat(statement.Action), resource: statement.Resource }));
    const original = statementsOf(resources);
    const emulated = statementsOf(emulatedSynthesis());
    expect(emulated).toHaveLength(original.length);
    const sends = original.filter((statement) => statement.actions.includes('sqs:SendMessage'));
    expect(sends.length).toBeGreaterThan(0);
    expect(original.some((statement) => statement.actions.includes('sqs:SendMessageBatch'))).toBe(false);
    emulated.forEach((statement, i) => {
      const before = original[i]!;
      const added = statement.actions.filter((action) => !before.actions.includes(action));
      const expected = Object.entries(MINISTACK_SQS_BATCH_ACTIONS)
        .filter(([single]) => before.actions.includes(single))
        .map(([, batch]) => batch);
      expect(added.sort()).toEqual(expected.sort());
      expect(statement.resource).toEqual(before.resource);
    });
  });

  it("drop the queues' non-TLS deny, which MiniStack's plain-http gateway would apply to every call, and only when asked for", () => {
    const denies = (resources: Record<string, Resource>) =>
      Object.values(resources)
        .filter((r) => r.Type === 'AWS::SQS::QueuePolicy')
        .flatMap((r) => r.Properties.PolicyDocument.Statement as { Effect: string; Condition?: unknown }[])
        .filter((statement) => statement.Effect === 'Deny' && JSON.stringify(statement.Condition).includes('aws:SecureTransport'));
    expect(denies(resources)).toHaveLength(4);
    expect(denies(emulatedSynthesis())).toEqual([]);
  });
});
