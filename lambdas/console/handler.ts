// The console function: the web console's files, bundled beside this handler in console/ (lib/console.ts).
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { consoleFilesIn, serveConsole } from './adapter';

const files = consoleFilesIn(path.join(__dirname, 'console'), { readdirSync, readFileSync });

export const handler = (event: APIGatewayProxyEventV2): Promise<APIGatewayProxyStructuredResultV2> => {
  const answer = serveConsole(files, event.requestContext.http.method, event.rawPath);
  return Promise.resolve({
    statusCode: answer.statusCode,
    headers: answer.headers,
    body: typeof answer.body === 'string' ? answer.body : Buffer.from(answer.body).toString('utf8'),
    isBase64Encoded: false,
  });
};
