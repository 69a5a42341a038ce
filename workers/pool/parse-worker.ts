// The piscina worker: each named export is a pool task (selected with run(payload, { name })).
export { parseCertificate, parseSpf } from './parse-tasks.ts';
export { assessWebEvidence } from '../../src/products/web/assess.ts';
