// The OpenAPI 3.1 document of the API, generated from the route table and its zod schemas with
// zod's own JSON Schema output (OpenAPI 3.1 schemas are JSON Schema 2020-12): no second copy of any
// schema. Served at GET /v1/openapi.json and written to docs/openapi.json (`npm run openapi`).
import { z } from 'zod';
import type { RouteSpec } from './routes';
import { PATH_PARAMS, ROUTES } from './routes';
import { PROBLEM_TYPES, gatewayErrorSchema, problemSchema, problemTypeOf } from './responses';
import type { ProblemStatus } from './responses';

type JsonSchema = Record<string, unknown>;

export const API_VERSION = '1.0.0';

/**
 * Problems any authenticated route may answer with, besides its own: every request's body is read
 * (a route that takes none accepts none or `{}`), so an oversized one is a 413 and one of another
 * media type a 415 on any route.
 */
const COMMON_PROBLEMS: readonly ProblemStatus[] = [400, 404, 413, 415, 429, 500, 503];

class SchemaCollector {
  readonly components: Record<string, JsonSchema> = {};

  /** The JSON Schema of `schema` as a request (`input`) or a response (`output`) reads it. */
  convert(schema: z.ZodType, io: 'input' | 'output'): JsonSchema {
    const converted: JsonSchema = z.toJSONSchema(schema, { io, target: 'draft-2020-12', unrepresentable: 'any', cycles: 'ref', reused: 'inline' });
    delete converted.$schema;
    const defs = (converted.$defs ?? {}) as Record<string, JsonSchema>;
    delete converted.$defs;
    const id = z.globalRegistry.get(schema)?.id;
    if (typeof id === 'string' && defs[id] === undefined) defs[id] = converted;
    // Named schemas (`.meta({ id })`) become components. The same name with another shape (the
    // request's side of a schema with defaults) is suffixed with its side.
    const names = new Map(Object.keys(defs).map((name) => [name, name]));
    for (let pass = 0; pass < 2; pass += 1) {
      let renamed = false;
      for (const [name, placed] of names) {
        const existing = this.components[placed];
        if (existing !== undefined && JSON.stringify(existing) !== JSON.stringify(rewriteRefs(stripId(defs[name] ?? {}), names))) {
          names.set(name, `${name}${io === 'input' ? 'Input' : 'Output'}`);
          renamed = true;
        }
      }
      if (!renamed) break;
    }
    for (const [name, placed] of names) this.components[placed] = rewriteRefs(stripId(defs[name] ?? {}), names) as JsonSchema;
    return typeof id === 'string' && converted.$ref === undefined
      ? { $ref: `#/components/schemas/${names.get(id) ?? id}` }
      : (rewriteRefs(stripId(converted), names) as JsonSchema);
  }

  /**
   * `schema` itself where it is a reference to a component: a named schema (`.meta({ id })`)
   * converts to a bare `$ref`, with no `properties` to read its fields from.
   */
  resolve(schema: JsonSchema): JsonSchema {
    const ref = schema.$ref;
    const prefix = '#/components/schemas/';
    if (typeof ref !== 'string' || !ref.startsWith(prefix)) return schema;
    const target = this.components[ref.slice(prefix.length)];
    return target === undefined ? schema : this.resolve(target);
  }
}

function rewriteRefs(value: unknown, names: ReadonlyMap<string, string>): unknown {
  if (Array.isArray(value)) return value.map((child) => rewriteRefs(child, names));
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value).map(([key, child]) => {
        if (key === '$ref' && typeof child === 'string' && child.startsWith('#/$defs/')) {
          const name = child.slice('#/$defs/'.length);
          return [key, `#/components/schemas/${names.get(name) ?? name}`];
        }
        return [key, rewriteRefs(child, names)];
      }),
    );
  }
  return value;
}

function stripId(schema: JsonSchema): JsonSchema {
  const { id: _id, ...rest } = schema;
  return rest;
}

const problemResponseName = (status: ProblemStatus): string => `Problem${status}`;

function operation(collector: SchemaCollector, operationId: string, route: RouteSpec): Record<string, unknown> {
  const parameters: Record<string, unknown>[] = [];
  for (const name of [...route.path.matchAll(/\{(\w+)\}/g)].map((match) => match[1] ?? '')) {
    parameters.push({ name, in: 'path', required: true, schema: collector.convert((PATH_PARAMS as Record<string, z.ZodType>)[name] ?? z.string(), 'input') });
  }
  if (route.query) {
    // A named query schema converts to a `$ref`: its fields are the component's.
    const query = collector.resolve(collector.convert(route.query, 'input'));
    const required = new Set((query.required as string[] | undefined) ?? []);
    for (const [name, schema] of Object.entries((query.properties ?? {}) as Record<string, JsonSchema>)) {
      const { description, ...rest } = schema;
      parameters.push({ name, in: 'query', required: required.has(name), ...(description ? { description } : {}), schema: rest });
    }
  }
  for (const name of route.headers ?? []) {
    parameters.push(
      name === 'traceparent'
        ? {
            name,
            in: 'header',
            required: false,
            description:
              'A W3C trace context: the runs the request makes join its trace, and their targets receive it. An invalid one is not refused: a new trace is started instead, as the specification says.',
            schema: { type: 'string' },
          }
        : name === 'If-Match'
          ? {
              name,
              in: 'header',
              required: false,
              description: 'The job version the change expects (its `version`); a mismatch is a 412.',
              schema: { type: 'string', pattern: '^\\s*(W/)?"?\\d{1,12}"?\\s*$' },
            }
          : {
              name,
              in: 'header',
              required: false,
              description: 'Makes the create safe to retry: the same key and body within 24 h answer with the first result.',
              schema: { type: 'string', pattern: '^[\\x21-\\x7e]{1,128}$' },
            },
    );
  }
  const responses: Record<string, unknown> = {};
  for (const [status, response] of Object.entries(route.responses) as [string, RouteSpec['responses'][200]][]) {
    if (!response) continue;
    responses[status] = {
      description: response.description,
      ...(response.headers
        ? { headers: Object.fromEntries(Object.entries(response.headers).map(([name, description]) => [name, { description, schema: { type: 'string' } }])) }
        : {}),
      ...(response.schema
        ? { content: { 'application/json': { schema: collector.convert(response.schema, 'output') } } }
        : route.public
          ? { content: { 'application/json': { schema: { type: 'object' } } } }
          : {}),
    };
  }
  if (!route.public) {
    for (const status of [...new Set([...COMMON_PROBLEMS, ...(route.problems ?? [])])].sort())
      responses[String(status)] = { $ref: `#/components/responses/${problemResponseName(status)}` };
    responses['401'] = { $ref: '#/components/responses/Unauthorized' };
    responses['403'] = { $ref: '#/components/responses/Forbidden' };
  }
  return {
    operationId,
    tags: [route.tag],
    summary: route.summary,
    ...(route.description ? { description: route.description } : {}),
    ...(route.public ? { security: [] } : {}),
    ...(parameters.length > 0 ? { parameters } : {}),
    ...(route.body
      ? {
          requestBody: {
            required: route.body.required,
            content: {
              'application/json': { schema: collector.convert(route.body.schema, 'input'), ...(route.example !== undefined ? { example: route.example } : {}) },
            },
          },
        }
      : {}),
    responses: Object.fromEntries(Object.entries(responses).sort(([a], [b]) => a.localeCompare(b))),
  };
}

/** The whole document, built afresh. */
export function buildOpenApiDocument(): Record<string, unknown> {
  const collector = new SchemaCollector();
  const paths: Record<string, Record<string, unknown>> = {};
  for (const [operationId, route] of Object.entries(ROUTES as Record<string, RouteSpec>)) {
    (paths[route.path] ??= {})[route.method.toLowerCase()] = operation(collector, operationId, route);
  }
  const problem = collector.convert(problemSchema, 'output');
  const gatewayError = collector.convert(gatewayErrorSchema, 'output');
  const problemResponses = Object.fromEntries(
    Object.entries<{ title: string; meaning: string }>(PROBLEM_TYPES).map(([status, { title, meaning }]) => [
      problemResponseName(Number(status) as ProblemStatus),
      {
        description: `${title}: ${meaning} Problem type \`${problemTypeOf(title)}\`.`,
        ...(status === '429' || status === '503'
          ? { headers: { 'Retry-After': { description: 'Seconds to wait before trying again', schema: { type: 'string' } } } }
          : {}),
        content: {
          'application/problem+json': {
            schema: problem,
            example: {
              type: problemTypeOf(title),
              title,
              status: Number(status),
              detail: meaning,
              errors: status === '400' ? [{ path: 'schedule.kind', message: 'Invalid input' }] : [],
            },
          },
        },
      },
    ]),
  );
  return {
    openapi: '3.1.0',
    info: {
      title: 'Job scheduler API',
      version: API_VERSION,
      description:
        'Schedule HTTP, SQS, Lambda, EventBridge and external-worker jobs (now, after a delay, at an instant, on a cron schedule) and follow their runs. The readable guide is docs/api.md.',
      license: { name: 'MIT', identifier: 'MIT' },
    },
    jsonSchemaDialect: 'https://json-schema.org/draft/2020-12/schema',
    security: [{ apiKey: [] }],
    tags: [...new Set(Object.values(ROUTES as Record<string, RouteSpec>).map((route) => route.tag))].map((name) => ({ name })),
    paths,
    components: {
      securitySchemes: {
        apiKey: {
          type: 'http',
          scheme: 'bearer',
          description:
            'An API key of the tenant (the operator issues it: `npm run admin -- tenant create <tenant>` with the first, `npm run admin -- key issue <tenant>` for more), sent as `Authorization: Bearer <key>`.',
        },
      },
      responses: {
        ...problemResponses,
        Unauthorized: {
          description: `No Authorization header: API Gateway answers \`{ "message": "Unauthorized" }\`. An unknown or revoked key (the authorizer lets it through marked, decision 0023) is a problem \`${problemTypeOf('Unauthorized')}\`.`,
          headers: { 'WWW-Authenticate': { description: '`Bearer`', schema: { type: 'string' } } },
          content: { 'application/json': { schema: gatewayError, example: { message: 'Unauthorized' } }, 'application/problem+json': { schema: problem } },
        },
        Forbidden: {
          description: "API Gateway's own refusal, if its authorizer ever denied a request: it denies none (an unknown or revoked key is a 401).",
          content: { 'application/json': { schema: gatewayError, example: { message: 'Forbidden' } } },
        },
      },
      schemas: Object.fromEntries(Object.entries(collector.components).sort(([a], [b]) => a.localeCompare(b))),
    },
  };
}

let cached: string | undefined;

/** The document as served: built once per process. */
export function openApiJson(): string {
  cached ??= JSON.stringify(buildOpenApiDocument());
  return cached;
}

/** docs/openapi.json as `npm run openapi` writes it (indented, with a final newline). */
export function openApiFileText(): string {
  return `${JSON.stringify(buildOpenApiDocument(), null, 2)}\n`;
}
