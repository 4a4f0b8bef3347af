// The payload bucket's layout (decision 0162), shared by the store (payload-store.ts) and the stack's
// lifecycle rules and grants (lib/storage.ts, lib/scheduler-stack.ts), which must not drift apart.

/** The tag the lifecycle rule expires objects by: a payload no item names any more. */
export const SUPERSEDED_TAG = { Key: 'superseded', Value: 'true' } as const;
/** Jobs' payloads: `jobs/<tenant>/<job>/<uuid>.json`. */
export const JOB_PAYLOAD_PREFIX = 'jobs/';
/** Triggers' payloads, a run's own: `runs/<tenant>/<job>/<uuid>.json`, expired by the lifecycle rule. */
export const RUN_PAYLOAD_PREFIX = 'runs/';
