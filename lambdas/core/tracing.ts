// X-Ray through Powertools Tracer. In AWS the functions run with active tracing: each invocation is
// a segment, its AWS requests subsegments, and the segments of a run's processing are annotated with
// the run's W3C trace id (`annotation.traceId`), so one X-Ray search shows a run's create, queue,
// lease, target call and outcome (decision 0111). Outside Lambda (the local runtime, tests; no
// AWS_EXECUTION_ENV) or with POWERTOOLS_TRACE_ENABLED=false the Tracer is off, and every helper
// here only runs what it is given: nothing tries to reach an X-Ray daemon. Responses and payloads
// are never recorded (captureResponse off, HTTP capture off: targets' URLs and answers stay out).
import { Tracer } from '@aws-lambda-powertools/tracer';

export const tracer = new Tracer({ serviceName: 'job-scheduler', captureHTTPsRequests: false });

type Annotations = Readonly<Record<string, string | number | boolean | undefined>>;

/** Instruments an AWS SDK v3 client (its requests become subsegments) when tracing is on. */
export function traceClient<T>(client: T): T {
  return tracer.isTracingEnabled() ? tracer.captureAWSv3Client(client) : client;
}

/** Annotates the invocation's current (sub)segment. */
export function annotateTrace(annotations: Annotations): void {
  if (!tracer.isTracingEnabled()) return;
  for (const [key, value] of Object.entries(annotations)) if (value !== undefined) tracer.putAnnotation(key, value);
}

/** Runs `work` in a subsegment of its own, annotated; only runs it when tracing is off. */
export async function inSubsegment<T>(name: string, annotations: Annotations, work: () => Promise<T>): Promise<T> {
  if (!tracer.isTracingEnabled()) return work();
  return (await tracer.provider.captureAsyncFunc(name, async (subsegment) => {
    for (const [key, value] of Object.entries(annotations)) if (value !== undefined) subsegment?.addAnnotation(key, value);
    try {
      return await work();
    } catch (error) {
      if (error instanceof Error) subsegment?.addError(error);
      throw error;
    } finally {
      subsegment?.close();
    }
  })) as T;
}
