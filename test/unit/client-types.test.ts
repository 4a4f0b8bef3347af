// The client restates the few answer and request shapes that the use cases (lambdas/app) define, so
// that its declarations need only the domain and zod (decision 0101). These checks are types:
// `npm run typecheck` fails when a restated shape stops being the backend's own.
import type { z } from 'zod';
import { describe, expectTypeOf, it } from 'vitest';
import type * as client from '../../clients/types';
import type { Claim } from '../../clients/worker-client';
import type { ClaimedRun, heartbeatRun } from '../../lambdas/app/external-workers';
import type {
  auditQuery,
  backfillSchema,
  bulkReplaySchema,
  claimSchema,
  deadQuery,
  healthQuery,
  issueSigningSecretSchema,
  listJobsQuery,
  listRunsQuery,
  listWorkflowRunsQuery,
  listWorkflowsQuery,
  previewSchema,
  pauseSchema,
  skipSchema,
  triggerSchema,
  workflowQuery,
} from '../../lambdas/api/schemas';
import type { IssuedSigningSecret } from '../../lambdas/app/signing-secrets';
import type { SigningSecretRecord } from '../../lambdas/store/signing-secrets';
import type { AuditPage } from '../../lambdas/store/audit-log';
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
    expectTypeOf<client.SigningSecret>().toEqualTypeOf<SigningSecretRecord>();
    expectTypeOf<client.IssuedSigningSecret>().toEqualTypeOf<IssuedSigningSecret>();
    expectTypeOf<client.Page<client.AuditEntry>>().toEqualTypeOf<AuditPage>();
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
    expectTypeOf<client.IssueSigningSecretRequest>().toEqualTypeOf<z.input<typeof issueSigningSecretSchema>>();
  });

  // A query string is text: the route's schema reads `limit` (and a workflow's `version`, health's
  // `minutes`) from a string, where the client takes a number, and the client takes several labels
  // as an array. The names are the same, and every other field takes the same values.
  it('queries', () => {
    type Textual = 'limit' | 'minutes' | 'version' | 'label';
    expectTypeOf<keyof client.ListJobsQuery>().toEqualTypeOf<keyof z.input<typeof listJobsQuery>>();
    expectTypeOf<Omit<client.ListJobsQuery, Textual>>().toExtend<Omit<z.input<typeof listJobsQuery>, Textual>>();
    expectTypeOf<Omit<z.input<typeof listJobsQuery>, Textual>>().toExtend<Omit<client.ListJobsQuery, Textual>>();
    expectTypeOf<client.ListJobsQuery['label']>().toExtend<z.input<typeof listJobsQuery>['label'] | readonly string[]>();

    expectTypeOf<keyof client.ListRunsQuery>().toEqualTypeOf<keyof z.input<typeof listRunsQuery>>();
    expectTypeOf<Omit<client.ListRunsQuery, Textual>>().toExtend<Omit<z.input<typeof listRunsQuery>, Textual>>();
    expectTypeOf<Omit<z.input<typeof listRunsQuery>, Textual>>().toExtend<Omit<client.ListRunsQuery, Textual>>();

    expectTypeOf<keyof client.DeadRunsQuery>().toEqualTypeOf<keyof z.input<typeof deadQuery>>();
    expectTypeOf<Omit<client.DeadRunsQuery, Textual>>().toExtend<Omit<z.input<typeof deadQuery>, Textual>>();
    expectTypeOf<Omit<z.input<typeof deadQuery>, Textual>>().toExtend<Omit<client.DeadRunsQuery, Textual>>();

    expectTypeOf<keyof client.AuditQuery>().toEqualTypeOf<keyof z.input<typeof auditQuery>>();
    expectTypeOf<Omit<client.AuditQuery, Textual>>().toExtend<Omit<z.input<typeof auditQuery>, Textual>>();
    expectTypeOf<Omit<z.input<typeof auditQuery>, Textual>>().toExtend<Omit<client.AuditQuery, Textual>>();

    expectTypeOf<keyof client.ListWorkflowsQuery>().toEqualTypeOf<keyof z.input<typeof listWorkflowsQuery>>();
    expectTypeOf<Omit<client.ListWorkflowsQuery, Textual>>().toExtend<Omit<z.input<typeof listWorkflowsQuery>, Textual>>();
    expectTypeOf<Omit<z.input<typeof listWorkflowsQuery>, Textual>>().toExtend<Omit<client.ListWorkflowsQuery, Textual>>();

    expectTypeOf<keyof client.ListWorkflowRunsQuery>().toEqualTypeOf<keyof z.input<typeof listWorkflowRunsQuery>>();
    expectTypeOf<Omit<client.ListWorkflowRunsQuery, Textual>>().toExtend<Omit<z.input<typeof listWorkflowRunsQuery>, Textual>>();
    expectTypeOf<Omit<z.input<typeof listWorkflowRunsQuery>, Textual>>().toExtend<Omit<client.ListWorkflowRunsQuery, Textual>>();

    expectTypeOf<keyof client.HealthQuery>().toEqualTypeOf<keyof z.input<typeof healthQuery>>();
    // `workflows.get(workflowId, version)`: the route's one query field.
    expectTypeOf<keyof z.input<typeof workflowQuery>>().toEqualTypeOf<'version'>();
  });
});
