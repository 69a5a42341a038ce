// The OpenAPI 3.1 document, generated from the product registry, the zod schemas and the error
// registry. Nothing here is written by hand that a schema already says.
import { z } from 'zod';
import { errorRegistry, type ErrorCode } from '../../contract/errors.ts';
import { envelopeSchema } from '../../contract/envelope.ts';
import { errorEnvelopeSchema, productListSchema } from '../../contract/schemas.ts';
import { cancelRequestSchema, jobStatusSchema } from '../../contract/job-schemas.ts';
import { jobPagePaths, jobPageSchemas } from '../../contract/page-schemas.ts';
import { changePaths, changeSchemas } from '../../contract/change-schemas.ts';
import { monitorPaths, monitorSchemas } from '../../contract/monitor-schemas.ts';
import { exportPaths } from '../../contract/export-schemas.ts';
import { suppressionPaths, suppressionSchemas } from '../../contract/suppression-schemas.ts';
import { inventoryPaths, inventorySchemas } from '../../contract/inventory-schemas.ts';
import { describeApi } from './openapi-description.ts';
import type { ProductDefinition } from '../../products/kit/product-contract.ts';
import { jsonSchema, type Json } from '../../contract/json-schema.ts';

const AUTH: ErrorCode[] = [
  'authentication_required',
  'insufficient_scope',
  'rate_limit_exceeded',
  'service_unavailable',
  'internal_error',
];
const WRITE: ErrorCode[] = [
  ...AUTH,
  'idempotency_key_required',
  'invalid_request',
  'payload_too_large',
  'unsupported_media_type',
  'capability_rate_limit_exceeded',
  'idempotency_key_conflict',
  'idempotency_request_in_progress',
  'capability_unavailable',
];
const ACTIVE: ErrorCode[] = [
  'active_authorization_required',
  'responsible_use_required',
  'active_permission_required',
  'approved_target_scope_required',
];
const CREDIT: ErrorCode[] = ['monthly_credit_limit_exceeded', 'insufficient_credits'];

export function productErrorCodes(def: ProductDefinition): ErrorCode[] {
  const codes = [...WRITE];
  if (def.activeWork) codes.push(...ACTIVE);
  if (def.mode === 'async') codes.push(...CREDIT);
  if (def.check) codes.push('scan_credit_budget_invalid');
  if (def.id.startsWith('scan.')) codes.push('scan_profile_unavailable');
  return codes;
}

function errorResponses(codes: ErrorCode[]): Json {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const c of new Set(codes)) {
    const st = errorRegistry[c].status;
    byStatus.set(st, [...(byStatus.get(st) ?? []), c]);
  }
  const out: Json = {};
  for (const [status, list] of [...byStatus].sort((a, b) => a[0] - b[0])) {
    out[String(status)] = {
      description: list.join(', '),
      'x-error-codes': list,
      headers: list.some((c) => errorRegistry[c].retryAfter !== 'never')
        ? { 'Retry-After': { schema: { type: 'integer', minimum: 1 }, description: 'Seconds to wait' } }
        : undefined,
      content: { 'application/json': { schema: { $ref: '#/components/schemas/ErrorEnvelope' } } },
    };
  }
  return out;
}

const idempotencyHeader = {
  name: 'Idempotency-Key',
  in: 'header',
  required: true,
  description: '1-255 visible ASCII characters (0x21-0x7E), scoped to the API key, kept 24 h.',
  schema: { type: 'string', minLength: 1, maxLength: 255, pattern: '^[\\x21-\\x7e]+$' },
};

export function buildOpenApi(products: readonly ProductDefinition[]): Json {
  const schemas: Json = {
    ErrorEnvelope: jsonSchema(errorEnvelopeSchema, 'output'),
    ProductList: jsonSchema(productListSchema, 'output'),
    JobStatus: jsonSchema(jobStatusSchema, 'output'),
    CancelRequest: jsonSchema(cancelRequestSchema, 'input'),
  };
  const paths: Json = {};
  for (const def of products) {
    const name = def.id
      .split('.')
      .slice(0, 2)
      .map((s) => s[0]!.toUpperCase() + s.slice(1))
      .join('');
    schemas[`${name}Request`] = jsonSchema(def.input, 'input');
    let success: Json;
    if (def.mode === 'sync') {
      schemas[`${name}Envelope`] = jsonSchema(
        envelopeSchema(def.id, def.resultSchema ?? z.record(z.string(), z.unknown())),
        'output',
      );
      success = {
        '200': {
          description: 'Completed or partial product envelope',
          content: { 'application/json': { schema: { $ref: `#/components/schemas/${name}Envelope` } } },
        },
      };
    } else {
      let description = 'Accepted: the job status (queued); poll links.self.';
      if (def.resultSchema) {
        // The terminal job's `result` is this product's envelope (CONTRACT §7).
        schemas[`${name}Envelope`] = jsonSchema(envelopeSchema(def.id, def.resultSchema, { job: true }), 'output');
        description += ` Once terminal, the job's \`result\` is a ${name}Envelope (components.schemas).`;
      }
      success = {
        '202': { description, content: { 'application/json': { schema: { $ref: '#/components/schemas/JobStatus' } } } },
      };
    }
    paths[def.path] = {
      post: {
        operationId: def.id,
        summary: def.title,
        'x-product': def.id,
        'x-scopes': [def.scope],
        security: [{ bearer: [] }],
        parameters: [idempotencyHeader],
        requestBody: {
          required: true,
          content: { 'application/json': { schema: { $ref: `#/components/schemas/${name}Request` } } },
        },
        responses: { ...success, ...errorResponses(productErrorCodes(def)) },
      },
    };
  }
  paths['/v2/products'] = {
    get: {
      operationId: 'listProducts',
      summary: 'Products and their readiness',
      security: [{ bearer: [] }],
      responses: {
        '200': {
          description: 'Product list',
          content: { 'application/json': { schema: { $ref: '#/components/schemas/ProductList' } } },
        },
        ...errorResponses(AUTH),
      },
    },
  };
  const jobRefParam = {
    name: 'job_ref',
    in: 'path',
    required: true,
    schema: { type: 'string' },
    description: 'Opaque job reference (job_…)',
  };
  paths['/v2/jobs/{job_ref}'] = {
    get: {
      operationId: 'getJob',
      summary: 'Job status',
      'x-scopes': ['scan:read'],
      security: [{ bearer: [] }],
      parameters: [jobRefParam],
      responses: {
        '200': {
          description: 'Job status',
          content: { 'application/json': { schema: { $ref: '#/components/schemas/JobStatus' } } },
        },
        ...errorResponses([...AUTH, 'job_not_found']),
      },
    },
  };
  paths['/v2/jobs/{job_ref}/cancel'] = {
    post: {
      operationId: 'cancelJob',
      summary: 'Cancel a job (idempotent; a terminal job is returned unchanged)',
      'x-scopes': ['scan:create'],
      security: [{ bearer: [] }],
      parameters: [jobRefParam, idempotencyHeader],
      requestBody: {
        required: false,
        content: { 'application/json': { schema: { $ref: '#/components/schemas/CancelRequest' } } },
      },
      responses: {
        '202': {
          description: 'The job status after the request',
          content: { 'application/json': { schema: { $ref: '#/components/schemas/JobStatus' } } },
        },
        ...errorResponses([
          ...AUTH,
          'idempotency_key_required',
          'invalid_request',
          'payload_too_large',
          'unsupported_media_type',
          'idempotency_key_conflict',
          'idempotency_request_in_progress',
          'job_not_found',
        ]),
      },
    },
  };
  paths['/v2/openapi.json'] = {
    get: {
      operationId: 'openapi',
      summary: 'This document',
      security: [],
      responses: {
        '200': { description: 'OpenAPI 3.1 document', content: { 'application/json': { schema: { type: 'object' } } } },
      },
    },
  };
  Object.assign(paths, jobPagePaths(errorResponses));
  Object.assign(schemas, jobPageSchemas());
  Object.assign(paths, changePaths(errorResponses));
  Object.assign(schemas, changeSchemas());
  Object.assign(paths, monitorPaths(errorResponses));
  Object.assign(schemas, monitorSchemas());
  Object.assign(paths, exportPaths(errorResponses));
  Object.assign(paths, suppressionPaths(errorResponses));
  Object.assign(schemas, suppressionSchemas());
  Object.assign(paths, inventoryPaths(errorResponses));
  Object.assign(schemas, inventorySchemas());
  return {
    openapi: '3.1.0',
    info: { title: 'LSS Public Lookup and Scan Service', version: '2.0.0', description: describeApi(products) },
    servers: [{ url: '/' }],
    security: [{ bearer: [] }],
    paths,
    components: {
      schemas,
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'Workspace application key (lsk_…)' } },
    },
    'x-error-registry': Object.fromEntries(
      Object.entries(errorRegistry).map(([code, s]) => [
        code,
        { status: s.status, retryable: s.retryable, message: s.message },
      ]),
    ),
  };
}
