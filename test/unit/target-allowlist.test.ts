import { describe, expect, it } from 'vitest';
import {
  allowlistOf,
  deploymentTargetsSchema,
  queueArnOfUrl,
  targetAllowlistSchema,
  targetRefusal,
  unqualifiedFunctionArn,
} from '../../lambdas/domain/target-allowlist';

describe('target allowlist', () => {
  it('maps queue URLs of every endpoint form to their ARN', () => {
    expect(queueArnOfUrl('https://sqs.us-east-1.amazonaws.com/123456789012/q')).toBe('arn:aws:sqs:us-east-1:123456789012:q');
    expect(queueArnOfUrl('https://eu-west-1.queue.amazonaws.com/123456789012/q.fifo')).toBe('arn:aws:sqs:eu-west-1:123456789012:q.fifo');
    expect(queueArnOfUrl('https://sqs.cn-north-1.amazonaws.com.cn/123456789012/q')).toBe('arn:aws-cn:sqs:cn-north-1:123456789012:q');
    expect(queueArnOfUrl('https://evil.example.com/123456789012/q')).toBeNull();
    expect(queueArnOfUrl('https://sqs.us-east-1.amazonaws.com/123456789012/q/extra')).toBeNull();
  });

  it('refuses a listed queue by a URL over plain http or on another port: the request is signed and carries the session token', () => {
    const allowed = targetAllowlistSchema.parse({ sqsQueueArns: ['arn:aws:sqs:us-east-1:123456789012:q'] });
    const refusal = (queueUrl: string) => targetRefusal({ kind: 'sqs', queueUrl }, allowed);
    expect(refusal('https://sqs.us-east-1.amazonaws.com/123456789012/q')).toBeNull();
    // The default port spelled out is the same origin.
    expect(refusal('https://sqs.us-east-1.amazonaws.com:443/123456789012/q')).toBeNull();
    expect(refusal('http://sqs.us-east-1.amazonaws.com/123456789012/q')).toEqual({ path: 'target.queueUrl', message: expect.stringMatching(/https/) });
    expect(refusal('https://sqs.us-east-1.amazonaws.com:8443/123456789012/q')).toEqual({ path: 'target.queueUrl', message: expect.stringMatching(/port/) });
    expect(refusal('http://sqs.us-east-1.amazonaws.com:443/123456789012/q')?.path).toBe('target.queueUrl');
    expect(queueArnOfUrl('http://sqs.us-east-1.amazonaws.com/123456789012/q')).toBeNull();
  });

  it('treats every version and alias of an allowed function as allowed', () => {
    expect(unqualifiedFunctionArn('arn:aws:lambda:us-east-1:123456789012:function:f:live')).toBe('arn:aws:lambda:us-east-1:123456789012:function:f');
    const allowed = targetAllowlistSchema.parse({ lambdaFunctionArns: ['arn:aws:lambda:us-east-1:123456789012:function:f'] });
    expect(targetRefusal({ kind: 'lambda', functionArn: 'arn:aws:lambda:us-east-1:123456789012:function:f:7' }, allowed)).toBeNull();
    expect(targetRefusal({ kind: 'lambda', functionArn: 'arn:aws:lambda:us-east-1:123456789012:function:g' }, allowed)?.path).toBe('target.functionArn');
  });

  it('allows nothing by default, and never refuses http targets here (the egress policy does)', () => {
    const none = targetAllowlistSchema.parse({});
    expect(targetRefusal({ kind: 'eventbridge', eventBusName: 'default', source: 's', detailType: 'd' }, none)?.path).toBe('target.eventBusName');
    expect(targetRefusal({ kind: 'http', url: 'https://example.com', method: 'POST', headers: {} }, none)).toBeNull();
  });

  it('keeps the KMS keys of the stack property out of the allowlist the API checks', () => {
    const queue = 'arn:aws:sqs:us-east-1:123456789012:q';
    const key = 'arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab';
    const targets = deploymentTargetsSchema.parse({ sqsQueueArns: [queue], kmsKeyArns: [key] });
    expect(targets.kmsKeyArns).toEqual([key]);
    expect(allowlistOf(targets)).toEqual({ lambdaFunctionArns: [], sqsQueueArns: [queue], eventBusArns: [], snsTopicArns: [] });
    // What the functions parse from ALLOWED_TARGETS (a strict object) accepts what the stack sends.
    expect(targetAllowlistSchema.safeParse(JSON.parse(JSON.stringify(allowlistOf(targets)))).success).toBe(true);
    expect(deploymentTargetsSchema.parse({}).kmsKeyArns).toEqual([]);
  });
});
