// The web console in the deployed stack: a small function that serves its three built files on the
// HTTP API's /console routes, beside /v1 (decision 0105). The routes have no authorizer (the files
// are public); every figure the console shows comes from /v1 with the key the user signs in with.
import { Duration } from 'aws-cdk-lib';
import type { HttpApi } from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpMethod } from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import { NagSuppressions } from 'cdk-nag';
import { Construct } from 'constructs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { CONSOLE_PATH } from '../lambdas/console/adapter';
import { SchedulerFunction } from './scheduler-function';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

export interface SchedulerConsoleProps {
  readonly httpApi: HttpApi;
  readonly logRetentionDays: number;
}

export class SchedulerConsole extends Construct {
  readonly function: SchedulerFunction;
  /** The console's address: the API's endpoint and /console/. */
  readonly url: string;

  constructor(scope: Construct, id: string, props: SchedulerConsoleProps) {
    super(scope, id);
    this.function = new SchedulerFunction(this, 'Function', {
      entry: 'console',
      // Not "Job scheduler …": those are the functions that carry the scheduler's settings.
      description: 'Web console of the job scheduler (static files)',
      timeout: Duration.seconds(5),
      memorySize: 256,
      environment: {},
      logRetentionDays: props.logRetentionDays,
      // esbuild builds the console (console/build.ts) into the bundle's console/ when the function is bundled.
      addToBundle: (outputDir) => [
        `"${path.join(root, 'node_modules', '.bin', 'tsx')}" "${path.join(root, 'scripts', 'build-console.ts')}" "${outputDir}/console"`,
      ],
    });
    const integration = new HttpLambdaIntegration('ConsoleIntegration', this.function.fn);
    const routes = props.httpApi.addRoutes({ path: CONSOLE_PATH, methods: [HttpMethod.GET, HttpMethod.HEAD], integration });
    routes.push(...props.httpApi.addRoutes({ path: `${CONSOLE_PATH}/{proxy+}`, methods: [HttpMethod.GET, HttpMethod.HEAD], integration }));
    for (const route of routes) {
      NagSuppressions.addResourceSuppressions(route, [
        {
          id: 'AwsSolutions-APIG4',
          reason:
            'The console routes serve its static files only (HTML, script, style): public by design, as any sign-in page; all data comes from the /v1 routes behind the API key authorizer.',
        },
      ]);
    }
    this.url = `${props.httpApi.apiEndpoint}${CONSOLE_PATH}/`;
  }
}
