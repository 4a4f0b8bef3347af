// The stateful resources keep their logical ids, and so their physical names (none is named in the
// template: CloudFormation derives each from the id). A change that alters one of these ids would
// make CloudFormation create a new table or queue and delete (or, for tables, orphan) the old one,
// with its items or messages: this test fails first. Pools included, the default one with the ids it
// had before pools existed (decision 0091). And what outlives the stack: the tables and every DLQ,
// with the API's access log group; not the lanes, nor the functions' log groups.
import { beforeAll, describe, expect, it } from 'vitest';
import type { SchedulerStackConfig } from '../../lib/config';
import type { Resource } from './support/stacks';
import { synthesized } from './support/stacks';

// The configuration of pools.test.ts, so the two share one synthesis.
const POOLS: SchedulerStackConfig['pools'] = [
  { name: 'exports', jobTypes: ['export', 'archive'], maxConcurrency: 3, timeoutSeconds: 300 },
  { name: 'billing-fast', jobTypes: ['invoice'], maxConcurrency: 20, lowMaxConcurrency: 3, timeoutSeconds: 60, batchSize: 5 },
];

const STATEFUL = ['AWS::DynamoDB::GlobalTable', 'AWS::DynamoDB::Table', 'AWS::SQS::Queue'];

describe('stateful resources', () => {
  let all: [string, Resource][];
  let stateful: [string, Resource][];
  beforeAll(() => {
    all = Object.entries(synthesized('Pools', { pools: POOLS }).resources);
    stateful = all.filter(([, resource]) => STATEFUL.includes(resource.Type));
  });

  it('keep their logical ids', () => {
    expect(Object.fromEntries(stateful.map(([id, resource]) => [id, resource.Type]))).toStrictEqual({
      StorageJobs4C7573CB: 'AWS::DynamoDB::GlobalTable',
      StorageRunsEDEB48FF: 'AWS::DynamoDB::GlobalTable',
      // The default pool: the ids of the dispatch queue from before pools.
      StorageDispatchBA347357: 'AWS::SQS::Queue',
      StorageDispatchHigh4386C147: 'AWS::SQS::Queue',
      StorageDispatchLow543A1C6B: 'AWS::SQS::Queue',
      StorageDispatchDlq2DAC9573: 'AWS::SQS::Queue',
      StoragePoolExportsDispatchAB0B029F: 'AWS::SQS::Queue',
      StoragePoolExportsDispatchHighCBA5CDB4: 'AWS::SQS::Queue',
      StoragePoolExportsDispatchLow822A3419: 'AWS::SQS::Queue',
      StoragePoolExportsDispatchDlq77112664: 'AWS::SQS::Queue',
      StoragePoolBillingFastDispatch0F1CB8A7: 'AWS::SQS::Queue',
      StoragePoolBillingFastDispatchHighEE5D979D: 'AWS::SQS::Queue',
      StoragePoolBillingFastDispatchLowF3289C7C: 'AWS::SQS::Queue',
      StoragePoolBillingFastDispatchDlqA279784A: 'AWS::SQS::Queue',
    });
  });

  it('are not named in the template, so their names follow their ids', () => {
    for (const [id, resource] of stateful) {
      expect(resource.Properties.TableName, id).toBeUndefined();
      expect(resource.Properties.QueueName, id).toBeUndefined();
    }
  });

  it("redrive every lane into its own pool's DLQ", () => {
    const redrives = Object.fromEntries(
      stateful.flatMap(([id, resource]) =>
        resource.Properties.RedrivePolicy ? [[id, resource.Properties.RedrivePolicy.deadLetterTargetArn['Fn::GetAtt'][0] as string]] : [],
      ),
    );
    expect(redrives).toStrictEqual({
      StorageDispatchBA347357: 'StorageDispatchDlq2DAC9573',
      StorageDispatchHigh4386C147: 'StorageDispatchDlq2DAC9573',
      StorageDispatchLow543A1C6B: 'StorageDispatchDlq2DAC9573',
      StoragePoolExportsDispatchAB0B029F: 'StoragePoolExportsDispatchDlq77112664',
      StoragePoolExportsDispatchHighCBA5CDB4: 'StoragePoolExportsDispatchDlq77112664',
      StoragePoolExportsDispatchLow822A3419: 'StoragePoolExportsDispatchDlq77112664',
      StoragePoolBillingFastDispatch0F1CB8A7: 'StoragePoolBillingFastDispatchDlqA279784A',
      StoragePoolBillingFastDispatchHighEE5D979D: 'StoragePoolBillingFastDispatchDlqA279784A',
      StoragePoolBillingFastDispatchLowF3289C7C: 'StoragePoolBillingFastDispatchDlqA279784A',
    });
  });

  // `cdk destroy`, or a pool removed from the config, deletes what is not retained. The DLQs hold the
  // record of runs whose dispatch kept failing (up to 14 days of messages), the access log group
  // the record of who called the API: both are kept, as the tables are. The lanes go: the runs
  // table holds every run they carry, and the ticker redelivers a queued run whose message is lost.
  it("keep every pool's DLQ and the tables when the stack is deleted or a replacement is made; the lanes go", () => {
    const policies = Object.fromEntries(stateful.map(([id, resource]) => [id, [resource.DeletionPolicy, resource.UpdateReplacePolicy]]));
    const dlqs = stateful.filter(([id, resource]) => resource.Type === 'AWS::SQS::Queue' && /Dlq[0-9A-F]{8}$/.test(id)).map(([id]) => id);
    expect(dlqs.sort()).toEqual(['StorageDispatchDlq2DAC9573', 'StoragePoolBillingFastDispatchDlqA279784A', 'StoragePoolExportsDispatchDlq77112664']);
    for (const [id, resource] of stateful) {
      const kept = resource.Type !== 'AWS::SQS::Queue' || dlqs.includes(id);
      expect(policies[id], id).toEqual(kept ? ['Retain', 'Retain'] : ['Delete', 'Delete']);
    }
  });

  it("keep the API's access log group; each function's own log group goes with its function", () => {
    const logGroups = all.filter(([, resource]) => resource.Type === 'AWS::Logs::LogGroup');
    const access = logGroups.filter(([id]) => /^ApiAccessLogs[0-9A-F]{8}$/.test(id));
    expect(access).toHaveLength(1);
    expect([access[0]![1].DeletionPolicy, access[0]![1].UpdateReplacePolicy]).toEqual(['Retain', 'Retain']);
    // The API, three workers, the ticker, the authorizer and the console.
    const others = logGroups.filter(([id]) => !/^ApiAccessLogs/.test(id));
    expect(others).toHaveLength(7);
    for (const [id, resource] of others) expect(resource.DeletionPolicy, id).toBe('Delete');
  });
});
