// The client restates the few answer and request shapes that the use cases (lambdas/app) define, so
// that its declarations need only the domain and zod (decision 0101). These checks are types:
// `npm run typecheck` fails when a restated shape stops being the backend's own.
import type { z } from 'zod';
import { describe, expectTypeOf, it } from 'vitest';
import type * as client from '../../clients/types';
import type { Claim } from '../../clients/worker-client';
import type { ClaimedRun, heartbeatRun } from '../../lambdas/app/external-workers';
import type { backfillSchema, bulkReplaySchema, claimSchema, previewSchema, pauseSchema, skipSchema, triggerSchema } from '../../lambdas/api/schemas';
import type { backfillView } from '../../lambdas/app/backfills';
import type { HealthReport } from '../../lambdas/app/health';
import type { CreateJobResult, getJob, JobView, previewSchedule } from '../../lambdas/app/jobs';
import type { replayDeadRuns } from '../../lambdas/app/runs';
import type { NotificationView, WorkflowRunNotificationView } from '../../lambdas/app/run-notifications';
import type { Page } from '../../lambdas/store/page';
import type { listWorkflows, WorkflowDetail, WorkflowView } from '../../lambdas/app/workflows';
import type { workflowSpecSchema } from '../../lambdas/domain/workflow';

describe('the client types are the backend types', () => {
  it('answers', () => {
    expectTypeOf<client.JobView>().toEqualTypeOf<JobView>();
    expectTypeOf<client.JobDetail>().toEqualTypeOf<Awaited<ReturnType<typeof getJob>>>();
    expectTypeOf<client.Page<client.Run>>().toEqualTypeOf<Page<client.Run>>();
    expectTypeOf<Omit<client.CreatedJob, 'replayed'>>().toEqualTypeOf<Omit<CreateJobResult, 'created'>>();
    expectTypeOf<client.HealthReport>().toEqualTypeOf<HealthReport>();
    expectTypeOf<client.Backfill>().toEqualTypeOf<ReturnType<typeof backfillView>>();
    expectTypeOf<client.PreviewResult>().toEqualTypeOf<Awaited<ReturnType<typeof previewSchedule>>>();
    expectTypeOf<client.BulkReplayResult>().toEqualTypeOf<Omit<Awaited<ReturnType<typeof replayDeadRuns>>, 'replayedFrom'>>();
    expectTypeOf<client.WorkflowView>().toEqualTypeOf<WorkflowView>();
    expectTypeOf<client.WorkflowDetail>().toEqualTypeOf<WorkflowDetail>();
    expectTypeOf<client.Page<client.WorkflowSummary>>().toEqualTypeOf<Awaited<ReturnType<typeof listWorkflows>>>();
    expectTypeOf<client.HeartbeatResult>().toEqualTypeOf<Awaited<ReturnType<typeof heartbeatRun>>>();
    expectTypeOf<client.RunNotification>().toEqualTypeOf<NotificationView>();
    expectTypeOf<client.WorkflowRunNotification>().toEqualTypeOf<WorkflowRunNotificationView>();
    // Payload and checkpoint are the worker's own types in the client (unknown in the backend).
    expectTypeOf<Omit<Claim, 'payload' | 'checkpoint'>>().toEqualTypeOf<Omit<ClaimedRun, 'payload' | 'checkpoint'>>();
    expectTypeOf<Claim>().toExtend<ClaimedRun>();
    expectTypeOf<ClaimedRun>().toExtend<Claim>();
  });

  it('requests', () => {
    expectTypeOf<client.TriggerRequest>().toEqualTypeOf<z.input<typeof triggerSchema>>();
    expectTypeOf<client.PreviewRequest>().toEqualTypeOf<z.input<typeof previewSchema>>();
    expectTypeOf<client.PauseRequest>().toEqualTypeOf<z.input<typeof pauseSchema>>();
    expectTypeOf<client.SkipRequest>().toEqualTypeOf<z.input<typeof skipSchema>>();
    expectTypeOf<client.BackfillRequest>().toEqualTypeOf<z.input<typeof backfillSchema>>();
    expectTypeOf<client.BulkReplayRequest>().toEqualTypeOf<z.input<typeof bulkReplaySchema>>();
    expectTypeOf<client.WorkflowSpecInput>().toEqualTypeOf<z.input<typeof workflowSpecSchema>>();
    expectTypeOf<client.ClaimRequest>().toEqualTypeOf<z.input<typeof claimSchema>>();
  });
});
