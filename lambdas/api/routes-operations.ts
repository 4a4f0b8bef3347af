// The other routes: dead runs, schedule previews, signing secrets, the audit trail, health and the contract.
import { auditQuery, bulkReplaySchema, deadQuery, healthQuery, issueSigningSecretSchema, previewSchema } from './schemas';
import {
  auditPageSchema,
  bulkReplayResponseSchema,
  healthReportSchema,
  issuedSigningSecretSchema,
  previewResponseSchema,
  runPageSchema,
  signingSecretListSchema,
} from './responses';
import type { RouteSpec } from './route-spec';

export const OPERATION_ROUTES = {
  listDeadRuns: {
    method: 'GET',
    path: '/v1/dead-runs',
    tag: 'Dead runs',
    summary: 'List dead runs',
    query: deadQuery,
    responses: { 200: { description: 'A page of dead runs, newest death first', schema: runPageSchema } },
  },
  replayDeadRuns: {
    method: 'POST',
    path: '/v1/dead-runs/replay',
    tag: 'Dead runs',
    summary: 'Replay dead runs in bulk',
    headers: ['traceparent'],
    body: { schema: bulkReplaySchema, required: false },
    responses: { 202: { description: 'What was replayed', schema: bulkReplayResponseSchema } },
    problems: [413, 415],
  },
  previewSchedule: {
    method: 'POST',
    path: '/v1/schedules/preview',
    tag: 'Schedules',
    summary: 'Preview the fire times of a schedule',
    body: { schema: previewSchema, required: true },
    responses: { 200: { description: 'The next fire times', schema: previewResponseSchema } },
    problems: [413, 415],
    example: { schedule: { kind: 'cron', expression: '*/15 9-17 * * MON-FRI', timezone: 'America/New_York' }, count: 3 },
  },
  issueSigningSecret: {
    method: 'POST',
    path: '/v1/signing-secrets',
    tag: 'Signing secrets',
    summary: 'Issue (or rotate) the webhook signing secret',
    description:
      'HTTP deliveries are signed (Standard Webhooks) with each live secret. The one this replaces keeps signing for graceSeconds, and those already in a grace period keep theirs, so a repeated issue cuts no grace short (graceSeconds 0 stops every other secret now). At most 5 sign at once: a rotation with a grace past that is a 409. The value is in this answer only (Cache-Control: no-store).',
    body: { schema: issueSigningSecretSchema, required: false },
    responses: { 201: { description: 'The new secret, with its value', schema: issuedSigningSecretSchema, headers: { 'Cache-Control': '`no-store`' } } },
    problems: [409, 413, 415],
    example: { graceSeconds: 86400 },
  },
  listSigningSecrets: {
    method: 'GET',
    path: '/v1/signing-secrets',
    tag: 'Signing secrets',
    summary: 'List the live signing secrets, without their values',
    responses: { 200: { description: 'The live secrets, newest first', schema: signingSecretListSchema } },
  },
  revokeSigningSecret: {
    method: 'DELETE',
    path: '/v1/signing-secrets/{secretId}',
    tag: 'Signing secrets',
    summary: 'Stop a signing secret at once',
    responses: { 204: { description: 'The secret no longer signs' } },
  },
  listAudit: {
    method: 'GET',
    path: '/v1/audit',
    tag: 'Audit',
    summary: 'What people changed: the audit trail, newest first',
    description:
      'Every change made through the API or the operator CLI, with who (the API key id), what, and the fields before and after. Filter by object and time range; entries are kept AUDIT_RETENTION_DAYS.',
    query: auditQuery,
    responses: { 200: { description: 'A page of audit entries', schema: auditPageSchema } },
  },
  checkHealth: {
    method: 'GET',
    path: '/v1/health',
    tag: 'Health',
    summary: 'Health of the scheduler, as the tenant sees it',
    query: healthQuery,
    responses: { 200: { description: 'The health report', schema: healthReportSchema } },
  },
  getOpenApi: {
    method: 'GET',
    path: '/v1/openapi.json',
    tag: 'Contract',
    summary: 'This document',
    public: true,
    responses: { 200: { description: 'The OpenAPI 3.1 document of this API' } },
  },
} as const satisfies Record<string, RouteSpec>;
