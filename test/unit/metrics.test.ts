// The EMF writer: what CloudWatch will read from the log lines it writes.
import { describe, expect, it } from 'vitest';
import { METRICS_NAMESPACE, Metric, MetricsRecorder, NO_JOB_TYPE, SERVICE_NAME } from '../../lambdas/core/metrics';

type Emf = Record<string, any>;

function recorder(): { metrics: MetricsRecorder; lines: Emf[] } {
  const lines: Emf[] = [];
  return {
    metrics: new MetricsRecorder(
      (line) => lines.push(JSON.parse(line) as Emf),
      () => 1_700_000_000_000,
    ),
    lines,
  };
}

describe('MetricsRecorder', () => {
  it('writes one EMF document per job type, under the service and service-by-job-type dimension sets', () => {
    const { metrics, lines } = recorder();
    metrics.count(Metric.RunsStarted, 'email');
    metrics.count(Metric.RunsStarted, 'email');
    metrics.add(Metric.StartLag, 42, 'email');
    metrics.count(Metric.RunsFailed, 'report');
    metrics.flush();

    expect(lines).toHaveLength(2);
    const email = lines.find((line) => line.JobType === 'email')!;
    expect(email).toEqual({
      _aws: {
        Timestamp: 1_700_000_000_000,
        CloudWatchMetrics: [
          {
            Namespace: METRICS_NAMESPACE,
            Dimensions: [['Service'], ['Service', 'JobType']],
            Metrics: [
              { Name: 'RunsStarted', Unit: 'Count' },
              { Name: 'StartLag', Unit: 'Milliseconds' },
            ],
          },
        ],
      },
      Service: SERVICE_NAME,
      JobType: 'email',
      RunsStarted: [1, 1],
      StartLag: 42,
    });
    expect(lines.find((line) => line.JobType === 'report')).toMatchObject({ RunsFailed: 1 });
  });

  it('splits more than 100 values of a metric over several documents and clears its buffer on flush', () => {
    const { metrics, lines } = recorder();
    for (let i = 0; i < 250; i++) metrics.add(Metric.RunDuration, i, 'batch');
    metrics.count(Metric.RunsSucceeded, 'batch');
    metrics.flush();
    expect(lines.map((line) => (Array.isArray(line.RunDuration) ? line.RunDuration.length : 1))).toEqual([100, 100, 50]);
    expect(lines.flatMap((line) => [line.RunDuration].flat())).toEqual(Array.from({ length: 250 }, (_, i) => i));
    // The one-value metric goes in the first document only.
    expect(lines.map((line) => line.RunsSucceeded)).toEqual([1, undefined, undefined]);
    for (const line of lines)
      expect(line._aws.CloudWatchMetrics[0].Metrics.map((m: { Name: string }) => m.Name)).toEqual(
        Object.keys(line).filter((k) => k === 'RunDuration' || k === 'RunsSucceeded'),
      );

    metrics.flush();
    expect(lines).toHaveLength(3);
  });

  it('keeps metrics without a job type under "-", drops non-finite values and bounds the dimension value', () => {
    const { metrics, lines } = recorder();
    metrics.count(Metric.TickerRuns);
    metrics.add(Metric.TickerLag, Number.NaN);
    metrics.add(Metric.RunDuration, Number.POSITIVE_INFINITY, 'x');
    metrics.count(Metric.RunsCreated, 'y'.repeat(500));
    metrics.flush();
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatchObject({ JobType: NO_JOB_TYPE, TickerRuns: 1 });
    expect(lines[0]).not.toHaveProperty('TickerLag');
    expect(lines[1]!.JobType).toBe('y'.repeat(128));
  });
});
