// A tenant's grants (decision 0194) as the checks read them: what the deployment lists and what the
// tenant was granted, refused alike; a bus by name; an emulator's queue; the worker's check at the
// call; and the one cached read of the tenant's profile that serves its limits and its grants.
import { describe, expect, it } from 'vitest';
import { TenantLimitsCache } from '../../lambdas/app/tenant-limits';
import type { Target } from '../../lambdas/domain/job';
import { DEFAULT_TENANT_LIMITS } from '../../lambdas/domain/tenant';
import type { Tenant } from '../../lambdas/domain/tenant';
import { destinationGranted, notifyDestinationRefusal, targetAllowlistSchema, targetRefusal, ungrantedAtCall } from '../../lambdas/domain/target-allowlist';
import type { TenantsRepository } from '../../lambdas/store/tenants-repository';

const fn = (name: string) => `arn:aws:lambda:us-east-1:123456789012:function:${name}`;
const bus = (name: string, account = '123456789012') => `arn:aws:events:us-east-1:${account}:event-bus/${name}`;
const allowed = targetAllowlistSchema.parse({
  lambdaFunctionArns: [fn('a'), fn('b')],
  sqsQueueArns: ['arn:aws:sqs:us-east-1:123456789012:a', 'arn:aws:sqs:us-east-1:123456789012:b'],
  eventBusArns: [bus('a'), bus('b'), bus('shared'), bus('shared', '210987654321')],
  snsTopicArns: ['arn:aws:sns:us-east-1:123456789012:a', 'arn:aws:sns:us-east-1:123456789012:b'],
});
const grantsOfA = [fn('a'), 'arn:aws:sqs:us-east-1:123456789012:a', bus('a'), 'arn:aws:sns:us-east-1:123456789012:a', bus('shared')];

describe("a tenant's grants", () => {
  it('refuses what the grants leave out with the very path and message of what the deployment does not list', () => {
    const cases: [Target, Target, Target][] = [
      [
        { kind: 'lambda', functionArn: fn('a') },
        { kind: 'lambda', functionArn: fn('b') },
        { kind: 'lambda', functionArn: fn('nobody') },
      ],
      [
        { kind: 'sqs', queueUrl: 'https://sqs.us-east-1.amazonaws.com/123456789012/a' },
        { kind: 'sqs', queueUrl: 'https://sqs.us-east-1.amazonaws.com/123456789012/b' },
        { kind: 'sqs', queueUrl: 'https://sqs.us-east-1.amazonaws.com/123456789012/nobody' },
      ],
      [
        { kind: 'eventbridge', eventBusName: 'a', source: 's', detailType: 'd' },
        { kind: 'eventbridge', eventBusName: bus('b'), source: 's', detailType: 'd' },
        { kind: 'eventbridge', eventBusName: 'nobody', source: 's', detailType: 'd' },
      ],
    ];
    for (const [own, others, nobodys] of cases) {
      expect(targetRefusal(own, allowed, grantsOfA), own.kind).toBeNull();
      // Without grants, everything the deployment lists.
      expect(targetRefusal(others, allowed, null), own.kind).toBeNull();
      const refused = targetRefusal(others, allowed, grantsOfA);
      expect(refused, own.kind).not.toBeNull();
      expect(refused, own.kind).toEqual(targetRefusal(nobodys, allowed, grantsOfA));
      expect(refused, own.kind).toEqual(targetRefusal(nobodys, allowed, null));
    }
    expect(notifyDestinationRefusal({ kind: 'sns', topicArn: 'arn:aws:sns:us-east-1:123456789012:b' }, allowed, grantsOfA)).toEqual(
      notifyDestinationRefusal({ kind: 'sns', topicArn: 'arn:aws:sns:us-east-1:123456789012:nobody' }, allowed, null),
    );
    // A grant the deployment does not list grants nothing.
    expect(targetRefusal({ kind: 'lambda', functionArn: fn('extra') }, allowed, [fn('extra')])?.path).toBe('target.functionArn');
  });

  it('covers every version and alias of a granted function', () => {
    expect(targetRefusal({ kind: 'lambda', functionArn: `${fn('a')}:live` }, allowed, grantsOfA)).toBeNull();
    expect(targetRefusal({ kind: 'lambda', functionArn: `${fn('b')}:7` }, allowed, grantsOfA)?.path).toBe('target.functionArn');
  });

  it('takes a bus by name only when every listed bus of that name is granted: the name alone cannot say which account', () => {
    const byName = (name: string): Target => ({ kind: 'eventbridge', eventBusName: name, source: 's', detailType: 'd' });
    // Two listed buses are named `shared`; A is granted one of them.
    expect(targetRefusal(byName('shared'), allowed, grantsOfA)?.path).toBe('target.eventBusName');
    expect(targetRefusal(byName(bus('shared')), allowed, grantsOfA)).toBeNull();
    expect(targetRefusal(byName('shared'), allowed, [...grantsOfA, bus('shared', '210987654321')])).toBeNull();
    expect(destinationGranted({ kind: 'eventbridge', eventBusName: 'shared', source: 's' }, allowed, grantsOfA)).toBe(false);
    // Locally nothing is listed: one granted bus of the name is enough.
    expect(targetRefusal(byName('shared'), null, grantsOfA)).toBeNull();
    expect(targetRefusal(byName('b'), null, grantsOfA)?.path).toBe('target.eventBusName');
  });

  it('locally takes an emulator’s queue URL as the granted queue of its account and name, and any resource without grants', () => {
    const local = (queueUrl: string): Target => ({ kind: 'sqs', queueUrl });
    expect(targetRefusal(local('http://127.0.0.1:4610/123456789012/a'), null, grantsOfA)).toBeNull();
    expect(targetRefusal(local('http://127.0.0.1:4610/123456789012/b'), null, grantsOfA)?.path).toBe('target.queueUrl');
    expect(targetRefusal(local('http://127.0.0.1:4610/210987654321/a'), null, grantsOfA)?.path).toBe('target.queueUrl');
    expect(targetRefusal(local('http://127.0.0.1:4610/123456789012/b'), null, null)).toBeNull();
    expect(targetRefusal({ kind: 'lambda', functionArn: fn('anything') }, null, null)).toBeNull();
    // In AWS mode such a URL is refused for its transport before any list.
    expect(targetRefusal(local('http://127.0.0.1:4610/123456789012/a'), allowed, grantsOfA)?.message).toMatch(/https/);
  });

  it('at the call, names by its kind, never by its ARN, what the grants no longer cover', () => {
    const secret = 'arn:aws:secretsmanager:us-east-1:123456789012:secret:b/token-AbC123';
    const http: Target = { kind: 'http', url: 'https://example.com', method: 'POST', headers: { 'X-Plain': 'v', Authorization: { secretArn: secret } } };
    expect(ungrantedAtCall(http, allowed, grantsOfA)).toBe('the secret of header Authorization');
    expect(ungrantedAtCall(http, allowed, [...grantsOfA, secret])).toBeNull();
    expect(ungrantedAtCall(http, allowed, null)).toBeNull();
    expect(ungrantedAtCall({ kind: 'lambda', functionArn: fn('b') }, allowed, grantsOfA)).toBe('its Lambda function');
    expect(ungrantedAtCall({ kind: 'sqs', queueUrl: 'https://sqs.us-east-1.amazonaws.com/123456789012/b' }, allowed, grantsOfA)).toBe('its SQS queue');
    expect(ungrantedAtCall({ kind: 'eventbridge', eventBusName: 'b', source: 's', detailType: 'd' }, allowed, grantsOfA)).toBe('its event bus');
    expect(ungrantedAtCall({ kind: 'lambda', functionArn: fn('a') }, allowed, grantsOfA)).toBeNull();
    // A target that names no ARN needs no grant, even with none at all.
    expect(ungrantedAtCall({ kind: 'http', url: 'https://example.com', method: 'POST', headers: { 'X-Plain': 'v' } }, allowed, [])).toBeNull();
    expect(ungrantedAtCall({ kind: 'external', leaseSeconds: 60 }, allowed, [])).toBeNull();
    expect(ungrantedAtCall({ kind: 'workflow', workflowId: 'wf_1' }, allowed, [])).toBeNull();
  });

  it("are read with the tenant's limits: one read of its profile a minute serves both", async () => {
    let reads = 0;
    const tenant: Tenant = { tenantId: 'acme', name: 'acme', limits: { maxInFlightRuns: 3 }, grants: [fn('a')], createdAt: '', updatedAt: '' };
    const repository = {
      get: (tenantId: string) => {
        reads++;
        return Promise.resolve(tenantId === 'acme' ? tenant : null);
      },
    } as unknown as TenantsRepository;
    let now = 0;
    const cache = new TenantLimitsCache(repository, DEFAULT_TENANT_LIMITS, () => now);
    expect((await cache.of('acme')).maxInFlightRuns).toBe(3);
    expect(await cache.grantsOf('acme')).toEqual([fn('a')]);
    expect(reads).toBe(1);
    // A tenant without a profile, or without grants, has none set.
    expect(await cache.grantsOf('other')).toBeNull();
    now += 60_001;
    await cache.grantsOf('acme');
    expect(reads).toBe(3);
  });
});
