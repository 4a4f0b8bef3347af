// `npm run test:deploy`: the real app (bin/scheduler.ts) deployed with `cdk deploy` into MiniStack,
// a tenant made with `npm run admin` as docs/operations.md says, and the deployed API driven
// through its URL: every route, runs through the real worker, ticker and authorizer functions,
// retries to DEAD and replays, the DLQ and its redrive, the lambda and eventbridge targets and a
// revoked key. Prints a table (scenario, result, start lag) and exits non-zero if any failed.
// What MiniStack needs and why: docs/decisions/0077-deploy-test-in-ministack.md.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { CreateEventBusCommand, EventBridgeClient, PutRuleCommand, PutTargetsCommand } from '@aws-sdk/client-eventbridge';
import { CreateRoleCommand, IAMClient } from '@aws-sdk/client-iam';
import { CreateFunctionCommand, GetFunctionCommand, LambdaClient } from '@aws-sdk/client-lambda';
import { CreateQueueCommand, GetQueueAttributesCommand, ReceiveMessageCommand, SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { DEFAULT_TUNING } from '../../lambdas/config/config';
import type { SchedulerStackConfig } from '../../lib/config';
import type { MiniStack } from '../../scripts/local/ministack';
import { startMiniStack } from '../../scripts/local/ministack';
import { zipFiles } from '../integration/support/zip';
import type { Api, HttpsTarget } from './support';
import type { Proxy } from './support';
import { apiClient, check, eventually, freePortIn, makeCertificate, run, startHttpsTarget, startSecureTransportProxy, stopChildren } from './support';

type RunBody = Record<string, any>;

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const ACCOUNT = '000000000000';
const REGION = 'us-east-1';
const STACK = 'JobScheduler';
// `--auth`: MiniStack with AUTH=true, which authorizes every call by the caller's IAM policies, so
// that a grant the stack lacks fails a scenario (the functions call with their own roles' sessions).
const AUTH = process.argv.includes('--auth');

// The function and the bus jobs target; listed in the stack's `targets`, so created before the deploy.
const FUNCTION_NAME = 'deploy-test-invoices';
const BUS_NAME = 'deploy-test-bus';
const FUNCTION_CODE = `
const fs = require('node:fs');
exports.handler = async (event) => {
  fs.appendFileSync(process.env.RECORD_FILE, JSON.stringify(event) + '\\n');
  return { done: true };
};
`;

interface Row {
  readonly scenario: string;
  result: 'pass' | 'FAIL';
  startLag: string;
  detail: string;
}
const rows: Row[] = [];
const started = Date.now();
const log = (line: string) =>
  console.log(
    `${AUTH ? '[auth] ' : ''}[${Math.round((Date.now() - started) / 1000)
      .toString()
      .padStart(4)} s] ${line}`,
  );

async function scenario(name: string, body: (row: Row) => Promise<void>): Promise<void> {
  const row: Row = { scenario: name, result: 'pass', startLag: '', detail: '' };
  rows.push(row);
  try {
    await body(row);
    log(`pass: ${name}`);
  } catch (error) {
    row.result = 'FAIL';
    row.detail = error instanceof Error ? error.message : String(error);
    log(`FAIL: ${name}: ${row.detail}`);
  }
}

const lagOf = (runBody: RunBody): number => Date.parse(runBody.startedAt as string) - Date.parse(runBody.availableAt as string);
const lags = (runs: RunBody[]): string => runs.map((r) => `${lagOf(r)} ms`).join(', ');

async function main(): Promise<number> {
  const dir = mkdtempSync(path.join(tmpdir(), 'deploy-test-'));
  let ministack: MiniStack | undefined;
  let proxy: Proxy | undefined;
  let target: HttpsTarget | undefined;
  let deployed = false;
  // Each pass in a range of its own, so that the two can run at once (test/deploy/both.ts).
  const port = process.env.DEPLOY_TEST_PORT ? Number(process.env.DEPLOY_TEST_PORT) : AUTH ? await freePortIn(4750, 4798) : await freePortIn(4700, 4749);
  // Under AUTH everything, the functions' calls too, reaches MiniStack through a proxy that marks it
  // https (what aws:SecureTransport is resolved from; see startSecureTransportProxy).
  if (AUTH) proxy = await startSecureTransportProxy(await freePortIn(port + 1, 4799), port);
  const endpoint = proxy?.url ?? `http://127.0.0.1:${port}`;
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    AWS_ENDPOINT_URL: endpoint,
    AWS_ACCESS_KEY_ID: 'test',
    AWS_SECRET_ACCESS_KEY: 'test',
    AWS_REGION: REGION,
    AWS_DEFAULT_REGION: REGION,
    CDK_DEFAULT_ACCOUNT: ACCOUNT,
    CDK_DEFAULT_REGION: REGION,
    AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
    CDK_DISABLE_VERSION_CHECK: 'true',
  };
  Object.assign(process.env, {
    AWS_ACCESS_KEY_ID: 'test',
    AWS_SECRET_ACCESS_KEY: 'test',
    AWS_REGION: REGION,
    AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
  });
  const cdk = (args: string[], timeoutMs: number) =>
    run(process.execPath, [path.join(root, 'node_modules', 'aws-cdk', 'bin', 'cdk'), ...args, '--output', path.join(dir, 'cdk.out')], {
      env,
      cwd: root,
      timeoutMs,
    });
  try {
    log(`MiniStack on port ${port}${AUTH ? ` with AUTH=true, reached through ${endpoint}` : ''}`);
    // The functions call the endpoint named here (the proxy under AUTH), never one the caller exported.
    ministack = await startMiniStack(port, { processGroup: true, env: { AWS_ENDPOINT_URL: endpoint, ...(AUTH ? { AUTH: 'true' } : {}) } });
    const running = ministack;
    stopOnInterrupt = () => running.stop();
    const lambda = new LambdaClient({ endpoint, region: REGION });
    const sqs = new SQSClient({ endpoint, region: REGION });
    const events = new EventBridgeClient({ endpoint, region: REGION });
    const iam = new IAMClient({ endpoint, region: REGION });

    // The targets jobs call: an HTTPS server with a CA of its own, a function and a bus.
    const certificate = makeCertificate(dir);
    target = await startHttpsTarget(certificate.cert, certificate.key);
    const recordFile = path.join(dir, 'function-events.jsonl');
    writeFileSync(recordFile, '');
    // Under AUTH a function's role must exist (it runs with that role's session); this one needs no grant.
    await iam.send(
      new CreateRoleCommand({
        RoleName: FUNCTION_NAME,
        AssumeRolePolicyDocument: JSON.stringify({
          Version: '2012-10-17',
          Statement: [{ Effect: 'Allow', Principal: { Service: 'lambda.amazonaws.com' }, Action: 'sts:AssumeRole' }],
        }),
      }),
    );
    const fn = await lambda.send(
      new CreateFunctionCommand({
        FunctionName: FUNCTION_NAME,
        Runtime: 'nodejs20.x',
        Role: `arn:aws:iam::${ACCOUNT}:role/${FUNCTION_NAME}`,
        Handler: 'index.handler',
        Timeout: 10,
        Code: { ZipFile: zipFiles({ 'index.js': FUNCTION_CODE }) },
        Environment: { Variables: { RECORD_FILE: recordFile } },
      }),
    );
    await eventually(
      'the target function is active',
      async () => (await lambda.send(new GetFunctionCommand({ FunctionName: FUNCTION_NAME }))).Configuration?.State,
      (state) => state === 'Active',
      60_000,
    );
    const bus = await events.send(new CreateEventBusCommand({ Name: BUS_NAME }));
    const eventsQueue = await sqs.send(new CreateQueueCommand({ QueueName: 'deploy-test-events' }));
    const eventsQueueArn = (await sqs.send(new GetQueueAttributesCommand({ QueueUrl: eventsQueue.QueueUrl, AttributeNames: ['QueueArn'] }))).Attributes
      ?.QueueArn;
    await events.send(new PutRuleCommand({ Name: 'deploy-test-all', EventBusName: BUS_NAME, EventPattern: JSON.stringify({ source: ['deploy.test'] }) }));
    await events.send(new PutTargetsCommand({ Rule: 'deploy-test-all', EventBusName: BUS_NAME, Targets: [{ Id: 'queue', Arn: eventsQueueArn }] }));

    // The stack's settings: targets on the loopback network (allowed private targets, trusted through
    // the extra CA bundle), the function and bus allowed, shorter waits where the tuning allows.
    const config: Partial<SchedulerStackConfig> = {
      allowPrivateTargets: true,
      logRetentionDays: 1,
      targets: { lambdaFunctionArns: [fn.FunctionArn as string], eventBusArns: [bus.EventBusArn as string] },
      // Far runs from 60 s on (the ticker releases them), failed messages back after 2 s (5 receives
      // to the DLQ in seconds).
      tuning: { ...DEFAULT_TUNING, nearHorizonSeconds: 60, failedMessageRetrySeconds: 2 },
    };
    const configFile = path.join(dir, 'stack-config.json');
    writeFileSync(configFile, JSON.stringify(config));

    log('cdk bootstrap');
    const bootstrap = await cdk(['bootstrap', `aws://${ACCOUNT}/${REGION}`], 300_000);
    check(bootstrap.code === 0, `cdk bootstrap failed:\n${bootstrap.stderr.slice(-3000)}`);
    log('cdk deploy');
    const outputsFile = path.join(dir, 'outputs.json');
    const deploy = await cdk(
      [
        'deploy',
        STACK,
        '--require-approval',
        'never',
        '--outputs-file',
        outputsFile,
        '-c',
        'ministack=true',
        '-c',
        `configFile=${configFile}`,
        '-c',
        `targetCaBundle=${certificate.certFile}`,
      ],
      900_000,
    );
    deployed = true;
    check(deploy.code === 0, `cdk deploy failed:\n${deploy.stderr.slice(-3000)}`);
    const outputs = (JSON.parse(readFileSync(outputsFile, 'utf8')) as Record<string, Record<string, string>>)[STACK]!;
    log(`deployed: ${outputs.ApiUrl}`);

    // As docs/operations.md tells an operator.
    const admin = (args: string[]) =>
      run(process.execPath, [path.join(root, 'node_modules', 'tsx', 'dist', 'cli.mjs'), 'scripts/admin.ts', ...args, '--jobs-table', outputs.JobsTableName!], {
        env,
        cwd: root,
        timeoutMs: 120_000,
      });
    const tenant = await admin(['tenant', 'create', 'deploy-test', '--name', 'Deploy test']);
    check(tenant.code === 0, `npm run admin -- tenant create failed: ${tenant.stderr}`);
    const { apiKey, keyId } = JSON.parse(tenant.stdout) as { apiKey: string; keyId: string };
    const api = apiClient(outputs.ApiUrl!, endpoint, apiKey);
    await scenario('admin: tenant create with --jobs-table; its key is accepted', async (row) => {
      const listed = await eventually(
        'GET /v1/jobs with the new key',
        () => api('GET', '/v1/jobs'),
        (answer) => answer.status === 200,
        60_000,
      );
      row.detail = `key ${keyId}, GET /v1/jobs ${listed.status}`;
    });

    const runsOf = async (jobId: string): Promise<RunBody[]> =>
      (((await api('GET', `/v1/jobs/${jobId}/runs?limit=100`)).body?.items ?? []) as RunBody[]).sort((a, b) => String(a.runId).localeCompare(String(b.runId)));
    const create = async (body: Record<string, unknown>, headers: Record<string, string> = {}): Promise<string> => {
      const created = await api('POST', '/v1/jobs', body, headers);
      check(created.status === 201, `POST /v1/jobs: ${created.status} ${JSON.stringify(created.body)}`);
      return created.body.job.jobId as string;
    };
    const http = (name: string, schedule: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
      name,
      type: 'deploy-test',
      schedule,
      target: { kind: 'http', url: `${target!.url}/${name}` },
      payload: { scenario: name },
      ...extra,
    });
    const succeeded = (jobId: string, count: number, timeoutMs: number) =>
      eventually(
        `${count} run(s) of ${jobId} SUCCEEDED`,
        () => runsOf(jobId),
        (runs) => runs.filter((r) => r.status === 'SUCCEEDED').length >= count,
        timeoutMs,
        2_000,
      );

    await Promise.all([
      scenario('run now through the worker function', async (row) => {
        const jobId = await create(http('run-now', { kind: 'now' }));
        const runs = await succeeded(jobId, 1, 120_000);
        check(
          target!.calls.some((call) => call.path === '/run-now'),
          'the target was not called',
        );
        row.startLag = lags(runs.slice(0, 1));
      }),
      scenario('large payload: 300 KB through the payload bucket (decision 0162)', async (row) => {
        const payload = { scenario: 'large-payload', blob: 'x'.repeat(300_000) };
        const jobId = await create(http('large-payload', { kind: 'now' }, { payload }));
        const runs = await succeeded(jobId, 1, 120_000);
        const call = target!.calls.find((c) => c.path === '/large-payload');
        check(call !== undefined && call.body === JSON.stringify(payload), `the target got ${call ? call.bodyBytes : 'no'} bytes, not the payload`);
        const shown = await api('GET', `/v1/jobs/${jobId}`);
        check(
          shown.body.payloadStored?.bytes === JSON.stringify(payload).length && shown.body.payload?.blob === payload.blob,
          `GET /v1/jobs/${jobId}: ${JSON.stringify(shown.body.payloadStored)}`,
        );
        row.startLag = lags(runs.slice(0, 1));
        row.detail = `${call.bodyBytes} bytes delivered`;
      }),
      scenario('workflow: each step started by the worker that ran its parent (decision 0179)', async (row) => {
        const step = (id: string, dependsOn: string[] = []) => ({ id, target: { kind: 'http', url: `${target!.url}/wf-${id}` }, dependsOn });
        const created = await api('POST', '/v1/workflows', {
          name: 'deploy-chain',
          type: 'deploy-test',
          steps: [step('a'), step('b', ['a']), step('c', ['b'])],
        });
        check(created.status === 201, `POST /v1/workflows: ${created.status} ${JSON.stringify(created.body)}`);
        const started = await api('POST', `/v1/workflows/${created.body.workflowId}/runs`);
        check(started.status === 202, `POST /v1/workflows/{id}/runs: ${started.status} ${JSON.stringify(started.body)}`);
        const done = await eventually(
          'the workflow run SUCCEEDED',
          () => api('GET', `/v1/workflows/${created.body.workflowId}/runs/${started.body.workflowRunId}`),
          (answer) => answer.body?.status === 'SUCCEEDED' || answer.body?.status === 'FAILED',
          120_000,
          2_000,
        );
        check(done.body.status === 'SUCCEEDED', `the workflow run ended ${done.body.status}: ${JSON.stringify(done.body.steps)}`);
        // A step handed on is put already leased: it was never queued apart from its start.
        const after = await Promise.all(['b', 'c'].map(async (id) => (await api('GET', `/v1/runs/${done.body.steps[id].runId}`)).body as RunBody));
        check(
          after.every((run) => run.status === 'SUCCEEDED' && run.startedAt === run.enqueuedAt),
          `steps b and c were not started by their parent's worker: ${JSON.stringify(after.map((run) => [run.status, run.enqueuedAt, run.startedAt, run.leaseOwner]))}`,
        );
        row.detail = `b and c leased at their write by ${String(after[0]?.leaseOwner)}`;
      }),
      scenario('delay 60 s', async (row) => {
        const createdAt = Date.now();
        const jobId = await create(http('delay-60', { kind: 'delay', seconds: 60 }));
        const [done] = await succeeded(jobId, 1, 240_000);
        const call = target!.calls.find((c) => c.path === '/delay-60');
        check(call !== undefined && call.at >= createdAt + 59_000, `called too early: ${call ? call.at - createdAt : 'never'} ms after create`);
        row.startLag = lags([done!]);
      }),
      scenario('cron * * * * *: two occurrences', async (row) => {
        const jobId = await create(http('cron-every-minute', { kind: 'cron', expression: '* * * * *', timezone: 'UTC' }));
        const runs = await succeeded(jobId, 2, 240_000);
        await api('DELETE', `/v1/jobs/${jobId}`);
        row.startLag = lags(runs.filter((r) => r.status === 'SUCCEEDED').slice(0, 2));
      }),
      scenario('far at: released by the ticker that the Scheduler fires', async (row) => {
        const at = new Date(Date.now() + 150_000).toISOString();
        const jobId = await create(http('far-at', { kind: 'at', at }));
        const [first] = await runsOf(jobId);
        check(first?.status === 'SCHEDULED', `expected SCHEDULED in the time index, got ${first?.status}`);
        const [done] = await succeeded(jobId, 1, 330_000);
        // Released by a tick, not at its create: queued long after it was written.
        const queuedAfter = Date.parse(String(done?.enqueuedAt)) - Date.parse(String(first.createdAt));
        check(queuedAfter >= 30_000, `queued ${queuedAfter} ms after its create: not by a tick`);
        const health = await api('GET', '/v1/health');
        check(typeof health.body?.ticker?.lastCompletedAt === 'string', `no tick completed: ${JSON.stringify(health.body?.ticker)}`);
        row.startLag = lags([done!]);
        row.detail = `ticker last report: ${JSON.stringify(health.body.ticker.lastReport)}`;
      }),
      scenario('failing target: retried to DEAD, replayed one by one and in bulk', async (row) => {
        target!.failing.add('/failing');
        const policy = { retryPolicy: { maxAttempts: 2, initialDelaySeconds: 1, maxDelaySeconds: 2 } };
        const one = await create(http('failing-one', { kind: 'now' }, policy));
        const bulk = await create(http('failing-bulk', { kind: 'now' }, policy));
        const deadOf = (jobId: string) =>
          eventually(
            `2 attempts of ${jobId}, the last DEAD`,
            () => runsOf(jobId),
            (runs) => runs.length === 2 && runs.every((r) => r.status === 'FAILED' || r.status === 'DEAD') && runs.some((r) => r.status === 'DEAD'),
            180_000,
            2_000,
          );
        const [oneRuns, bulkRuns] = await Promise.all([deadOf(one), deadOf(bulk)]);
        const dead = await api('GET', '/v1/dead-runs?limit=100');
        check(dead.status === 200, `GET /v1/dead-runs: ${dead.status}`);
        const deadIds = (dead.body.items as RunBody[]).map((r) => r.runId as string);
        const deadOne = oneRuns.find((r) => r.status === 'DEAD')!;
        check(deadIds.includes(deadOne.runId as string), 'the dead run is not listed');
        target!.failing.delete('/failing');
        const replay = await api('POST', `/v1/runs/${deadOne.runId}/replay`);
        check(replay.status === 202, `replay: ${replay.status} ${JSON.stringify(replay.body)}`);
        const again = await api('POST', `/v1/runs/${deadOne.runId}/replay`);
        check(again.status === 409, `a second replay: ${again.status}`);
        const bulkReplay = await api('POST', '/v1/dead-runs/replay', { jobId: bulk });
        check(bulkReplay.status === 202, `bulk replay: ${bulkReplay.status} ${JSON.stringify(bulkReplay.body)}`);
        const [oneAfter, bulkAfter] = await Promise.all([succeeded(one, 1, 120_000), succeeded(bulk, 1, 120_000)]);
        row.startLag = lags([...oneRuns, ...bulkRuns].filter((r) => r.startedAt));
        row.detail = `replays succeeded: ${oneAfter.filter((r) => r.status === 'SUCCEEDED').length + bulkAfter.filter((r) => r.status === 'SUCCEEDED').length}`;
      }),
      scenario('poison message: DLQ after 5 receives, moved back by npm run dlq:redrive', async (row) => {
        const poison = `not a dispatch message ${Date.now()}`;
        await sqs.send(new SendMessageCommand({ QueueUrl: outputs.DispatchQueueUrl, MessageBody: poison }));
        const inDlq = await eventually(
          'the poison message in the DLQ',
          async () =>
            (await sqs.send(new GetQueueAttributesCommand({ QueueUrl: outputs.DispatchDlqUrl, AttributeNames: ['ApproximateNumberOfMessages'] }))).Attributes
              ?.ApproximateNumberOfMessages,
          (count) => Number(count) >= 1,
          180_000,
          2_000,
        );
        const peek = await sqs.send(
          new ReceiveMessageCommand({
            QueueUrl: outputs.DispatchDlqUrl,
            MaxNumberOfMessages: 1,
            VisibilityTimeout: 0,
            MessageSystemAttributeNames: ['ApproximateReceiveCount'],
          }),
        );
        const receives = Number(peek.Messages?.[0]?.Attributes?.ApproximateReceiveCount ?? 0);
        check(peek.Messages?.[0]?.Body === poison, 'the DLQ holds another message');
        // 5 by the worker's event source mapping, and this look at it.
        check(receives >= 6, `received ${receives} times before the DLQ (5 by the worker, and this look)`);
        const redrive = await run(
          process.execPath,
          [
            path.join(root, 'node_modules', 'tsx', 'dist', 'cli.mjs'),
            'scripts/redrive-dlq.ts',
            '--from',
            outputs.DispatchDlqUrl!,
            '--to',
            outputs.DispatchQueueUrl!,
          ],
          { env, cwd: root, timeoutMs: 120_000 },
        );
        check(redrive.code === 0 && /moved 1 message/.test(redrive.stdout), `dlq:redrive: ${redrive.stdout} ${redrive.stderr}`);
        const left = await sqs.send(
          new GetQueueAttributesCommand({
            QueueUrl: outputs.DispatchDlqUrl,
            AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
          }),
        );
        const stillThere = Number(left.Attributes?.ApproximateNumberOfMessages ?? 0) + Number(left.Attributes?.ApproximateNumberOfMessagesNotVisible ?? 0);
        check(stillThere === 0, `the DLQ still holds ${stillThere} message(s) after the redrive`);
        row.detail = `DLQ held ${inDlq}, received ${receives} times (5 + one look); redrive: ${redrive.stdout.trim()}`;
      }),
      scenario('lambda target', async (row) => {
        const jobId = await create({
          name: 'lambda-target',
          type: 'invoices',
          schedule: { kind: 'now' },
          target: { kind: 'lambda', functionArn: fn.FunctionArn },
          payload: { invoice: 42 },
        });
        const runs = await succeeded(jobId, 1, 120_000);
        const received = readFileSync(recordFile, 'utf8')
          .split('\n')
          .filter(Boolean)
          .map((line) => JSON.parse(line) as { job: { jobId: string } });
        check(
          received.some((event) => event.job.jobId === jobId),
          'the function did not receive the envelope',
        );
        row.startLag = lags(runs.slice(0, 1));
      }),
      scenario('eventbridge target', async (row) => {
        const jobId = await create({
          name: 'eventbridge-target',
          type: 'events',
          schedule: { kind: 'now' },
          target: { kind: 'eventbridge', eventBusName: BUS_NAME, detailType: 'InvoiceDue', source: 'deploy.test' },
          payload: { invoice: 7 },
        });
        const runs = await succeeded(jobId, 1, 120_000);
        const delivered = await eventually(
          "the event on the rule's queue",
          async () =>
            (await sqs.send(new ReceiveMessageCommand({ QueueUrl: eventsQueue.QueueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1 }))).Messages ?? [],
          (messages) => messages.some((message) => message.Body?.includes(jobId)),
          60_000,
        );
        row.startLag = lags(runs.slice(0, 1));
        row.detail = `${delivered.length} event(s) on the rule's queue`;
      }),
      scenario('routes: every route answers as the HTTP contract says', (row) => routes(api, target!, row)),
      scenario('console: its page and files on /console, without a key (decision 0105)', async (row) => {
        const page = await api('GET', '/console/', undefined, { authorization: '' });
        check(
          page.status === 200 && String(page.headers['content-type']).startsWith('text/html') && String(page.body).includes('src="/console/app.js"'),
          `GET /console/: ${page.status} ${String(page.body).slice(0, 200)}`,
        );
        check(String(page.headers['content-security-policy']).includes("connect-src 'self'"), 'no content security policy');
        const script = await api('GET', '/console/app.js', undefined, { authorization: '' });
        check(script.status === 200 && String(script.headers['content-type']).startsWith('text/javascript'), `GET /console/app.js: ${script.status}`);
        const missing = await api('GET', '/console/nothing.js', undefined, { authorization: '' });
        check(missing.status === 404, `GET /console/nothing.js: ${missing.status}`);
        row.detail = `${String(script.body).length} characters of script`;
      }),
      scenario('a revoked key is refused once the authorizer cache expires', async (row) => {
        const issued = await admin(['key', 'issue', 'deploy-test']);
        check(issued.code === 0, `key issue: ${issued.stderr}`);
        const second = JSON.parse(issued.stdout) as { apiKey: string; keyId: string };
        const accepted = await eventually(
          'the new key accepted',
          () => api('GET', '/v1/jobs', undefined, {}, second.apiKey),
          (a) => a.status === 200,
          60_000,
        );
        check(accepted.status === 200, 'not accepted');
        const revoked = await admin(['key', 'revoke', 'deploy-test', second.keyId]);
        check(revoked.code === 0, `key revoke: ${revoked.stderr}`);
        const revokedAt = Date.now();
        await eventually(
          'the revoked key refused',
          () => api('GET', '/v1/jobs', undefined, {}, second.apiKey),
          (a) => a.status === 401 || a.status === 403,
          240_000,
          5_000,
        );
        row.detail = `refused ${Math.round((Date.now() - revokedAt) / 1000)} s after the revoke (authorizer cache 60 s, key cache 2 min at most)`;
      }),
    ]);
  } catch (error) {
    rows.push({ scenario: 'deploy', result: 'FAIL', startLag: '', detail: error instanceof Error ? error.message : String(error) });
    log(`FAIL: ${error instanceof Error ? error.message : String(error)}`);
  } finally {
    if (deployed && ministack) {
      log('cdk destroy');
      const destroy = await cdk(['destroy', STACK, '--force'], 600_000);
      rows.push({
        scenario: 'cdk destroy',
        result: destroy.code === 0 ? 'pass' : 'FAIL',
        startLag: '',
        detail: destroy.code === 0 ? '' : destroy.stderr.slice(-500),
      });
    }
    await target?.close();
    stopChildren();
    await ministack?.stop();
    await proxy?.close();
    rmSync(dir, { recursive: true, force: true });
  }
  printTable();
  return rows.some((row) => row.result === 'FAIL') ? 1 : 0;
}

/** Every API route once, with the answers the HTTP contract gives (docs/operations.md). */
async function routes(api: Api, target: HttpsTarget, row: Row): Promise<void> {
  const seen: string[] = [];
  const expect = async (what: string, answer: Promise<{ status: number; body: any; headers: Record<string, unknown> }>, status: number) => {
    const got = await answer;
    check(got.status === status, `${what}: ${got.status}, not ${status}: ${JSON.stringify(got.body)?.slice(0, 300)}`);
    seen.push(`${what} ${status}`);
    return got;
  };
  // Hours ahead whatever the time of day: this job only has to exist.
  const body = {
    name: 'routes',
    type: 'routes',
    schedule: { kind: 'cron', expression: `0 ${(new Date().getUTCHours() + 6) % 24} * * *`, timezone: 'UTC' },
    target: { kind: 'http', url: `${target.url}/routes` },
    payload: { v: 1 },
  };
  const key = { 'idempotency-key': `routes-${Date.now()}` };
  const created = await expect('POST /v1/jobs', api('POST', '/v1/jobs', body, key), 201);
  const replayed = await expect('POST /v1/jobs (idempotent replay)', api('POST', '/v1/jobs', body, key), 201);
  check(replayed.headers['idempotent-replayed'] === 'true' && replayed.body.job.jobId === created.body.job.jobId, 'the replay is not the first answer');
  const jobId = created.body.job.jobId as string;
  const list = await expect('GET /v1/jobs', api('GET', '/v1/jobs?limit=100'), 200);
  check(
    (list.body.items as RunBody[]).some((job) => job.jobId === jobId),
    'the job is not listed',
  );
  const got = await expect('GET /v1/jobs/{id}', api('GET', `/v1/jobs/${jobId}`), 200);
  const version = String(got.body.job?.version ?? got.body.version);
  await expect('PATCH If-Match current', api('PATCH', `/v1/jobs/${jobId}`, { payload: { v: 2 } }, { 'if-match': version }), 200);
  await expect('PATCH If-Match stale', api('PATCH', `/v1/jobs/${jobId}`, { payload: { v: 3 } }, { 'if-match': version }), 412);
  await expect('POST pause', api('POST', `/v1/jobs/${jobId}/pause`), 200);
  await expect('POST resume', api('POST', `/v1/jobs/${jobId}/resume`), 200);
  const triggered = await expect('POST trigger', api('POST', `/v1/jobs/${jobId}/trigger`), 202);
  await expect('GET runs', api('GET', `/v1/jobs/${jobId}/runs`), 200);
  await expect('GET /v1/runs/{id}', api('GET', `/v1/runs/${triggered.body.run.runId}`), 200);
  // The run's notifications: none (its job asks for none), and so none to send again.
  await expect('GET /v1/runs/{id}/notifications', api('GET', `/v1/runs/${triggered.body.run.runId}/notifications`), 200);
  await expect('POST …/notifications/{event}/resend (none)', api('POST', `/v1/runs/${triggered.body.run.runId}/notifications/dead/resend`), 404);
  // A run far enough ahead to cancel before it starts.
  const later = await expect(
    'POST /v1/jobs (delay 600 s)',
    api('POST', '/v1/jobs', { ...body, name: 'routes-cancel', schedule: { kind: 'delay', seconds: 600 } }),
    201,
  );
  const cancelled = await expect('POST cancel', api('POST', `/v1/runs/${later.body.job.nextRunId}/cancel`), 200);
  check(cancelled.body.run?.status === 'CANCELLED' || cancelled.body.status === 'CANCELLED', `cancel: ${JSON.stringify(cancelled.body).slice(0, 200)}`);
  await expect(
    'POST /v1/schedules/preview',
    api('POST', '/v1/schedules/preview', { schedule: { kind: 'cron', expression: '*/5 * * * *', timezone: 'UTC' }, count: 3 }),
    200,
  );
  await expect('GET /v1/health', api('GET', '/v1/health'), 200);
  await expect('GET /v1/runs', api('GET', '/v1/runs?limit=5'), 200);
  await expect('GET /v1/openapi.json (no key)', api('GET', '/v1/openapi.json', undefined, {}, ''), 200);

  // Schedules: a job's own preview, skips, a pause with a note and an end, a backfill.
  const preview = await expect('POST /v1/schedules/preview (jobId)', api('POST', '/v1/schedules/preview', { jobId, count: 2 }), 200);
  const nextFire = (preview.body.occurrences as { at: string }[])[0]?.at;
  const skipped = await expect('POST skip', api('POST', `/v1/jobs/${jobId}/skip`, { occurrences: [nextFire] }), 200);
  check((skipped.body.skippedOccurrences as string[]).includes(nextFire ?? ''), `skip: ${JSON.stringify(skipped.body).slice(0, 200)}`);
  const until = new Date(Date.now() + 3_600_000).toISOString();
  const paused = await expect('POST pause (note, until)', api('POST', `/v1/jobs/${jobId}/pause`, { note: 'deploy test', until }), 200);
  check(paused.body.pauseNote === 'deploy test' && paused.body.pausedUntil === until, `pause: ${JSON.stringify(paused.body).slice(0, 200)}`);
  await expect('POST resume (after the note)', api('POST', `/v1/jobs/${jobId}/resume`), 200);
  const hourly = await expect(
    'POST /v1/jobs (every hour, anchored 3 h back)',
    api('POST', '/v1/jobs', {
      ...body,
      name: 'routes-backfill',
      schedule: { kind: 'every', interval: 'PT1H', anchor: new Date(Date.now() - 3 * 3_600_000 - 60_000).toISOString() },
    }),
    201,
  );
  const anchor = Date.parse(hourly.body.job.schedule.anchor);
  const backfill = await expect(
    'POST backfill',
    api('POST', `/v1/jobs/${hourly.body.job.jobId}/backfill`, { from: new Date(anchor).toISOString(), to: new Date(anchor + 2 * 3_600_000).toISOString() }),
    202,
  );
  check(backfill.body.backfill.total === 2, `backfill: ${JSON.stringify(backfill.body).slice(0, 200)}`);
  await expect('GET backfill', api('GET', `/v1/jobs/${hourly.body.job.jobId}/backfills/${backfill.body.backfill.backfillId}`), 200);
  await expect('DELETE /v1/jobs/{id} (hourly)', api('DELETE', `/v1/jobs/${hourly.body.job.jobId}`), 200);

  // Signing secrets (KMS encrypt in the API, decrypt in the workers) and the audit trail.
  const secret = await expect('POST /v1/signing-secrets', api('POST', '/v1/signing-secrets', { graceSeconds: 0 }), 201);
  await expect('GET /v1/signing-secrets', api('GET', '/v1/signing-secrets'), 200);
  const audit = await expect('GET /v1/audit', api('GET', `/v1/audit?objectId=${jobId}`), 200);
  check(
    (audit.body.items as { action: string }[]).some((entry) => entry.action === 'job.skip'),
    `audit: ${JSON.stringify(audit.body).slice(0, 300)}`,
  );

  // A workflow of two steps through the real workers: created, versioned, run to its end. The first
  // answers a 100 KB result, stored in the payload bucket and read back for the second (decision 0163).
  const step = (id: string, dependsOn: string[] = []) => ({
    id,
    target: { kind: 'http', url: `${target.url}/${id === 'a' ? 'large-result' : 'large-step'}/workflow/${id}` },
    payload: { id },
    dependsOn,
  });
  const workflow = await expect('POST /v1/workflows', api('POST', '/v1/workflows', { name: 'deploy-workflow', steps: [step('a'), step('b', ['a'])] }), 201);
  const workflowId = workflow.body.workflowId as string;
  await expect('GET /v1/workflows/{id}', api('GET', `/v1/workflows/${workflowId}`), 200);
  await expect(
    'POST versions',
    api('POST', `/v1/workflows/${workflowId}/versions`, { name: 'deploy-workflow', steps: [step('a'), step('b', ['a'])] }, { 'if-match': '1' }),
    201,
  );
  const started = await expect('POST /v1/workflows/{id}/runs', api('POST', `/v1/workflows/${workflowId}/runs`), 202);
  const workflowRunId = started.body.workflowRunId as string;
  const done = await eventually(
    'the workflow run',
    () => api('GET', `/v1/workflows/${workflowId}/runs/${workflowRunId}`),
    (answer) => answer.body.status !== 'RUNNING',
    180_000,
  );
  check(done.body.status === 'SUCCEEDED', `workflow run: ${JSON.stringify(done.body).slice(0, 300)}`);
  seen.push('GET /v1/workflows/{id}/runs/{runId} 200');
  const stepB = target.calls.find((call) => call.path === '/large-step/workflow/b');
  const received = stepB ? (JSON.parse(stepB.body) as { results?: { a?: { blob?: string } } }) : undefined;
  check(received?.results?.a?.blob?.length === 100_000, `step b got ${stepB ? stepB.bodyBytes : 'no'} bytes, not step a's 100 KB result`);
  const stored = await api('GET', `/v1/runs/${String(done.body.steps.a.runId)}`);
  check(stored.body.resultStored?.bytes > 100_000 && stored.body.result?.blob?.length === 100_000, `step a's run: ${JSON.stringify(stored.body.resultStored)}`);
  await expect('GET /v1/workflows/{id}/runs', api('GET', `/v1/workflows/${workflowId}/runs?status=SUCCEEDED`), 200);
  await expect('POST cancel (a finished workflow run)', api('POST', `/v1/workflows/${workflowId}/runs/${workflowRunId}/cancel`), 409);
  await expect('POST retry (a succeeded workflow run)', api('POST', `/v1/workflows/${workflowId}/runs/${workflowRunId}/retry`), 409);
  // Its notifications: none (the workflow asks for none), and so none to send again.
  await expect('GET …/runs/{id}/notifications', api('GET', `/v1/workflows/${workflowId}/runs/${workflowRunId}/notifications`), 200);
  await expect(
    'POST …/runs/{id}/notifications/{event}/resend (none)',
    api('POST', `/v1/workflows/${workflowId}/runs/${workflowRunId}/notifications/failed/resend`),
    404,
  );
  const listed = await expect('GET /v1/workflows', api('GET', '/v1/workflows?limit=100'), 200);
  check(
    (listed.body.items as { workflowId: string }[]).some((item) => item.workflowId === workflowId),
    'the workflow is not listed',
  );
  // A scheduled workflow: its schedule paused and resumed.
  const scheduled = await expect(
    'POST /v1/workflows (scheduled)',
    api('POST', '/v1/workflows', { name: 'deploy-scheduled', schedule: { kind: 'every', interval: 'PT1H' }, steps: [step('a')] }),
    201,
  );
  await expect('POST /v1/workflows/{id}/pause', api('POST', `/v1/workflows/${scheduled.body.workflowId}/pause`), 200);
  await expect('POST /v1/workflows/{id}/resume', api('POST', `/v1/workflows/${scheduled.body.workflowId}/resume`), 200);
  await expect(
    'POST versions (the schedule removed)',
    api('POST', `/v1/workflows/${scheduled.body.workflowId}/versions`, { name: 'deploy-scheduled', steps: [step('a')] }, { 'if-match': '1' }),
    201,
  );
  // A scheduled workflow deleted: its schedule CANCELLED and its name free again (decision 0149).
  const doomed = await expect(
    'POST /v1/workflows (to delete)',
    api('POST', '/v1/workflows', { name: 'deploy-doomed', schedule: { kind: 'every', interval: 'PT1H' }, steps: [step('a')] }),
    201,
  );
  const deletedWorkflow = await expect('DELETE /v1/workflows/{id}', api('DELETE', `/v1/workflows/${doomed.body.workflowId}`), 200);
  check(
    typeof deletedWorkflow.body.deletedAt === 'string' && deletedWorkflow.body.scheduleState?.status === 'CANCELLED',
    `deleted workflow: ${JSON.stringify(deletedWorkflow.body).slice(0, 300)}`,
  );
  await expect('POST /v1/workflows/{id}/runs (deleted)', api('POST', `/v1/workflows/${doomed.body.workflowId}/runs`), 409);
  await expect('POST /v1/workflows (a deleted name again)', api('POST', '/v1/workflows', { name: 'deploy-doomed', steps: [step('a')] }), 201);
  await expect('DELETE /v1/signing-secrets/{id}', api('DELETE', `/v1/signing-secrets/${secret.body.secretId}`), 204);
  await expect('POST /v1/jobs (bad input)', api('POST', '/v1/jobs', { name: '' }), 400);
  await expect('GET /v1/jobs (no key)', api('GET', '/v1/jobs', undefined, {}, 'sk_not_a_key'), 401);

  // External workers: claim, heartbeat, complete; claim, fail.
  const external = {
    name: 'external',
    type: 'external-export',
    schedule: { kind: 'now' },
    target: { kind: 'external', leaseSeconds: 60 },
    retryPolicy: { maxAttempts: 1 },
  };
  await expect('POST /v1/jobs (external)', api('POST', '/v1/jobs', external), 201);
  await expect('POST /v1/jobs (external)', api('POST', '/v1/jobs', { ...external, name: 'external-2' }), 201);
  const claim = async () =>
    eventually(
      'a claim',
      () => api('POST', '/v1/workers/claim', { jobType: 'external-export', waitSeconds: 5, workerId: 'deploy-test' }),
      (a) => a.status === 200,
      120_000,
      1_000,
    );
  const first = await claim();
  seen.push('POST /v1/workers/claim 200');
  await expect('POST heartbeat', api('POST', `/v1/runs/${first.body.run.runId}/heartbeat`, { leaseToken: first.body.leaseToken, progress: { done: 1 } }), 200);
  await expect('POST complete', api('POST', `/v1/runs/${first.body.run.runId}/complete`, { leaseToken: first.body.leaseToken, result: { ok: true } }), 200);
  const second = await claim();
  await expect(
    'POST fail',
    api('POST', `/v1/runs/${second.body.run.runId}/fail`, {
      leaseToken: second.body.leaseToken,
      error: { code: 'EXPORT_FAILED', message: 'on purpose', retryable: false },
    }),
    200,
  );
  await expect('DELETE /v1/jobs/{id}', api('DELETE', `/v1/jobs/${jobId}`), 200);
  row.detail = `${seen.length} calls as expected`;
}

function printTable(): void {
  const widths = [Math.max(8, ...rows.map((r) => r.scenario.length)), 6, Math.max(9, ...rows.map((r) => r.startLag.length))];
  const line = (cells: string[]) => `| ${cells.map((cell, i) => cell.padEnd(widths[i] ?? 0)).join(' | ')} |`;
  console.log(`\nDeploy test${AUTH ? ' (IAM enforced: MiniStack AUTH=true)' : ''}: ${Math.round((Date.now() - started) / 1000)} s`);
  console.log(line(['scenario', 'result', 'start lag']));
  console.log(line(widths.map((w) => '-'.repeat(w))));
  for (const r of rows) console.log(line([r.scenario, r.result, r.startLag]));
  for (const r of rows.filter((candidate) => candidate.detail)) console.log(`- ${r.scenario}: ${r.detail}`);
}

/** MiniStack's stop once it runs: an interrupt stops its process group too. */
let stopOnInterrupt: (() => Promise<void>) | undefined;
process.once('SIGINT', () => {
  stopChildren();
  void (stopOnInterrupt?.() ?? Promise.resolve()).finally(() => process.exit(130));
});
process.exitCode = await main();
