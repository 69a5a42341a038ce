// The routes the SDK calls. The product table is checked against the served OpenAPI document by
// test/unit/client-drift.test.ts (path, product id, 200 vs 202, the body's fields and which are
// required), so a product route cannot change without this file failing the build.
import type { AsyncKind, ProductKind, Requests, SyncKind } from './types.ts';

export interface ProductRoute<K extends ProductKind = ProductKind> {
  product: string;
  path: string;
  mode: K extends SyncKind ? 'sync' : 'async';
  /** Top-level body fields: required or optional. Keys are tied to the request type. */
  fields: Record<keyof Requests[K], 'required' | 'optional'>;
}

export const productRoutes: { [K in ProductKind]: ProductRoute<K> } = {
  mac: { product: 'lookup.mac.v1', path: '/v2/lookups/mac', mode: 'sync', fields: { value: 'required' } },
  phone: {
    product: 'lookup.phone.v1',
    path: '/v2/lookups/phone',
    mode: 'sync',
    fields: { value: 'required', defaultRegion: 'optional' },
  },
  ip: {
    product: 'lookup.ip.v1',
    path: '/v2/lookups/ip',
    mode: 'sync',
    fields: { value: 'required', includeContext: 'optional', reverseDns: 'optional' },
  },
  dns: { product: 'lookup.dns.v1', path: '/v2/lookups/dns', mode: 'sync', fields: { value: 'required' } },
  domain: { product: 'lookup.domain.v1', path: '/v2/lookups/domain', mode: 'async', fields: { value: 'required' } },
  mail: { product: 'lookup.mail.v1', path: '/v2/lookups/mail', mode: 'async', fields: { value: 'required' } },
  web: {
    product: 'lookup.web.v1',
    path: '/v2/lookups/web',
    mode: 'async',
    fields: { url: 'required', authorized: 'optional' },
  },
  scan: {
    product: 'scan.recursive.v1',
    path: '/v2/scans',
    mode: 'async',
    fields: { profile: 'required', target: 'required', options: 'required' },
  },
};

export const syncKinds: readonly SyncKind[] = ['mac', 'phone', 'ip', 'dns'];
export const asyncKinds: readonly AsyncKind[] = ['domain', 'mail', 'web', 'scan'];

/** The other paths. A job reference is opaque: it is only ever URL-encoded, never parsed. */
export const apiPaths = {
  status: (ref: string) => `/v2/jobs/${encodeURIComponent(ref)}`,
  cancel: (ref: string) => `/v2/jobs/${encodeURIComponent(ref)}/cancel`,
  results: (ref: string) => `/v2/jobs/${encodeURIComponent(ref)}/results`,
  findings: (ref: string) => `/v2/jobs/${encodeURIComponent(ref)}/findings`,
  changes: (ref: string) => `/v2/jobs/${encodeURIComponent(ref)}/changes`,
  export: (ref: string) => `/v2/jobs/${encodeURIComponent(ref)}/export`,
  report: (ref: string) => `/v2/jobs/${encodeURIComponent(ref)}/report`,
  object: (ref: string, objectId: string) =>
    `/v2/jobs/${encodeURIComponent(ref)}/objects/${encodeURIComponent(objectId)}`,
  products: () => '/v2/products',
  monitors: () => '/v2/monitors',
  monitor: (id: string) => `/v2/monitors/${encodeURIComponent(id)}`,
  deliveries: (id: string) => `/v2/monitors/${encodeURIComponent(id)}/deliveries`,
  redeliver: (id: string, eventId: string) =>
    `/v2/monitors/${encodeURIComponent(id)}/deliveries/${encodeURIComponent(eventId)}/redeliver`,
  suppressions: () => '/v2/suppressions',
  suppression: (id: string) => `/v2/suppressions/${encodeURIComponent(id)}`,
  inventory: () => '/v2/inventory',
  inventoryFindings: () => '/v2/inventory/findings',
} as const;

/** The OpenAPI operationIds the SDK implements besides the product routes (checked for drift). */
export const jobOperationIds = [
  'getJob',
  'cancelJob',
  'listJobResults',
  'listJobFindings',
  'getJobObject',
  'listJobChanges',
  'exportJob',
  'getJobReport',
  'listProducts',
] as const;

/** The monitor operations the SDK implements (CONTRACT §14; checked for drift like the job ones). */
export const monitorOperationIds = [
  'createMonitor',
  'listMonitors',
  'getMonitor',
  'updateMonitor',
  'deleteMonitor',
  'listMonitorDeliveries',
  'redeliverMonitorEvent',
] as const;

/** The suppression and inventory operations the SDK implements (CONTRACT §15-16; checked for drift). */
export const estateOperationIds = [
  'createSuppression',
  'listSuppressions',
  'getSuppression',
  'updateSuppression',
  'deleteSuppression',
  'listInventory',
  'listInventoryFindings',
] as const;
