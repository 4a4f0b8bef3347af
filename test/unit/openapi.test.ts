// The API's contract: docs/openapi.json is what the code generates, it is a valid OpenAPI 3.1
// document, and it describes every route the router serves.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { routerRoutes } from '../../lambdas/api/adapter';
import { buildOpenApiDocument, openApiFileText } from '../../lambdas/api/openapi';
import { PROBLEM_TYPES, problemTypeOf } from '../../lambdas/api/responses';
import type { RouteSpec } from '../../lambdas/api/route-spec';
import { ROUTES } from '../../lambdas/api/routes';

const root = path.join(__dirname, '..', '..');

describe('the OpenAPI document', () => {
  it('docs/openapi.json is current (run `npm run openapi` after changing a route or a schema)', () => {
    expect(readFileSync(path.join(root, 'docs', 'openapi.json'), 'utf8')).toBe(openApiFileText());
  });

  it('has every route of the router, with its method (the document served and the one in docs/)', () => {
    const committed = JSON.parse(readFileSync(path.join(root, 'docs', 'openapi.json'), 'utf8')) as { paths: Record<string, Record<string, unknown>> };
    for (const paths of [buildOpenApiDocument().paths as Record<string, Record<string, unknown>>, committed.paths]) {
      const missing = routerRoutes().filter(({ method, path: template }) => paths[template]?.[method.toLowerCase()] === undefined);
      expect(missing).toEqual([]);
    }
    expect(routerRoutes().length).toBeGreaterThan(20);
  });

  it("lists every field of each route's query schema as a query parameter (named schemas too)", () => {
    const document = buildOpenApiDocument() as { paths: Record<string, Record<string, { parameters?: { name: string; in: string }[] }>> };
    const routes = Object.values(ROUTES as Record<string, RouteSpec>).filter((route) => route.query !== undefined);
    expect(routes.length).toBeGreaterThan(5);
    for (const route of routes) {
      const where = `${route.method} ${route.path}`;
      expect(route.query, where).toBeInstanceOf(z.ZodObject);
      const fields = Object.keys((route.query as z.ZodObject).shape).sort();
      expect(fields.length, where).toBeGreaterThan(0);
      const parameters = document.paths[route.path]?.[route.method.toLowerCase()]?.parameters ?? [];
      const listed = parameters.filter((parameter) => parameter.in === 'query').map((parameter) => parameter.name);
      expect(listed.sort(), where).toEqual(fields);
    }
  });

  it('lists 413 and 415 on every authenticated route, bodiless ones too: every request body is read (sized, then typed)', () => {
    const document = buildOpenApiDocument() as { paths: Record<string, Record<string, { responses: Record<string, unknown>; security?: unknown[] }>> };
    const missing = Object.entries(document.paths).flatMap(([template, operations]) =>
      Object.entries(operations)
        .filter(([, operation]) => operation.security === undefined && !('413' in operation.responses && '415' in operation.responses))
        .map(([method]) => `${method.toUpperCase()} ${template}`),
    );
    // Before, only routes with a body listed them: POST /v1/runs/{runId}/cancel answered a 415 its entry did not name.
    expect(missing).toEqual([]);
  });

  it('is OpenAPI 3.1 whose schemas compile as JSON Schema 2020-12', () => {
    const document = buildOpenApiDocument();
    expect(document.openapi).toBe('3.1.0');
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    ajv.addFormat('date-time', true).addFormat('uri', true).addFormat('email', true);
    ajv.addSchema({ ...document, $id: 'openapi.json' });
    for (const name of Object.keys((document.components as { schemas: Record<string, unknown> }).schemas)) {
      expect(() => ajv.getSchema(`openapi.json#/components/schemas/${name}`), name).not.toThrow();
    }
  });

  it('names each problem by its type URN and secures every route but its own with the Bearer scheme', () => {
    const document = buildOpenApiDocument() as {
      paths: Record<string, Record<string, { security?: unknown[] }>>;
      components: { responses: Record<string, { description: string }>; securitySchemes: Record<string, unknown> };
    };
    for (const [status, { title }] of Object.entries(PROBLEM_TYPES)) {
      expect(document.components.responses[`Problem${status}`]?.description).toContain(problemTypeOf(title));
    }
    expect(document.components.securitySchemes.apiKey).toMatchObject({ type: 'http', scheme: 'bearer' });
    expect(document.paths['/v1/openapi.json']?.get?.security).toEqual([]);
    expect(document.paths['/v1/jobs']?.post?.security).toBeUndefined();
  });
});
