import { describe, expect, it } from 'vitest';
import { queueArnOfUrl, targetAllowlistSchema, targetRefusal, unqualifiedFunctionArn } from '../../lambdas/domain/target-allowlist';

describe('target allowlist', () => {
  it('maps queue URLs of every endpoint form to their ARN', () => {
    expect(queueArnOfUrl('https://sqs.us-east-1.amazonaws.com/123456789012/q')).toBe('arn:aws:sqs:us-east-1:123456789012:q');
    expect(queueArnOfUrl('https://eu-west-1.queue.amazonaws.com/123456789012/q.fifo')).toBe('arn:aws:sqs:eu-west-1:123456789012:q.fifo');
    expect(queueArnOfUrl('https://sqs.cn-north-1.amazonaws.com.cn/123456789012/q')).toBe('arn:aws-cn:sqs:cn-north-1:123456789012:q');
    expect(queueArnOfUrl('https://evil.example.com/123456789012/q')).toBeNull();
    expect(queueArnOfUrl('https://sqs.us-east-1.amazonaws.com/123456789012/q/extra')).toBeNull();
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
});
