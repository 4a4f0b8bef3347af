// Checks an API response against the OpenAPI document: the operation of its method and path, the
// response of its status (or the document's problem responses), and its body against that schema.
// The integration harness runs every response it receives through this (docs/api.md#the-contract).
import type { ValidateFunction } from 'ajv';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { buildOpenApiDocument } from '../../lambdas/api/openapi';

type Json = Record<string, unknown>;
interface ResponseObject {
  readonly $ref?: string;
  readonly content?: Record<string, { schema: Json }>;
}

const document = buildOpenApiDocument() as {
  paths: Record<string, Record<string, { responses: Record<string, ResponseObject> }>>;
  components: Json & { responses: Record<string, ResponseObject> };
};
const ajv = new Ajv2020({ strict: false, allErrors: true });
const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;
ajv
  .addFormat('date-time', DATE_TIME)
  .addFormat('date', /^\d{4}-\d{2}-\d{2}$/)
  .addFormat('uri', true)
  .addFormat('email', true);
const compiled = new Map<string, ValidateFunction>();
const templates = Object.keys(document.paths).map((template) => ({
  template,
  pattern: new RegExp(`^${template.replace(/\./g, '\\.').replace(/\{\w+\}/g, '[^/]+')}$`),
}));

function resolve(response: ResponseObject | undefined): ResponseObject | undefined {
  if (response?.$ref) return document.components.responses[response.$ref.slice('#/components/responses/'.length)];
  return response;
}

/** The mismatches of one response with the document (empty when it conforms). */
export function contractViolations(method: string, url: string, status: number, contentType: string | null, body: unknown): string[] {
  const path = new URL(url, 'http://localhost').pathname.replace(/\/+$/, '') || '/';
  const template = templates.find((candidate) => candidate.pattern.test(path))?.template;
  const operation = template ? document.paths[template]?.[method.toLowerCase()] : undefined;
  // Unknown routes and methods answer with the document's problems (404, 405).
  const response = resolve(operation?.responses[String(status)] ?? (status >= 400 ? document.components.responses[`Problem${status}`] : undefined));
  const where = `${method} ${path} → ${status}`;
  if (!response) return [`${where}: the document lists no such response`];
  const media = (contentType ?? '').split(';')[0]?.trim() ?? '';
  if (!response.content) return body === null ? [] : [`${where}: the document says no body, got one`];
  const schema = response.content[media]?.schema;
  if (!schema) return [`${where}: the document has no ${media || 'absent'} content (it has ${Object.keys(response.content).join(', ')})`];
  const key = `${where}|${media}`;
  let validate = compiled.get(key);
  if (!validate) {
    validate = ajv.compile({ ...schema, components: document.components });
    compiled.set(key, validate);
  }
  if (validate(body)) return [];
  return (validate.errors ?? []).map((error) => `${where}: ${error.instancePath || '(body)'} ${error.message ?? ''} ${JSON.stringify(error.params)}`);
}
