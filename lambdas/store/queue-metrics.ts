// The age of the oldest message in a queue. SQS does not return it from its own API; CloudWatch
// has it as AWS/SQS ApproximateAgeOfOldestMessage (one-minute points). An emulator that publishes
// no SQS metrics (moto) yields null, reported as unknown.
import type { CloudWatchClient } from '@aws-sdk/client-cloudwatch';
import { GetMetricDataCommand } from '@aws-sdk/client-cloudwatch';

const LOOKBACK_MS = 5 * 60_000;

export class QueueMetrics {
  constructor(private readonly cloudwatch: CloudWatchClient) {}

  /** The newest one-minute maximum of the queue's oldest-message age, in seconds, or null. */
  async oldestMessageAgeSeconds(queueUrl: string, now: number): Promise<number | null> {
    const queueName = queueUrl.split('/').pop() ?? queueUrl;
    const { MetricDataResults: results = [] } = await this.cloudwatch.send(
      new GetMetricDataCommand({
        StartTime: new Date(now - LOOKBACK_MS),
        EndTime: new Date(now),
        ScanBy: 'TimestampDescending',
        MetricDataQueries: [
          {
            Id: 'age',
            MetricStat: {
              Metric: { Namespace: 'AWS/SQS', MetricName: 'ApproximateAgeOfOldestMessage', Dimensions: [{ Name: 'QueueName', Value: queueName }] },
              Period: 60,
              Stat: 'Maximum',
            },
          },
        ],
      }),
    );
    const value = results[0]?.Values?.[0];
    return typeof value === 'number' ? value : null;
  }
}
